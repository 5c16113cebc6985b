"""``--export-uai``: every record's factor graph written as UAI files for another solver, and no
inference run."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..io import RecordError, read_records

if TYPE_CHECKING:  # pragma: no cover
    from ..reasoner import FactReasoner

log = logging.getLogger(__package__)  # one logger for the whole run: fact_reasoner.runner


@dataclass(frozen=True)
class ExportReport:
    """What ``--export-uai`` wrote: per record, its files (``.uai``, evidence, variable map),
    and the records that could not be built or read."""

    files: tuple[tuple[Path, ...], ...]
    failures: tuple[RecordError, ...] = field(default=())


def export_models(assessor: FactReasoner, input_file: str | Path, directory: str | Path) -> ExportReport:
    """``--export-uai DIR``: write every record's model as UAI files (``line<N>.fr<version>``:
    model, evidence, variable map) into ``directory`` and run no inference. A record that cannot
    be read or built is logged (``error: file:line: …``) and listed; the others are written."""
    from merlin_bridge.uai import export_graph

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files: list[tuple[Path, ...]] = []
    failures: list[RecordError] = []
    for item in read_records(input_file):
        if isinstance(item, RecordError):
            failures.append(item)
            log.error("error: %s", item)
            continue
        try:
            built, _, _ = assessor.build(item.record)
        except Exception as error:  # one record that cannot be built must not stop the export
            failures.append(RecordError(item.path, item.line, f"{type(error).__name__}: {error}"))
            log.error("error: %s", failures[-1])
            continue
        stem = directory / f"line{item.line:05d}.fr{assessor.config.graph.version}"
        files.append(tuple(Path(p) for p in export_graph(built.graph, stem)))
    return ExportReport(tuple(files), tuple(failures))
