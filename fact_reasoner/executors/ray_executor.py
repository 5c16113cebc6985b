"""The Ray executor: batches of items to Ray actors, each holding its own stages.

``--executor ray`` (needs the ``distributed`` extra: ``pip install -e '.[distributed]'`` in this project's checkout).

- **Where**: ``--ray-address`` unset starts a local Ray instance on this machine (stopped when
  the run ends); ``auto`` joins the cluster that ``ray start`` runs on this machine;
  ``ray://HOST:10001`` connects through Ray Client.
- **Actors hold their stages.** ``--workers N`` actors (default: one per CPU of the cluster)
  each rebuild the stages from the job's :class:`~fact_reasoner.settings.config.PipelineConfig` once —
  model loaded once per actor, its own cache connection — and then take batches of
  ``--batch-size`` items. Each actor reserves ``CPUs / N`` CPUs of the cluster and, unless
  ``--threads`` is given, runs its models (ONNX Runtime, llama.cpp) with that many threads
  (at least 1), so N actors on N cores do not oversubscribe them.
- **Same code and defaults on the workers.** When this process imports ``fact_reasoner`` from
  a source checkout (not an installed package), the actors get that directory first on their
  ``PYTHONPATH`` (a Ray ``runtime_env``); an installed package is imported as installed, so on
  a cluster every node needs the same version. The variables settings fall back to
  (``FACT_REASONER_BASE_URL``, ``FACT_REASONER_MODEL`` …) go with them; API keys do not.
- **Faults.** An item that fails is a failed item, as locally. An actor that dies (killed, out
  of memory, its machine lost) is replaced; its batches in flight go back to the queue and run
  on another actor, so no item is lost or done twice; a batch whose actors die
  :data:`MAX_ATTEMPTS` times fails its items (:class:`~.base.WorkerLost`) instead of killing
  every actor in turn. Stopping the iteration (Ctrl-C, an error in the driver) kills the
  actors at once: nothing keeps running on the cluster.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import site
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SetupError
from ..settings.registry import install_hint
from .base import Executor, Job, Outcome, Worker, WorkerError, WorkerLost, WorkerStats

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import ExecutionOptions

__all__ = ["FORWARDED_VARIABLES", "MAX_ATTEMPTS", "RayExecutor", "worker_python_path"]

logger = logging.getLogger(__name__)

#: the Ray setting (read from the environment by the raylet) for its workers' nice level
WORKER_NICENESS = "RAY_worker_niceness"

#: times a batch is sent to a new actor after the actor holding it died
MAX_ATTEMPTS = 3
#: batches queued on each actor, so it never waits for the driver between two batches
DEPTH = 2
INSTALL_HINT = install_hint("distributed")
#: the ``fact_reasoner`` package this module belongs to (where a worker imported it from)
PACKAGE_DIR = Path(__file__).parent.parent
#: environment variables that settings fall back to; the driver's values go to the actors
FORWARDED_VARIABLES = (
    "FACT_REASONER_BASE_URL",
    "FACT_REASONER_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "FACT_REASONER_CACHE",
    "FACT_REASONER_NO_INSTALL",
    "MERLIN_PATH",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as error:
        raise SetupError(f"--executor ray needs the Python package 'ray': {INSTALL_HINT} ({error})") from None
    return ray


def _is_site_directory(path: Path) -> bool:
    sites = {Path(p).resolve() for p in [*site.getsitepackages(), site.getusersitepackages()]}
    return path in sites or path.name in ("site-packages", "dist-packages")


def worker_python_path(extra: Sequence[str | Path] = ()) -> list[str]:
    """The directories Ray workers put first on ``sys.path``: the one this process imports
    ``fact_reasoner`` from, when that is a source checkout rather than an installed package, then
    ``extra`` (e.g. the repository root, for a job defined in the experiments package)."""
    root = PACKAGE_DIR.resolve().parent
    paths = [] if _is_site_directory(root) else [str(root)]
    for path in extra:
        resolved = str(Path(path).resolve())
        if resolved not in paths:
            paths.append(resolved)
    return paths


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _portable(outcome: Outcome) -> Outcome:
    """The outcome with an error that pickles (else a :class:`WorkerError` with its type name)."""
    if outcome.error is None:
        return outcome
    try:
        pickle.loads(pickle.dumps(outcome.error))
    except Exception:
        return replace(outcome, error=WorkerError(type(outcome.error).__name__, str(outcome.error)))
    return outcome


class RecordWorker:
    """The actor: one :class:`~.base.Worker` (its state built on the first batch)."""

    def __init__(self, job: Job, config: Any, name: str) -> None:
        self.worker = Worker(job, name, config)

    def describe(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "node": socket.gethostname(), "code": str(PACKAGE_DIR)}

    def run_batch(self, batch: list[tuple[int, Any]]) -> list[Outcome]:
        return [_portable(outcome) for outcome in self.worker.run_batch(batch)]


@dataclass
class _Batch:
    items: list[tuple[int, Any]]
    attempts: int = 0


@dataclass
class _Slot:
    """One actor as the driver sees it."""

    name: str
    actor: Any
    starting: Any  # the pending describe() call; None once the actor answered
    alive: bool = True
    busy: int = 0
    info: dict[str, Any] = field(default_factory=dict)


class RayExecutor(Executor):
    """Runs a job on Ray actors (see the module docstring).

    Parameters
    ----------
    options:
        ``ray_address``, ``workers`` and ``batch_size`` (``config.execution``).
    code_paths:
        More directories for the workers' ``PYTHONPATH`` (where a job's own module lives).
    start_timeout:
        Seconds to wait for the first actor to start before giving up (a cluster without room
        for one).
    """

    name = "ray"

    def __init__(
        self, options: "ExecutionOptions", *, code_paths: Sequence[str | Path] = (), start_timeout: float = 300.0
    ) -> None:
        super().__init__()
        self.ray = _import_ray()
        self.options = options
        self.code_paths = list(code_paths)
        self.start_timeout = start_timeout
        self.deaths = 0
        self._started_ray = False
        self._slots: list[_Slot] = []
        self._job: Job | None = None
        self._config: Any = None
        self._cpus_each = 1.0
        self._replacements = 0
        self._serial = 0
        self._last_error: str | None = None

    # -- the cluster and its actors --------------------------------------------------------

    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
        address = self.options.ray_address
        if address is None:  # a local instance of this machine, ours alone
            # "local", not None: None would join whatever /tmp/ray/ray_current_cluster names, and a
            # cluster killed earlier leaves that file behind ("must not provide num_cpus").
            address = "local"
            kwargs.update(num_cpus=os.cpu_count() or 1, include_dashboard=False)
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGTERM) if main_thread else None
        # Ray starts its workers at nice 15 unless told otherwise; the actors then yield their
        # cores to anything else on the machine, the driver and the raylet included, and a
        # worker ran 2-3x slower than the same work in a local run. The raylet started here
        # reads this from its environment (a cluster's nodes: RAY_worker_niceness=0 ray start …).
        niceness = os.environ.get(WORKER_NICENESS)
        if address == "local" and niceness is None:
            os.environ[WORKER_NICENESS] = "0"
        try:
            ray.init(address=address, **kwargs)
        except Exception as error:
            where = self.options.ray_address or "a local Ray instance"
            raise SetupError(f"cannot start Ray on {where}: {_first_line(error)}") from error
        finally:
            if niceness is None:
                os.environ.pop(WORKER_NICENESS, None)
            if main_thread:  # ray.init replaces the driver's SIGTERM handler with sys.exit
                signal.signal(signal.SIGTERM, previous)
        self._started_ray = True

    def _start(self, job: Job) -> None:
        """Actors for ``job``: the ones already running it, or new ones."""
        if self._job is job and any(slot.alive for slot in self._slots):
            return
        self._stop_workers()
        self._connect()
        cpus = float(self.ray.cluster_resources().get("CPU", 1.0))
        workers = self.options.workers or max(1, int(cpus))
        # whole CPUs when they suffice, else a share of them (more actors than cores)
        self._cpus_each = float(max(1, int(cpus // workers))) if workers <= cpus else cpus / workers
        threads = job.config.models.threads or max(1, int(self._cpus_each))
        self._config = job.config if job.config.models.threads else job.config.with_options(threads=threads)
        self._job = job
        self._replacements = 0
        self._max_replacements = 2 * workers
        for _ in range(workers):
            self._add_slot()
        logger.info(
            "Ray: %d worker(s), %.3g CPU(s) and %d thread(s) each, batches of %d",
            workers,
            self._cpus_each,
            threads,
            self.options.batch_size,
        )

    def _runtime_env(self) -> dict[str, Any] | None:
        """The actors' environment: this code first on ``PYTHONPATH``, and the driver's values of
        the variables that settings default to (:data:`FORWARDED_VARIABLES`), so an actor on
        another machine resolves the same server, model and cache directory. API keys are not
        sent: on a cluster they come from the environment of each machine's ``ray start``."""
        env = {name: os.environ[name] for name in FORWARDED_VARIABLES if name in os.environ}
        paths = worker_python_path(self.code_paths)
        if paths:
            inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p not in paths]
            env["PYTHONPATH"] = os.pathsep.join(paths + inherited)
        return {"env_vars": env} if env else None

    def _add_slot(self) -> None:
        name = f"w{self._serial}"
        self._serial += 1
        remote = self.ray.remote(RecordWorker).options(
            num_cpus=self._cpus_each, max_restarts=0, max_task_retries=0, runtime_env=self._runtime_env()
        )
        actor = remote.remote(self._job, self._config, name)
        self._slots.append(_Slot(name, actor, actor.describe.remote()))

    def _stop_workers(self) -> None:
        for slot in self._slots:
            if slot.alive:
                try:
                    self.ray.kill(slot.actor, no_restart=True)
                except Exception:  # already gone
                    pass
                slot.alive = False
        self._slots = []
        self._job = None

    def close(self) -> None:
        """Kill the actors; stop the local Ray instance (or disconnect) if this executor started it."""
        if not self.ray.is_initialized():
            return
        self._stop_workers()
        if self._started_ray:
            self.ray.shutdown()
            self._started_ray = False

    def warm_up(self, job: Job) -> float:
        """Start the actors for ``job`` now and wait until each one runs (their models load with
        their first batch); returns the seconds taken. :meth:`map` does this itself: this is for
        timing a run without its start-up."""
        start = time.perf_counter()
        self._start(job)
        for slot in list(self._slots):
            if slot.alive and slot.starting is not None:
                self._started(slot, slot.starting)
        return time.perf_counter() - start

    def worker_pids(self) -> dict[str, int]:
        """The process id of every running actor that has started, by worker name."""
        return {s.name: s.info["pid"] for s in self._slots if s.alive and "pid" in s.info}

    # -- the run ---------------------------------------------------------------------------

    def map(self, job: Job, items: Sequence[Any], *, local_state: Any = None) -> Iterator[Outcome]:
        from ray.exceptions import RayError, RayTaskError

        if not items:
            return
        self._start(job)
        numbered = list(enumerate(items))
        size = self.options.batch_size
        pending = deque(_Batch(numbered[i : i + size]) for i in range(0, len(numbered), size))
        inflight: dict[Any, tuple[_Slot, _Batch]] = {}
        yielded: set[int] = set()  # each item once, whatever happens to the actors
        waiting_since = time.monotonic()
        finished = False
        try:
            while pending or inflight:
                for slot in self._slots:
                    while slot.alive and slot.starting is None and slot.busy < DEPTH and pending:
                        batch = pending.popleft()
                        inflight[slot.actor.run_batch.remote(batch.items)] = (slot, batch)
                        slot.busy += 1
                starting = {s.starting: s for s in self._slots if s.alive and s.starting is not None}
                if not inflight and not starting:
                    raise SetupError(
                        f"no Ray worker is left to run the remaining items (last error: {self._last_error})"
                    )
                done, _ = self.ray.wait([*inflight, *starting], num_returns=1, timeout=1.0)
                if not done:
                    ready = any(s.alive and s.starting is None for s in self._slots)
                    if not ready and time.monotonic() - waiting_since > self.start_timeout:
                        raise SetupError(
                            f"no Ray worker started within {self.start_timeout:g} s; the cluster has "
                            f"{self.ray.cluster_resources().get('CPU', 0):g} CPU(s) and each worker asks for "
                            f"{self._cpus_each:g}: ask for fewer --workers"
                        )
                    continue
                for ref in done:
                    if ref in starting:
                        self._started(starting[ref], ref)
                        continue
                    slot, batch = inflight.pop(ref)
                    slot.busy -= 1
                    try:
                        outcomes = self.ray.get(ref)
                    except RayTaskError as error:  # the batch call itself failed (not one record)
                        message = _first_line(error)
                        outcomes = [
                            Outcome(i, error=WorkerError("RayTaskError", message), worker=slot.name)
                            for i, _ in batch.items
                        ]
                    except RayError as error:  # the actor died or cannot be reached
                        outcomes = self._lost(slot, batch, error, pending)
                    for outcome in outcomes:
                        if outcome.index not in yielded:
                            yielded.add(outcome.index)
                            yield self._count(outcome)
            finished = True
        finally:
            if not finished:  # interrupted or abandoned: stop the work on the cluster now
                self._stop_workers()

    def _started(self, slot: _Slot, ref: Any) -> None:
        try:
            slot.info = dict(self.ray.get(ref))
        except Exception as error:  # the actor could not start (e.g. fact_reasoner not importable there)
            slot.alive = False
            self._last_error = f"worker {slot.name} could not start: {_first_line(error)}"
            logger.warning("Ray: %s", self._last_error)
            return
        slot.starting = None
        self.stats.setdefault(slot.name, WorkerStats()).info.update(slot.info)
        logger.info("Ray: worker %s started (pid %s on %s)", slot.name, slot.info.get("pid"), slot.info.get("node"))

    def _lost(self, slot: _Slot, batch: _Batch, error: BaseException, pending: deque[_Batch]) -> list[Outcome]:
        """An actor died with this batch: queue it again for another actor (no outcome yet), or
        fail its items after MAX_ATTEMPTS."""
        self._last_error = f"worker {slot.name} died: {_first_line(error)}"
        if slot.alive:
            slot.alive = False
            self.deaths += 1
            try:
                self.ray.kill(slot.actor, no_restart=True)
            except Exception:
                pass
            logger.warning(
                "Ray: worker %s (pid %s) died (%s); its records in flight go to another worker",
                slot.name,
                slot.info.get("pid", "?"),
                _first_line(error),
            )
            if self._replacements < self._max_replacements:
                self._replacements += 1
                self._add_slot()
        batch.attempts += 1
        if batch.attempts < MAX_ATTEMPTS:
            pending.appendleft(batch)
            return []
        lost = WorkerLost(f"the Ray workers assessing it died {batch.attempts} times (last: {_first_line(error)})")
        return [Outcome(index, error=lost, worker=slot.name) for index, _ in batch.items]
