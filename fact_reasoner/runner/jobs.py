"""The dataset jobs the commands run, side by side: a pipeline over records
(:class:`AssessDataset`: ``fact-reasoner``, ``correct``, ``experiments/run_biographies.py``) and
the RAG metrics over samples (:class:`RagasDataset`: ``fact-reasoner ragas``).

Each is a :class:`~fact_reasoner.runner.loop.DatasetJob`: :func:`~fact_reasoner.runner.loop.run_dataset`
runs it over a file, :class:`~fact_reasoner.runner.service.RecordService` one item at a time
(``fact-reasoner serve``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RecordFailed
from ..executors import Executor, Job, make_executor
from ..io import NumberedRecord, read_records
from ..scores import median_num_atoms, summarize_rows
from ..settings.config import PipelineConfig
from .loop import DEFAULT_OUTPUT_DIR, DatasetJob, default_output_file

log = logging.getLogger(__package__)  # one logger for the whole run: fact_reasoner.runner

#: the metrics ``fact-reasoner ragas`` and the server's ``/v1/ragas`` compute when none are named
DEFAULT_METRICS = "faithfulness,factual_correctness,context_precision,context_recall,answer_relevance,ragas_score"


@dataclass(kw_only=True)
class AssessDataset(DatasetJob):
    """A pipeline (:class:`~fact_reasoner.reasoner.FactReasoner`, a baseline) over the records of
    an input file: ``fact-reasoner --input-file``, and ``fact-reasoner correct`` with its own
    ``make_job`` (what a worker does with one record, ``make_job(config, k, dataset median)``;
    default :class:`AssessJob`), ``job_state`` (what the local executor's worker uses; default
    the assessor), ``row_settings`` (the settings its rows carry; default the assessor's) and
    ``summarize`` (figures of the rows added to the summary). The results go to
    ``output_file``, by default :func:`~fact_reasoner.runner.loop.default_output_file` in
    ``output_dir``."""

    assessor: Any
    make_job: Callable[[PipelineConfig, int | str, float | None], Job] | None = None
    job_state: Any = None
    row_settings: dict[str, Any] | None = None
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
    #: the written rows that are failures all the same (``correct``: a refused correction)
    count_failed: Callable[[list[dict[str, Any]]], int] | None = None
    #: where the output goes when no ``output_file`` is given (:func:`default_output_file`)
    output_dir: str | Path = DEFAULT_OUTPUT_DIR

    def __post_init__(self) -> None:
        if self.input_file is not None:
            self.input_file = Path(self.input_file)
            if self.output_file is None:
                version, pipeline = self.config.graph.version, self.config.pipeline.name
                self.output_file = default_output_file(self.input_file, self.output_dir, version, pipeline)

    @property
    def config(self) -> PipelineConfig:
        return self.assessor.config

    def failed_rows(self, rows: list[dict[str, Any]]) -> int:
        return self.count_failed(rows) if self.count_failed is not None else 0

    def read(self) -> list[Any]:
        return list(read_records(self.input_path))

    def make_executor(self) -> Executor:
        return make_executor(self.config.execution)  # --executor local|ray

    def preflight(self, items: Sequence[Any]) -> None:
        # Everything the records will need is checked now, once: a missing package, a bad engine
        # option or a missing merlin binary stops the run before any record.
        self.assessor.preflight([r.record for r in items])
        for note in (ignored_top_k(self.config, [r.record for r in items]), threads_beyond_cores(self.config)):
            if note:
                log.warning("warning: %s", note)

    def settings(self) -> dict[str, Any]:
        return self.assessor.settings() if self.row_settings is None else self.row_settings

    def worker_job(self, items: Sequence[Any]) -> Job:
        # the dataset median of the records that carry atoms; none when every record's atoms are
        # made by the run (K then falls back to max(n // 2, 1), its reason in each row: choose_k)
        median = median_num_atoms([len(r.record.atoms) for r in items if r.record.atoms is not None])
        return (self.make_job or AssessJob)(self.config, self.config.scores.k, median)

    def local_state(self) -> Any:
        return self.assessor if self.job_state is None else self.job_state

    def summary(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        out = dataset_summary(rows)
        if self.summarize is not None:
            out.update(self.summarize(rows))
        return out

    def notes(self, rows: list[dict[str, Any]]) -> list[str]:
        notes = [k_beyond_atoms(self.config.scores.k, [row.get("num_atoms") for row in rows])]
        notes.append(unused_relations_note(rows))
        return [note for note in notes if note]


@dataclass(frozen=True)
class AssessJob(Job[NumberedRecord, dict[str, Any]]):
    """The assessment of one record, as any worker does it: the output row of
    :meth:`FactReasoner.assess <fact_reasoner.reasoner.FactReasoner.assess>` with the run's K rule
    and dataset median. Picklable: a Ray actor builds its own ``FactReasoner`` from ``config``."""

    config: PipelineConfig
    k: int | str | None
    median: float | None

    def setup(self, config: PipelineConfig) -> Any:
        from ..pipelines import make_pipeline

        return make_pipeline(config)

    def run(self, state: Any, item: NumberedRecord) -> dict[str, Any]:
        result = state.assess(item.record, k=self.k, dataset_median_atoms=self.median, record_key=item.key)
        return result.model_dump(mode="json")


def dataset_summary(rows: Any) -> dict[str, Any]:
    """The one dataset summary (:func:`~fact_reasoner.scores.summarize_rows`) of the written rows,
    with the engines that produced them."""
    rows = list(rows)
    out = summarize_rows(rows).as_dict()
    out["engines"] = sorted({row["engine"]["algorithm"] for row in rows})
    return out


def ignored_top_k(config: PipelineConfig, records: Sequence[Any]) -> str | None:
    """A warning when ``--top-k`` was set (to another value than its default) but cannot matter:
    contexts come only from the records (``--service-type supplied``), or every record brings
    its own."""
    if config.retrieval.top_k == type(config.retrieval).model_fields["top_k"].default:
        return None
    if config.retrieval.service_type == "supplied":
        why = "--service-type supplied takes the records' own contexts"
    elif records and all(record.contexts is not None for record in records):
        why = "every record brings its own contexts"
    else:
        return None
    return f"--top-k {config.retrieval.top_k} is ignored: {why} (nothing is retrieved)"


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system says, else all)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def threads_beyond_cores(config: PipelineConfig) -> str | None:
    """A warning when ``--threads`` asks for more threads than this process has cores, and the
    local models run here (not on Ray's actors, whose machines may have more). Not a refusal:
    more threads than cores only slow the models down (llama.cpp's and ONNX Runtime's threads
    wait for each other at every step), and a settings file written for a larger machine should
    still run on a smaller one."""
    threads, cores = config.models.threads, usable_cores()
    if threads is None or threads <= cores or config.execution.executor != "local":
        return None
    return (
        f"--threads {threads} is more than the {cores} CPU core(s) this process may use: the local models would "
        f"run {threads} threads on {cores}, slower than {cores}; leave --threads out to use every core"
    )


#: how many records :func:`unused_relations_note` names before it only counts
SHOW_UNUSED_RELATION_RECORDS = 3
_IGNORED = "ignored_relations_"


def unused_relations_note(rows: Sequence[dict[str, Any]]) -> str | None:
    """A warning naming the records (input line, topic) whose own ``relations`` the graph's
    version does not use, each with how many and why (its ``counters.ignored_relations_*``), and
    how many records had such relations; None when none had.

    >>> print(unused_relations_note([{"source_line": 2, "topic": "Marie Curie", "version": 3,
    ...     "counters": {"ignored_relations_duplicate": 1}}]))
    1 record has relations FR3 does not use (counted in counters.ignored_relations_*): line 2 (Marie Curie): 1 duplicate
    """
    having = [row for row in rows if any(key.startswith(_IGNORED) for key in row.get("counters") or {})]
    if not having:
        return None
    versions = sorted({f"FR{row.get('version')}" for row in having})
    named = []
    for row in having[:SHOW_UNUSED_RELATION_RECORDS]:
        about = row.get("topic") or " ".join(str(row.get("input") or "").split()[:8])
        why = ", ".join(
            f"{int(n)} {key.removeprefix(_IGNORED).replace('_', ' ')}"
            for key, n in (row.get("counters") or {}).items()
            if key.startswith(_IGNORED)
        )
        named.append(f"line {row.get('source_line', '?')} ({about}): {why}")
    more = len(having) - len(named)
    return (
        f"{len(having)} record{' has' if len(having) == 1 else 's have'} relations {'/'.join(versions)} does not use "
        f"(counted in counters.ignored_relations_*): " + "; ".join(named) + (f"; and {more} more" if more else "")
    )


def k_beyond_atoms(k: int | str, atom_counts: Sequence[Any]) -> str | None:
    """A warning when a fixed K is larger than every response's number of atoms: R@K = S/K and
    F1@K then cannot reach 1 (with K far above, they are about 0) although the number is right."""
    counts = [n for n in atom_counts if isinstance(n, int)]
    if not isinstance(k, int) or not counts or k <= max(counts):
        return None
    return (
        f"K = {k} is more than the atoms of any response (at most {max(counts)}): "
        f"R@K and F1@K are at most {max(counts)}/{k}; give --k median, half or a smaller number"
    )


@dataclass(kw_only=True)
class RagasDataset(DatasetJob):
    """The samples of a file, every metric on each (the ``ragas`` command's run)."""

    pipeline: PipelineConfig
    context: Any
    metrics: list[Any]
    atomizer: str
    needs_response: bool = True
    worker_notes: list[str] = field(default_factory=list)

    noun = "sample"
    key_field = "sample_key"
    elsewhere = "--output"
    in_order = True  # Ray workers finish out of order; the file keeps the input's

    def progress_label(self) -> str:
        return "ragas"

    def preflight(self, items: Sequence[Any]) -> None:
        note = threads_beyond_cores(self.pipeline)
        if note:
            log.warning("warning: %s", note)

    @property
    def config(self) -> PipelineConfig:
        return self.pipeline

    def make_executor(self) -> Any:
        from ..executors import make_executor

        return make_executor(self.pipeline.execution)  # --executor local|ray

    @property
    def names(self) -> list[str]:
        from ..metrics.evaluation import column_names

        return column_names(self.metrics)

    def read(self) -> list[Any]:
        from ..metrics.sample import read_samples

        return list(read_samples(self.input_path, needs_response=self.needs_response))

    def settings(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline.settings(),
            "atomizer": self.atomizer,
            "metrics": {name: m.key for name, m in zip(self.names, self.metrics)},
        }

    def worker_job(self, items: Any) -> Any:
        from ..metrics.evaluation import SampleJob

        return SampleJob(self.pipeline, self.atomizer, tuple(self.names), tuple(self.metrics))

    def local_state(self) -> Any:
        return self.context

    def work_items(self, items: Any) -> list[Any]:
        return [(position, item.sample) for position, item in enumerate(items)]

    def row(self, item: Any, value: Any) -> dict[str, Any]:
        evaluation, notes = value
        self.worker_notes += [note for note in notes if note not in self.worker_notes]
        if evaluation.errors:  # not written: reported, and tried again by the next run
            reasons = "; ".join(f"{name}: {error}" for name, error in evaluation.errors.items())
            raise RecordFailed(f"not computed: {reasons}")
        row = evaluation.row()
        row.pop("index")
        return {"sample_key": item.key, "source_line": item.line, **row, "settings": self.settings()}

    def failure_message(self, item: Any, error: BaseException) -> str:
        if isinstance(error, RecordFailed):
            return str(error)
        # the worker holding the sample was lost: every metric of it failed
        from ..executors import describe_error

        reasons = "; ".join(f"{name}: error: {describe_error(error)}" for name in self.names)
        return f"not computed: {reasons}"
