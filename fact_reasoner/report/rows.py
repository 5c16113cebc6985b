"""Result rows: read from JSONL files, grouped per assessor, restricted to common responses.

A result row is one JSON object per assessed response, as written by ``fact-reasoner`` or
``experiments/run_biographies.py``, with ``atoms: [{id, label, probability, prediction}]`` and
the per-record scores (``factuality_score``, ``f1_k``, ``k``, …). FR rows carry ``version``
(1/2/3); baseline rows carry ``assessor``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError


def assessor_name(row: dict[str, Any]) -> str:
    """``assessor`` when the row names one (baselines), else ``FR<version>``."""
    if row.get("assessor"):
        return str(row["assessor"])
    if row.get("version") is not None:
        return f"FR{row['version']}"
    return "unknown"


def tier_of(row: dict[str, Any]) -> str | None:
    """The rarity tier ``cat[0]`` of a FActScore row (``very rare`` … ``very freq``), if any."""
    cat = row.get("cat")
    return str(cat[0]) if isinstance(cat, (list, tuple)) and cat else None


def group_rows(named_rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """``(source name, row)`` pairs → ``{label: rows}``; the label is the assessor name, with the
    source name added when one assessor comes from several sources (e.g. two NLI backends)."""
    by_source: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for source, row in named_rows:
        by_source.setdefault((assessor_name(row), source), []).append(row)
    counts: dict[str, int] = {}
    for assessor, _ in by_source:
        counts[assessor] = counts.get(assessor, 0) + 1
    groups: dict[str, list[dict[str, Any]]] = {}
    for (assessor, source), rows in by_source.items():
        label = assessor if counts[assessor] == 1 else f"{assessor} [{source}]"
        groups[label] = rows
    return dict(sorted(groups.items(), key=lambda item: _assessor_order(item[0])))


def restrict_to_common(groups: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Keep only responses (by ``record_key``) present in every group, so that assessors are
    compared on the same responses (e.g. when a run was stopped before FR3 finished).
    Returns the restricted groups and how many distinct responses were left out."""
    keys = [{r.get("record_key") for r in rows} for rows in groups.values()]
    if not keys:
        return groups, 0
    common = set.intersection(*keys)
    every = set.union(*keys)
    return {label: [r for r in rows if r.get("record_key") in common] for label, rows in groups.items()}, len(
        every - common
    )


def _assessor_order(label: str) -> tuple[int, str]:
    order = {"FactScore": 0, "NLI-vote": 1, "FR1": 2, "FR2": 3, "FR3": 4}
    return (order.get(label.split(" [")[0], 9), label)


def read_rows(paths: Sequence[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """Rows of result JSONL files as ``(file stem, row)``; a bad line names file and line, a file
    without rows is an error (a report of nothing would look like a finished one). Each problem
    raises :class:`~fact_reasoner.errors.InputError` (with ``path`` and, for a line, ``line``)."""
    out = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(f"results file not found: {path}")
        if path.is_dir():
            raise InputError("a directory, not a results file", path=path)
        stem = path.name.removesuffix(".jsonl")
        found = False
        for number, raw_bytes in enumerate(path.read_bytes().split(b"\n"), start=1):
            if not raw_bytes.strip():
                continue
            try:
                row = json.loads(raw_bytes.decode("utf-8"))
            except UnicodeDecodeError as error:
                raise InputError(
                    f"not valid UTF-8 (byte {raw_bytes[error.start]:#04x})", path=path, line=number
                ) from None
            except json.JSONDecodeError as error:
                raise InputError(f"invalid JSON: {error.msg}", path=path, line=number) from None
            if not isinstance(row, dict) or not isinstance(row.get("atoms"), list):
                raise InputError("not a result row (no 'atoms' list)", path=path, line=number)
            out.append((stem, row))
            found = True
        if not found:
            raise InputError("no result rows (the file is empty): nothing to report", path=path)
    return out
