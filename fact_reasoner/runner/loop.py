"""The dataset run: every item of an input file worked on, written, resumable and summarised.

There is one run loop, :func:`run_dataset`, and every command that goes through a dataset uses
it: ``fact-reasoner`` (assess), ``correct``, ``ragas`` and ``experiments/run_biographies.py``.
A command describes its run as a :class:`DatasetJob` (how its input is read, what a worker
does with one item, what its rows carry); the runner does the rest, the same way for all:

1. read the input (:meth:`DatasetJob.read`); an unreadable line becomes a failure naming file
   and line, and reading goes on; ``limit`` keeps the first lines read;
2. preflight: everything the items will need (the engine and its options, the packages of the
   atomizer, retriever and NLI backend, the executor) is checked once, before any item;
3. open the output (:class:`~fact_reasoner.io.ResultWriter`, locked): results already written for
   these items are skipped (resume); a file whose results were made with other settings is
   refused (:class:`~fact_reasoner.errors.SettingsMismatch`);
4. work on the remaining items on the executor, writing each row as soon as it is done; an
   item that fails is recorded and the run goes on, unless a stage cannot be set up at all or
   the server was unreachable before any item succeeded (then the run stops);
5. write the run's failures (``.errors.jsonl``) and, where the job has one, the dataset summary
   (``.summary.json``) of the results of this input's items.

Ctrl-C and SIGTERM (:mod:`fact_reasoner.interrupts`) stop the run at once: the item in
progress is abandoned, every finished row is kept, and the report says so.

Problems that prevent the run raise a :class:`~fact_reasoner.errors.FactReasonerError` before
any item is worked on. Once the run has started it ends with a :class:`RunReport`: completed,
interrupted (everything written is kept) or stopped (``stopped_by`` says why). Nothing here
prints: what happens during the run (unreadable lines, failed items, resuming) is logged on the
``fact_reasoner.runner`` logger, each message with its prefix (``error:``, ``note:``,
``warning:``, ``resuming:``), and the command line prints the report
(:mod:`fact_reasoner.commands`).

The jobs themselves are :mod:`fact_reasoner.runner.jobs`; :class:`~fact_reasoner.runner.service.RecordService`
is the same job one item at a time, with its stages loaded once: the row it returns is the row
:func:`run_dataset` writes for that item.
"""

from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from ..errors import RecordFailed, SettingsMismatch, SetupError
from ..executors import Executor, Job, LocalExecutor, describe_error
from ..interrupts import deferred, stop_on_signals
from ..io import InOrderWriter, RecordError, ResultWriter, dumps_line, write_errors
from ..settings.fields import dotted

log = logging.getLogger(__package__)  # one logger for the whole run: fact_reasoner.runner

#: Where results go when neither an output file nor a directory is given.
DEFAULT_OUTPUT_DIR = Path("fact_reasoner_output")


@dataclass(frozen=True)
class RunReport:
    """What a dataset run did.

    Every item read falls in exactly one count: ``records = done + skipped + failed +
    not_run``, where ``failed`` counts the unreadable lines too (``len(failures)``).
    ``summary`` is the dict written to ``summary_file``; it and the summary file are absent
    when the run stopped (or the job has no summary). ``kept`` is the number of results in the
    output file after the run (also those of items no longer in the input: ``stale`` of them).
    ``rows`` are the results of this input's items (the summary is made of them).
    ``output_exists``: whether the output file is there after the run (a run that wrote no row
    leaves no file it created: :class:`~fact_reasoner.io.ResultWriter`).
    """

    input_file: Path
    output_file: Path
    errors_file: Path
    summary_file: Path
    records: int
    done: int
    skipped: int
    failures: tuple[RecordError, ...]
    not_run: int
    kept: int
    stale: int = 0
    interrupted: bool = False
    stopped_by: str | None = None
    summary: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    rows: tuple[dict[str, Any], ...] = ()
    output_exists: bool = True

    @property
    def failed(self) -> int:
        """Unreadable lines plus items that failed in this run."""
        return len(self.failures)

    @property
    def completed(self) -> bool:
        """Every item read was tried (none left by a stop or an interruption)."""
        return self.stopped_by is None and not self.interrupted


def default_output_file(
    input_file: str | Path, output_dir: str | Path, version: int, pipeline: str = "factreasoner"
) -> Path:
    """``<output_dir>/<input name without .jsonl/.json>.fr<version>.jsonl``, or
    ``….<pipeline>.jsonl`` for a pipeline other than FactReasoner (``--pipeline factscore``)."""
    stem = Path(input_file).name
    for suffix in (".jsonl", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    tag = f"fr{version}" if pipeline == "factreasoner" else pipeline
    return Path(output_dir) / f"{stem}.{tag}.jsonl"


# -- what a command hands to the runner ----------------------------------------------------------


@dataclass(kw_only=True)
class DatasetJob(ABC):
    """One command's dataset run, as :func:`run_dataset` drives it.

    The fields are the run's controls: the input and output files, ``overwrite`` (start the
    output over instead of resuming), ``limit`` (the first lines of the input only),
    ``progress`` (a progress bar on stderr) and ``dataset_name`` (a label for the summary).
    The methods say what is particular to the command; each has the default that most
    commands want. An item is anything with ``key`` (its resume key), ``path`` and ``line``.

    The files are needed by :func:`run_dataset` only: a job that makes one row at a time
    (:class:`~fact_reasoner.runner.service.RecordService`, what ``fact-reasoner serve`` does with
    each request) has none.
    """

    input_file: Path | None = None
    output_file: Path | None = None
    overwrite: bool = False
    limit: int | None = None
    progress: bool = True
    dataset_name: str | None = None

    #: what one item is called in messages ("3 record(s) kept")
    noun: ClassVar[str] = "record"
    #: the row field holding an item's resume key
    key_field: ClassVar[str] = "record_key"
    #: the flags that choose another output (named when the output holds other settings)
    elsewhere: ClassVar[str] = "--output-dir / --output-file"
    #: write rows in input order even when workers finish out of order (Ray)
    in_order: ClassVar[bool] = False

    @property
    def input_path(self) -> Path:
        """The input file, which :meth:`read` reads (a job made for a record service has none)."""
        if self.input_file is None:
            raise TypeError(f"{type(self).__name__} has no input_file to read")
        return Path(self.input_file)

    @abstractmethod
    def read(self) -> list[Any]:
        """Every item of the input in order, and a :class:`~fact_reasoner.io.RecordError` for each
        part that cannot be read; raises :class:`~fact_reasoner.errors.InputError` when the
        input cannot be read at all."""

    def preflight(self, items: Sequence[Any]) -> None:  # noqa: B027 - nothing to check by default
        """Check, before any item, everything the items will need (raise a
        :class:`~fact_reasoner.errors.FactReasonerError` when something cannot work)."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The settings every row carries; a resumed run must have the same."""

    @abstractmethod
    def worker_job(self, items: Sequence[Any]) -> Job:
        """What a worker does with one item (the executor's job), for these items (the dataset
        median of their atoms is known here)."""

    def make_executor(self) -> Executor:
        """Where the items run (by default this process, :class:`~fact_reasoner.executors.
        LocalExecutor`); :meth:`release_executor` is called with it after the run."""
        return LocalExecutor()

    def release_executor(self, executor: Executor) -> None:
        """After the run (and when the output cannot be opened): close the executor (a job that
        shares one executor between several runs closes it itself)."""
        executor.close()

    def progress_label(self) -> str | None:
        """The progress bar's label."""
        return None

    def local_state(self) -> Any:
        """What the local executor's worker uses instead of building its own state (the stages
        this process built already), or None."""
        return None

    def work_items(self, items: Sequence[Any]) -> list[Any]:
        """What the worker job is given for each item (by default the item itself)."""
        return list(items)

    def row(self, item: Any, value: Any) -> dict[str, Any]:
        """The output row of an item from what its worker returned (raise
        :class:`~fact_reasoner.errors.RecordFailed` to record the item as failed instead): by
        default that dict with the settings (which resuming compares) and the input line."""
        row: dict[str, Any] = value
        if "settings" not in row:
            row["settings"] = self.settings()
        row["source_line"] = item.line
        return row

    def failure_message(self, item: Any, error: BaseException) -> str:
        """How a failed item is described in the errors file and on stderr."""
        return str(error) if isinstance(error, RecordFailed) else describe_error(error)

    def after_item(self, item: Any, row: dict[str, Any] | None, failure: RecordError | None) -> None:  # noqa: B027
        """Called after each item, with its row or its failure (a job's own accounting)."""

    def postfix(self) -> dict[str, Any] | None:
        """Figures shown beside the progress bar, or None."""
        return None

    def summary(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The dataset summary of this input's rows (written to ``.summary.json``, with the
        run's own fields added), or None for a job that writes none."""
        return None

    def notes(self, rows: list[dict[str, Any]]) -> list[str]:
        """Warnings about the finished run's settings (logged as ``warning:``)."""
        return []

    def failed_rows(self, rows: list[dict[str, Any]]) -> int:
        """How many written rows are failures all the same (a correction that was refused: its
        row says why); the summary's ``failed_records`` counts them with the items that failed,
        so that its counts agree with each other."""
        return 0


# -- the run --------------------------------------------------------------------------------------


def run_dataset(job: DatasetJob) -> RunReport:
    """Run ``job`` over its input (steps in the module docstring) and report what happened.

    The job carries its own files and controls: a pipeline over records is
    :class:`~fact_reasoner.runner.jobs.AssessDataset` (``run_dataset(AssessDataset(assessor=…,
    input_file=…, output_dir=…))``), the RAG metrics over samples
    :class:`~fact_reasoner.runner.jobs.RagasDataset`, another command's run a
    :class:`DatasetJob` of its own. Results go to the job's output file; beside it
    ``.errors.jsonl`` (this run's failures, removed when there are none) and ``.summary.json``.

    Raises :class:`~fact_reasoner.errors.InputError` (the input cannot be read at all), a
    :class:`~fact_reasoner.errors.SetupError`, :class:`~fact_reasoner.errors.SettingsError` or
    :class:`~fact_reasoner.inference.InferenceError` from the preflight,
    :class:`~fact_reasoner.errors.OutputError` / :class:`~fact_reasoner.errors.OutputLocked`
    (the output cannot be used) or :class:`~fact_reasoner.errors.SettingsMismatch`, each before
    any item is worked on.
    """
    return _run(job)


def _run(job: DatasetJob) -> RunReport:
    from ..progress import STAGE_PROGRESS_MAX_RECORDS, progress_bar, stages_shown

    if job.input_file is None or job.output_file is None:
        raise TypeError(f"run_dataset: {type(job).__name__} needs input_file and output_file")
    out_path = Path(job.output_file)
    errors_path = out_path.with_suffix(".errors.jsonl")
    summary_path = out_path.with_suffix(".summary.json")

    items = job.read()
    input_keys = {item.key for item in items if not isinstance(item, RecordError)}
    if job.limit is not None:
        items = items[: job.limit]
    valid = [item for item in items if not isinstance(item, RecordError)]
    bad = [item for item in items if isinstance(item, RecordError)]
    settings = job.settings()
    job.preflight(valid)
    executor = job.make_executor()
    writer = open_results(
        out_path,
        settings,
        overwrite=job.overwrite,
        executor=_Releaser(job, executor),
        elsewhere=job.elsewhere,
        key_field=job.key_field,
    )
    notes: list[str] = []
    if writer.repaired:
        notes.append(f"removed a torn last line from {out_path} (an interrupted write)")
        log.info("note: %s", notes[-1])

    failures: list[RecordError] = list(bad)
    for unreadable in bad:
        log.error("error: %s", unreadable)
    todo = [item for item in valid if item.key not in writer]
    skipped = len(valid) - len(todo)
    if skipped:
        log.info("resuming: %d %s(s) already in %s", skipped, job.noun, out_path)

    interrupted = False
    stop_error: Exception | None = None
    done = 0
    tried = 0
    start = time.perf_counter()
    in_order = InOrderWriter(writer) if job.in_order else None

    def write(position: int, row: dict[str, Any] | None) -> None:
        if in_order is not None:
            in_order.put(position, row)
        elif row is not None:
            writer.write(row)

    try:
        work = job.worker_job(valid)
        shown = job.progress and bool(todo)
        label = job.progress_label()
        # a few records: each stage's progress within a record too (fact_reasoner.progress)
        within = stages_shown() if shown and len(todo) <= STAGE_PROGRESS_MAX_RECORDS else nullcontext()
        with stop_on_signals(), within, progress_bar(len(todo), desc=label, unit=job.noun, quiet=not shown) as bar:
            # results come back as they complete (in input order with the local executor)
            for outcome in executor.map(work, job.work_items(todo), local_state=job.local_state()):
                with deferred():  # a finished item is written even when Ctrl-C comes now
                    item = todo[outcome.index]
                    problem = outcome.error
                    row: dict[str, Any] | None = None
                    failure: RecordError | None = None
                    if problem is None:
                        try:
                            row = job.row(item, outcome.value)
                        except RecordFailed as refused:  # the job's own verdict: no row for this item
                            problem = refused
                    if isinstance(problem, SetupError):
                        stop_error = problem
                        break
                    if problem is None:
                        done += 1
                    else:  # one bad item must not stop the dataset
                        failure = RecordError(item.path, item.line, job.failure_message(item, problem))
                        failures.append(failure)
                        log.error("error: %s", failure)
                    write(outcome.index, row)
                    tried += 1
                    job.after_item(item, row, failure)
                    bar.update(1)
                    figures = job.postfix()
                    if figures:
                        bar.set_postfix(figures, refresh=False)
                    if isinstance(problem, RecordFailed) and problem.unreachable and done == 0:
                        # a server down from the start: every item would wait through the same
                        # retries; stop now with one message
                        stop_error = problem
                        break
    except KeyboardInterrupt:
        interrupted = True
    except SetupError as error:  # the executor itself could not run (no Ray worker started)
        stop_error = error
    finally:
        try:
            if in_order is not None:
                in_order.flush()  # rows that finished out of order are kept, in order
        finally:
            writer.close()
            job.release_executor(executor)

    write_errors(errors_path, failures)
    # the items of this input only: an item edited since an earlier run has a new key, and
    # its old result (still in the file) no longer describes it
    current = [writer.done[item.key] for item in valid if item.key in writer.done]
    report = RunReport(
        input_file=Path(job.input_file),
        output_file=out_path,
        errors_file=errors_path,
        summary_file=summary_path,
        records=len(items),
        done=done,
        skipped=skipped,
        failures=tuple(failures),
        not_run=len(todo) - tried,
        kept=len(writer.done),
        interrupted=interrupted,
        notes=tuple(notes),
        seconds=time.perf_counter() - start,
        rows=tuple(current),
        output_exists=writer.exists,
    )
    if stop_error is not None:
        return replace(report, stopped_by=str(stop_error))
    stale = len(set(writer.done) - input_keys)
    if stale:
        notes.append(
            f"{stale} result(s) in {out_path} belong to {job.noun}s no longer in the input (left out of the summary)"
        )
        log.info("note: %s", notes[-1])
    for warning in job.notes(current):
        notes.append(warning)
        log.warning("warning: %s", warning)
    summary = job.summary(current)
    if summary is not None:
        summary.update(
            input_file=str(job.input_file),
            output_file=str(out_path),
            dataset_name=job.dataset_name,
            settings=settings,
            failed_records=len(failures) + job.failed_rows(current),
            interrupted=interrupted,
            seconds=report.seconds,
            executor=executor.name,
            workers=executor.worker_summary(),
        )
        summary_path.write_text(dumps_line(summary))
    return replace(report, stale=stale, summary=summary, notes=tuple(notes))


@dataclass(frozen=True)
class _Releaser:
    """An executor as :func:`open_results` closes it on an error: released through its job."""

    job: DatasetJob
    executor: Executor

    def close(self) -> None:
        self.job.release_executor(self.executor)


def open_results(
    out_path: Path,
    settings: dict[str, Any],
    *,
    overwrite: bool,
    executor: Any,
    elsewhere: str,
    key_field: str = "record_key",
) -> ResultWriter:
    """The locked output of a run whose rows are made with ``settings``, its finished rows read
    back for resuming.

    Raises :class:`~fact_reasoner.errors.SettingsMismatch` when the rows already there were made
    with other settings (the message names the first differences and suggests ``--overwrite``
    or ``elsewhere``, the flags that choose another output); on any error the writer and
    ``executor`` are closed first.
    """
    try:
        writer = ResultWriter(out_path, key_field=key_field, overwrite=overwrite)
    except BaseException:  # locked, or not usable as an output
        executor.close()
        raise
    previous = {json.dumps(row.get("settings"), sort_keys=True) for row in writer.done.values()}
    if previous and previous != {json.dumps(settings, sort_keys=True)}:
        writer.close()
        executor.close()
        other = json.loads(sorted(previous)[0])
        raise SettingsMismatch(
            f"{out_path} holds results made with other settings "
            f"({settings_difference(other, settings)}); use --overwrite, or another {elsewhere}"
        )
    return writer


def settings_difference(before: Any, now: Any, limit: int = 6) -> str:
    """The settings that differ, as ``group.field: <before> in the file, <now> now`` (at most
    ``limit`` of them, then how many more)."""

    old, new = dotted(before), dotted(now)
    changes = [
        f"{key}: {json.dumps(old.get(key))} in the file, {json.dumps(new.get(key))} now"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]
    more = f"; {len(changes) - limit} more" if len(changes) > limit else ""
    return "; ".join(changes[:limit]) + more


__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "DatasetJob",
    "RunReport",
    "default_output_file",
    "run_dataset",
    "settings_difference",
]
