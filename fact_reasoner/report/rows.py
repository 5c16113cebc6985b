"""Result rows: read from JSONL files, grouped per assessor, restricted to common responses.

A result row is one JSON object per assessed response, as written by ``fact-reasoner`` or
``experiments/run_biographies.py``, with ``atoms: [{id, label, probability, prediction}]`` and
the per-record scores (``factuality_score``, ``f1_k``, ``k``, …). FR rows carry ``version``
(1/2/3); baseline rows carry ``assessor``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import RawRow, RecordError, read_json_values
from ..settings.fields import dotted


def assessor_name(row: dict[str, Any]) -> str:
    """``assessor`` when the row names one (the experiments' baselines), else the baseline
    ``pipeline`` that wrote it, else ``FR<version>``."""
    if row.get("assessor"):
        return str(row["assessor"])
    if row.get("pipeline"):
        return str(row["pipeline"])
    if row.get("version") is not None:
        return f"FR{row['version']}"
    return "unknown"


def tier_of(row: dict[str, Any]) -> str | None:
    """The rarity tier ``cat[0]`` of a FActScore row (``very rare`` … ``very freq``), if any."""
    cat = row.get("cat")
    return str(cat[0]) if isinstance(cat, (list, tuple)) and cat else None


def judge_of(row: dict[str, Any]) -> str | None:
    """The NLI judge a row was made with, from its ``settings``: the backend (``auto`` resolved
    to the one it stood for), with its model folder when one was given; None if unknown."""
    settings = row.get("settings")
    if not isinstance(settings, dict):
        return None
    models: dict[str, Any] = settings["models"] if isinstance(settings.get("models"), dict) else {}
    judge = models.get("nli_auto") if models.get("nli") == "auto" else models.get("nli")
    judge = judge or settings.get("nli_backend")  # experiments/run_biographies.py
    if judge is None:
        return None
    if models.get("nli_model"):
        judge = f"{judge} {Path(str(models['nli_model'])).name}"
    return str(judge)


#: settings shown as the judge, not among the settings that differ
_JUDGE_KEYS = ("models.nli", "models.nli_auto", "models.nli_model", "nli_backend")


#: how a judge's verdict on a passage reads ("cross-encoder: entails 0.88")
JUDGE_VERBS = {"entailment": "entails", "contradiction": "contradicts", "neutral": "neutral"}


def judges_said(judges: Mapping[str, Mapping[str, Any]]) -> str:
    """``cross-encoder: entails 0.58 · specialist: contradicts 0.85``: each panel judge's verdict
    on a passage (``failed`` for one that could not judge), as the terminal and the page show it."""
    return " · ".join(
        f"{name}: "
        + (
            "failed"
            if verdict.get("failed")
            else f"{JUDGE_VERBS.get(str(verdict.get('relation')), verdict.get('relation'))} "
            f"{float(verdict.get('probability', math.nan)):.2f}"
        )
        for name, verdict in judges.items()
    )


def panel_making(evidence: Mapping[str, Any]) -> str | None:
    """How a panel's figure on a passage follows from its judges' verdicts (the evidence's
    ``judges``, each with its distribution and, in a roles panel, what the rule read of it), in
    one clause, as the terminal and the page show it beside the judges' verdicts:

    - roles (:func:`~fact_reasoner.nli.panel.contradiction_first`): ``the panel's P(entailment)
      0.91 = (1 − c) × e = (1 − 0.03) × 0.94, with c = specialist's P(contradiction) 0.03 and e =
      cross-encoder's P(entailment) / (P(entailment) + P(neutral)) = 0.88 / (0.88 + 0.06) =
      0.94``, or ``the panel's P(contradiction) 0.71 = c, …``;
    - factors: the passage's factor is one judge's own verdict, and which.

    The figure is recomputed from the judges' numbers, for the label the panel gave (the
    evidence's ``judged`` where a later stage changed the relation), so the equation holds
    whatever the row shows beside it. None where no panel judged the passage, or its row keeps
    no distributions (written before they were kept)."""
    judges: Mapping[str, Mapping[str, Any]] = evidence.get("judges") or {}
    if not judges:
        return None
    if evidence.get("judge"):
        return f"each judge's verdict is a factor of its own, and this one is {evidence['judge']}'s"
    roles = {name: verdict.get("role") for name, verdict in judges.items()}
    if not all(roles.values()) or not all(verdict.get("probabilities") for verdict in judges.values()):
        return None
    label = evidence.get("judged") or evidence.get("relation")
    contradictions = [
        (name, float(v["probabilities"].get("contradiction", 0.0)))
        for name, v in judges.items()
        if roles[name] in ("contradiction", "both")
    ]
    entailments = [
        (name, float(v["probabilities"].get("entailment", 0.0)), float(v["probabilities"].get("neutral", 0.0)))
        for name, v in judges.items()
        if roles[name] in ("entailment", "both")
    ]
    if not contradictions or not entailments:
        return None
    c = sum(value for _, value in contradictions) / len(contradictions)
    if len(contradictions) == 1:
        c_text = f"c = {contradictions[0][0]}'s P(contradiction) {c:.2f}"
    else:
        each = ", ".join(f"{name}'s {value:.2f}" for name, value in contradictions)
        c_text = f"c = the mean of the P(contradiction) of {each} = {c:.2f}"
    if label == "contradiction":
        return f"the panel's P(contradiction) {c:.2f} = c, {c_text}"
    if label != "entailment":
        return None
    shares = [(name, e, n, e / (e + n) if e + n > 0 else 0.0) for name, e, n in entailments]
    e_mean = sum(share for *_, share in shares) / len(shares)
    if len(shares) == 1:
        name, e, n, _ = shares[0]
        e_text = (
            f"e = {name}'s P(entailment) / (P(entailment) + P(neutral)) = {e:.2f} / ({e:.2f} + {n:.2f}) = {e_mean:.2f}"
        )
    else:
        each = ", ".join(f"{name}'s {e:.2f} / ({e:.2f} + {n:.2f})" for name, e, n, _ in shares)
        e_text = f"e = the mean of P(entailment) / (P(entailment) + P(neutral)) of {each} = {e_mean:.2f}"
    figure = (1.0 - c) * e_mean
    return f"the panel's P(entailment) {figure:.2f} = (1 − c) × e = (1 − {c:.2f}) × {e_mean:.2f}, with {c_text} and {e_text}"


def _flat_settings(row: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in dotted(row.get("settings") or {}).items() if key not in _JUDGE_KEYS}
    out["judge"] = judge_of(row)
    return out


def _shown(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def group_rows(named_rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """``(source name, row)`` pairs → ``{label: rows}``. The label is the assessor name; when one
    assessor comes from several sources (two runs of FR2 with other judges, say), each label
    adds what tells its run apart: the judge and the settings that differ between those runs
    (``FR2 [judge=align]``, ``FR2 [judge=llm, graph.factor_tables=paper]``), or the source name
    when the settings are the same."""
    by_source: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for source, row in named_rows:
        by_source.setdefault((assessor_name(row), source), []).append(row)
    sources: dict[str, list[str]] = {}
    for assessor, source in by_source:
        sources.setdefault(assessor, []).append(source)
    groups: dict[str, list[dict[str, Any]]] = {}
    for assessor, names in sources.items():
        if len(names) == 1:
            groups[assessor] = by_source[(assessor, names[0])]
            continue
        flat = {name: _flat_settings(by_source[(assessor, name)][0]) for name in names}
        keys = sorted({key for values in flat.values() for key in values})
        differing = [key for key in keys if len({_shown(values.get(key)) for values in flat.values()}) > 1]
        differing.sort(key=lambda key: key != "judge")  # the judge first
        labels = {
            name: ", ".join(f"{key}={_shown(flat[name].get(key))}" for key in differing) or name for name in names
        }
        if len(set(labels.values())) < len(names):  # same settings: the sources tell them apart
            labels = {name: f"{labels[name]}, {name}" if differing else name for name in names}
        for name in names:
            groups[f"{assessor} [{labels[name]}]"] = by_source[(assessor, name)]
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


def read_rows(
    paths: Sequence[str | Path], failures: list[RecordError] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Rows of result JSONL files as ``(source name, row)``: the file's name without ``.jsonl``, or
    its whole path when two files share a name.

    A line that cannot be read (not UTF-8, invalid JSON, not a result row) is appended to
    ``failures`` as ``file:line: problem`` and the other lines are read, the policy of every
    input file of the program; without a ``failures`` list the first such line raises
    :class:`~fact_reasoner.errors.InputError`. A file that cannot be used at all raises it too:
    missing, a directory, the results of ``fact-reasoner ragas`` (another kind of row), or no
    result row (a report of nothing would look like a finished one)."""
    out = []
    names = [Path(p).name for p in paths]
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise InputError(f"results file not found: {path}")
        if path.is_dir():
            raise InputError("a directory, not a results file", path=path)
        stem = (str(path) if names.count(path.name) > 1 else path.name).removesuffix(".jsonl")
        found = unreadable = 0
        for item in read_json_values(path):
            problem = item if isinstance(item, RecordError) else _not_a_result(item)
            if problem is not None:
                if failures is None:
                    raise InputError(problem.message, path=path, line=problem.line)
                failures.append(problem)
                unreadable += 1
                continue
            assert not isinstance(item, RecordError)
            out.append((stem, item.data))
            found += 1
        if not found:
            why = f"{unreadable} unreadable line(s)" if unreadable else "the file is empty"
            raise InputError(f"no result rows ({why}): nothing to report", path=path)
    return out


def _not_a_result(row: RawRow) -> RecordError | None:
    """Why a JSON value of a results file is not a result row, or None; the results of
    ``fact-reasoner ragas`` raise (the whole file is another kind of results)."""
    data = row.data
    if isinstance(data, dict) and isinstance(data.get("metrics"), dict) and "sample_key" in data:
        raise InputError(
            "a result of `fact-reasoner ragas` (RAG metrics per sample), which this report does not "
            "show: it shows `fact-reasoner` and `fact-reasoner correct` results; for a table of these "
            "rerun the same ragas command with --csv FILE (it resumes: nothing is computed again)",
            path=row.path,
            line=row.line,
        )
    if not isinstance(data, dict) or not isinstance(data.get("atoms"), list):
        return row.error("not a result row (no 'atoms' list)")
    return None
