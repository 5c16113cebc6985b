"""The dataset run: every record of an input file assessed, written, resumable and summarised.

:func:`run_dataset` does what ``fact-reasoner --input-file …`` does, callable from Python:

1. read the input (:func:`~fact_reasoner.io.read_records`); an unreadable line becomes a failure
   naming file and line, and reading goes on; ``limit`` keeps the first lines read;
2. preflight: everything the records will need (the engine and its options, the packages of the
   atomizer, retriever and NLI backend, the executor) is checked once, before any record;
3. open the output (:class:`~fact_reasoner.io.ResultWriter`, locked): results already written for
   these records are skipped (resume); a file whose results were made with other settings is
   refused (:class:`~fact_reasoner.errors.SettingsMismatch`);
4. assess the remaining records on the executor, writing each row as soon as it is done; a
   record that fails is recorded and the run goes on, unless a stage cannot be set up at all or
   the server was unreachable before any record succeeded (then the run stops);
5. write the run's failures (``.errors.jsonl``) and the dataset summary (``.summary.json``) of
   the results of this input's records.

Problems that prevent the run raise a :class:`~fact_reasoner.errors.FactReasonerError` before
any record is assessed. Once the run has started it ends with a :class:`RunReport`: completed,
interrupted (Ctrl-C or SIGTERM: everything written is kept) or stopped (``stopped_by`` says why).
Nothing here prints: what happens during the run (unreadable lines, failed records, resuming)
is logged on the ``fact_reasoner.runner`` logger, each message with its prefix (``error:``,
``note:``, ``resuming:``), and the command line prints the report.
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import PipelineConfig
from .errors import RecordFailed, SettingsMismatch, SetupError
from .executors import Job, describe_error, make_executor
from .graph import upgrade_graph_settings
from .io import NumberedRecord, RecordError, ResultWriter, dumps_line, read_records, write_errors
from .scores import median_num_atoms, summarize_rows

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import FactReasoner

log = logging.getLogger(__name__)

#: Where results go when neither an output file nor a directory is given.
DEFAULT_OUTPUT_DIR = Path("fact_reasoner_output")


@dataclass(frozen=True)
class RunReport:
    """What a dataset run did.

    Every record read falls in exactly one count: ``records = done + skipped + failed +
    not_run``, where ``failed`` counts the unreadable lines too (``len(failures)``).
    ``summary`` is the dict written to ``summary_file``; it and the summary file are absent
    when the run stopped. ``kept`` is the number of results in the output file after the run
    (also those of records no longer in the input: ``stale`` of them).
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
    #: the rows the summary was made of (this input's records), for the gate's worst records
    rows: tuple[dict[str, Any], ...] = ()

    @property
    def failed(self) -> int:
        """Unreadable lines plus records that failed in this run."""
        return len(self.failures)

    @property
    def completed(self) -> bool:
        """Every record read was tried (none left by a stop or an interruption)."""
        return self.stopped_by is None and not self.interrupted


@dataclass(frozen=True)
class ExportReport:
    """What ``--export-uai`` wrote: per record, its files (``.uai``, evidence, variable map),
    and the records that could not be built or read."""

    files: tuple[tuple[Path, ...], ...]
    failures: tuple[RecordError, ...] = field(default=())


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


@dataclass(frozen=True)
class AssessJob(Job[NumberedRecord, dict[str, Any]]):
    """The assessment of one record, as any worker does it: the output row of
    :meth:`FactReasoner.assess <fact_reasoner.pipeline.FactReasoner.assess>` with the run's K rule
    and dataset median. Picklable: a Ray actor builds its own ``FactReasoner`` from ``config``."""

    config: PipelineConfig
    k: int | str
    median: float | None

    def setup(self, config: PipelineConfig) -> Any:
        from .pipelines import make_pipeline

        return make_pipeline(config)

    def run(self, state: Any, item: NumberedRecord) -> dict[str, Any]:
        result = state.assess(item.record, k=self.k, dataset_median_atoms=self.median, record_key=item.key)
        return result.model_dump(mode="json")


def run_dataset(
    assessor: FactReasoner,
    input_file: str | Path,
    *,
    output_dir: str | Path = DEFAULT_OUTPUT_DIR,
    output_file: str | Path | None = None,
    dataset_name: str | None = None,
    overwrite: bool = False,
    limit: int | None = None,
    progress: bool = True,
    make_job: Callable[[PipelineConfig, int | str, float | None], Job[NumberedRecord, dict[str, Any]]] | None = None,
    job_state: Any = None,
    settings: dict[str, Any] | None = None,
    summarize: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None,
) -> RunReport:
    """Assess every record of ``input_file`` with ``assessor`` (steps in the module docstring).

    Results go to ``output_file``, by default :func:`default_output_file` in ``output_dir``;
    beside it ``.errors.jsonl`` (this run's failures, removed when there are none) and
    ``.summary.json``. ``overwrite`` starts the output over instead of resuming; ``limit``
    keeps the first ``limit`` lines of the input (unreadable ones included); ``progress``
    shows a progress bar on stderr.

    Another command that makes one row per record (``fact-reasoner correct``) runs through the
    same steps with its own job, ``make_job(config, k, dataset median)`` (default
    :class:`AssessJob`); ``job_state``, what the local executor's worker uses (default:
    ``assessor``); the ``settings`` its rows carry (default: the assessor's); and
    ``summarize``, whose figures of the rows are added to the summary.

    Raises :class:`~fact_reasoner.errors.InputError` (the input cannot be read at all), a
    :class:`~fact_reasoner.errors.SetupError`, :class:`~fact_reasoner.errors.SettingsError` or
    :class:`~fact_reasoner.inference.InferenceError` from the preflight,
    :class:`~fact_reasoner.errors.OutputError` / :class:`~fact_reasoner.errors.OutputLocked`
    (the output cannot be used) or :class:`~fact_reasoner.errors.SettingsMismatch`, each before
    any record is assessed.
    """
    from .progress import progress_bar

    input_file = Path(input_file)
    config = assessor.config
    out_path = (
        Path(output_file)
        if output_file is not None
        else default_output_file(input_file, output_dir, config.graph.version, config.pipeline.name)
    )
    errors_path = out_path.with_suffix(".errors.jsonl")
    summary_path = out_path.with_suffix(".summary.json")

    records = list(read_records(input_file))
    input_keys = {r.key for r in records if isinstance(r, NumberedRecord)}
    if limit is not None:
        records = records[:limit]
    valid = [r for r in records if isinstance(r, NumberedRecord)]
    bad = [r for r in records if isinstance(r, RecordError)]
    atom_counts = [len(r.record.atoms) for r in valid if r.record.atoms is not None]
    median = median_num_atoms(atom_counts)
    settings = assessor.settings() if settings is None else settings
    # Everything the records will need is checked now, once: a missing package, a bad engine
    # option or a missing merlin binary stops the run before any record.
    assessor.preflight([r.record for r in valid])
    executor = make_executor(config.execution)
    writer = open_results(
        out_path, settings, overwrite=overwrite, executor=executor, elsewhere="--output-dir / --output-file"
    )
    notes: list[str] = []
    if writer.repaired:
        notes.append(f"removed a torn last line from {out_path} (an interrupted write)")
        log.info("note: %s", notes[-1])

    failures: list[RecordError] = list(bad)
    for unreadable in bad:
        log.error("error: %s", unreadable)
    todo = [r for r in valid if r.key not in writer]
    skipped = len(valid) - len(todo)
    if skipped:
        log.info("resuming: %d record(s) already in %s", skipped, out_path)

    k_rule = config.scores.k
    if k_rule == "median" and median is None:
        k_rule = "half"  # atoms are produced per record: no dataset median is known in advance
    job = (make_job or AssessJob)(config, k_rule, median)
    interrupted = False
    stop_error: Exception | None = None
    done = 0
    tried = 0
    start = time.perf_counter()
    try:
        with _sigterm_as_interrupt(), progress_bar(len(todo), unit="record", quiet=not progress) as bar:
            # results come back as they complete (in input order with the local executor)
            for outcome in executor.map(job, todo, local_state=assessor if job_state is None else job_state):
                item = todo[outcome.index]
                problem = outcome.error
                if problem is None:
                    row: dict[str, Any] = outcome.value  # type: ignore[assignment]
                    row["source_line"] = item.line
                    writer.write(row)
                    done += 1
                elif isinstance(problem, SetupError):
                    stop_error = problem
                    break
                else:  # one bad record must not stop the dataset
                    message = str(problem) if isinstance(problem, RecordFailed) else describe_error(problem)
                    failures.append(RecordError(item.path, item.line, message))
                    log.error("error: %s", failures[-1])
                    if isinstance(problem, RecordFailed) and problem.unreachable and done == 0:
                        # a server down from the start: every record would wait through the
                        # same retries; stop now with one message
                        tried += 1
                        stop_error = problem
                        break
                tried += 1
                bar.update(1)
    except KeyboardInterrupt:
        interrupted = True
    except SetupError as error:  # the executor itself could not run (no Ray worker started)
        stop_error = error
    finally:
        writer.close()
        executor.close()

    write_errors(errors_path, failures)
    report = RunReport(
        input_file=input_file,
        output_file=out_path,
        errors_file=errors_path,
        summary_file=summary_path,
        records=len(records),
        done=done,
        skipped=skipped,
        failures=tuple(failures),
        not_run=len(todo) - tried,
        kept=len(writer.done),
        interrupted=interrupted,
        notes=tuple(notes),
        seconds=time.perf_counter() - start,
    )
    if stop_error is not None:
        return replace(report, stopped_by=str(stop_error))
    # the records of this input only: a record edited since an earlier run has a new key, and
    # its old result (still in the file) no longer describes it
    current = [writer.done[r.key] for r in valid if r.key in writer.done]
    stale = len(set(writer.done) - input_keys)
    if stale:
        notes.append(
            f"{stale} result(s) in {out_path} belong to records no longer in the input (left out of the summary)"
        )
        log.info("note: %s", notes[-1])
    summary = dataset_summary(current)
    if summarize is not None:
        summary.update(summarize(current))
    summary.update(
        input_file=str(input_file),
        output_file=str(out_path),
        dataset_name=dataset_name,
        settings=settings,
        failed_records=len(failures),
        interrupted=interrupted,
        seconds=report.seconds,
        executor=executor.name,
        workers=executor.worker_summary(),
    )
    summary_path.write_text(dumps_line(summary))
    return replace(report, stale=stale, summary=summary, notes=tuple(notes), rows=tuple(current))


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop after the current write, keep everything written."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM interrupts like Ctrl-C. Signal handlers belong to the main
    thread: a run started from another thread leaves SIGTERM as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def needs_model_nli(config: PipelineConfig, record: Any) -> bool:
    """Whether a record will ask the NLI model (not only its own relations)."""
    from .nli.factory import uses_record_relations

    return not uses_record_relations(config.models.nli, record.relations)


def dataset_summary(rows: Any) -> dict[str, Any]:
    """The one dataset summary (:func:`~fact_reasoner.scores.summarize_rows`) of the written rows,
    with the engines that produced them."""
    rows = list(rows)
    out = summarize_rows(rows).as_dict()
    out["engines"] = sorted({row["engine"]["algorithm"] for row in rows})
    return out


def open_results(
    out_path: Path,
    settings: dict[str, Any],
    *,
    overwrite: bool,
    executor: Any,
    elsewhere: str,
    key_field: str = "record_key",
    normalise: Callable[[Any], Any] | None = None,
) -> ResultWriter:
    """The locked output of a run whose rows are made with ``settings``, its finished rows read
    back for resuming (shared by ``fact-reasoner`` and ``fact-reasoner ragas``).

    Raises :class:`~fact_reasoner.errors.SettingsMismatch` when the rows already there were made
    with other settings (the message names the first differences and suggests ``--overwrite``
    or ``elsewhere``, the flags that choose another output); on any error the writer and
    ``executor`` are closed first. ``normalise`` (default :func:`with_default_pipeline`) turns
    the settings of a row written by an earlier version into today's spelling before comparing.
    """
    normalise = normalise or with_default_pipeline
    try:
        writer = ResultWriter(out_path, key_field=key_field, overwrite=overwrite)
    except BaseException:  # locked, or not usable as an output
        executor.close()
        raise
    previous = {json.dumps(normalise(row.get("settings")), sort_keys=True) for row in writer.done.values()}
    if previous and previous != {json.dumps(settings, sort_keys=True)}:
        writer.close()
        executor.close()
        other = json.loads(sorted(previous)[0])
        raise SettingsMismatch(
            f"{out_path} holds results made with other settings "
            f"({settings_difference(other, settings)}); use --overwrite, or another {elsewhere}"
        )
    return writer


def with_default_pipeline(settings: Any) -> Any:
    """The settings of a row written by an earlier version in today's spelling, so that such
    outputs still resume where today's settings make the same results: a row written before
    ``--pipeline`` existed gets the pipeline it was made by (FactReasoner's), and its graph
    settings are read by :func:`~fact_reasoner.graph.upgrade_graph_settings`; other settings
    as they are."""
    if not isinstance(settings, dict):
        return settings
    if isinstance(settings.get("graph"), dict):
        settings = settings | {"graph": upgrade_graph_settings(settings["graph"])}
    if "pipeline" not in settings:
        return {"pipeline": {"name": "factreasoner"}} | settings
    return settings


def settings_difference(before: Any, now: Any, limit: int = 6) -> str:
    """The settings that differ, as ``group.field: <before> in the file, <now> now`` (at most
    ``limit`` of them, then how many more)."""

    def flat(value: Any, prefix: str = "") -> dict[str, Any]:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                out |= flat(item, f"{prefix}{key}.")
            return out
        return {prefix.rstrip("."): value}

    old, new = flat(before), flat(now)
    changes = [
        f"{key}: {json.dumps(old.get(key))} in the file, {json.dumps(new.get(key))} now"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]
    more = f"; {len(changes) - limit} more" if len(changes) > limit else ""
    return "; ".join(changes[:limit]) + more


__all__ = [
    "AssessJob",
    "DEFAULT_OUTPUT_DIR",
    "ExportReport",
    "RunReport",
    "dataset_summary",
    "default_output_file",
    "export_models",
    "needs_model_nli",
    "run_dataset",
    "settings_difference",
    "with_default_pipeline",
    "write_errors",
]
