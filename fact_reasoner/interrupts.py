"""Ctrl-C and SIGTERM: the run stops at once and keeps every finished record.

Python runs a signal handler in the main thread, between two bytecodes. A model call (the
embedded llama.cpp server, an HTTP request, an ONNX session) is one long call into C: a
Ctrl-C that arrives during it waited until the call returned, tens of seconds with the
embedded model (``docs/measurements.md``). So the main thread never makes such a call during
a dataset run:

- :func:`call_interruptibly` runs one item's work (a record's whole assessment) on a worker
  thread while the main thread waits on a lock, which a signal interrupts at once. On an
  interrupt the item is *abandoned*: its thread is left to finish or die with the process, and
  what it returns is dropped. Every row is written by the main thread, and only once its
  item's work is complete, so nothing half-made reaches the output; a model call that the
  abandoned thread completes caches its whole answer (the caches are SQLite, whose
  transactions a killed process cannot tear).
- :func:`stop_on_signals`: inside the block, the first SIGINT or SIGTERM raises
  :class:`KeyboardInterrupt` (SIGTERM as :class:`_Terminated`); from then on both signals have
  their default action, so a second Ctrl-C ends the process at once, whatever it is doing.
- :func:`deferred`: a block that a first signal does not cut short (the runner writes a
  finished row in one): the interrupt is raised when the block ends, so a record whose work
  was done when Ctrl-C came is still written.
- :func:`ends_at_once`: a block of one long call into C that holds the GIL — the embedded
  model's load, one llama.cpp call of seconds during which no Python code of any thread runs,
  the signal handler included, so the first Ctrl-C waited for the whole load. Within it (inside
  :func:`stop_on_signals`) SIGINT and SIGTERM have their default action: the process ends at
  once, as a shell reports a process that Ctrl-C ended (status 130), without the run's closing
  lines. Nothing is lost: every row written is whole and every cache entry committed, and the
  load has made nothing yet. The handlers belong to the main thread, so a block on an item's
  thread asks the main thread, which waits in :func:`call_interruptibly`, to swap them.
- :func:`abandoned`: the item threads still running after an interrupt. The command line ends
  an interrupted process with ``os._exit`` once it has printed what was kept: a C call still
  running on such a thread would otherwise hold up the interpreter's shutdown, or abort it
  when the thread comes back to Python after the interpreter is gone. A program that calls the
  runner itself may wait for them or exit the same way.

Signal handlers belong to the main thread: a run started from another thread leaves the
signals as they are and runs items on that thread (as before this module existed).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["abandoned", "call_interruptibly", "deferred", "ends_at_once", "stop_on_signals"]

T = TypeVar("T")

#: how often the waiting main thread looks again: a signal the kernel gives the main thread
#: interrupts its wait at once, one given to another thread is seen at the next look
_POLL_SECONDS = 0.2

#: how long a thread asking the main thread for something waits for it to be done
_ASK_SECONDS = 1.0

_abandoned: list[threading.Thread] = []
#: what other threads ask the main thread to do (its signal handlers are its own), and the event
#: that wakes the main thread's wait in call_interruptibly (an item done, or a request)
_main_requests: list[tuple[Callable[[], None], threading.Event]] = []
_main_wake = threading.Event()
_main_waiting = 0
#: blocks of ends_at_once in progress, and whether SIGINT/SIGTERM are at their default for them
_at_once = 0
_defaulted = False
_depth = 0
_deferring = 0
_pending: signal.Signals | None = None
_previous: dict[int, Any] = {}
_lock = threading.Lock()


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop now, keep everything written."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _interrupt(signum: int | signal.Signals) -> KeyboardInterrupt:
    return _Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _first_signal(signum: int, frame: Any) -> None:
    """The first SIGINT/SIGTERM: a second one gets the default action (the process ends at
    once), and this one interrupts the main thread (at the end of a :func:`deferred` block)."""
    global _pending
    for each in (signal.SIGINT, signal.SIGTERM):
        signal.signal(each, signal.SIG_DFL)
    if _deferring:
        _pending = signal.Signals(signum)
        return
    raise _interrupt(signum)


@contextmanager
def deferred() -> Iterator[None]:
    """A block that the first signal does not cut short: its interrupt is raised when the block
    ends (a second signal still ends the process at once)."""
    global _deferring, _pending
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if _deferring == 0:
            _raise_pending()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM raises :class:`KeyboardInterrupt`; a second
    ends the process at once. Nested blocks share the outermost one's handlers, which are
    restored when it ends. Outside the main thread, nothing changes."""
    global _depth, _defaulted
    if not _in_main_thread():
        yield
        return
    if _depth == 0:
        for each in (signal.SIGINT, signal.SIGTERM):
            _previous[each] = signal.signal(each, _first_signal)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            for number, handler in _previous.items():
                signal.signal(number, handler)
            _previous.clear()
            _defaulted = False
            _raise_pending()


def _raise_pending() -> None:
    global _pending
    if _pending is not None:
        signum, _pending = _pending, None
        raise _interrupt(signum)


@contextmanager
def ends_at_once() -> Iterator[None]:
    """A block of one long call into C that holds the GIL (the embedded model's load): inside
    :func:`stop_on_signals`, the first SIGINT or SIGTERM ends the process at once (their default
    action) instead of when the call returns, from whichever thread the block runs (see the
    module docstring). Outside it, or with the first signal already come, nothing changes."""
    global _at_once
    with _lock:
        _at_once += 1
        first = _at_once == 1
    if first:
        _on_main_thread(_to_default)
    try:
        yield
    finally:
        with _lock:
            _at_once -= 1
            last = _at_once == 0
        if last:
            _on_main_thread(_to_first_signal)


def _to_default() -> None:
    """(Main thread.) SIGINT and SIGTERM to their default action, while this process's first
    signal handler is theirs (a run inside stop_on_signals, no signal come yet)."""
    global _defaulted
    if _depth and not _defaulted and signal.getsignal(signal.SIGINT) is _first_signal:
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, signal.SIG_DFL)
        _defaulted = True


def _to_first_signal() -> None:
    """(Main thread.) The handlers :func:`_to_default` set aside, back (when no block needs them
    at their default any more and the run is still on)."""
    global _defaulted
    if _defaulted and _depth and not _at_once:
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, _first_signal)
    _defaulted = _defaulted and bool(_at_once)


def _on_main_thread(action: Callable[[], None]) -> bool:
    """Run ``action`` on the main thread: now, from it; else by asking the main thread while it
    waits in :func:`call_interruptibly` (False, and nothing done, when it is not waiting there
    or does not answer within :data:`_ASK_SECONDS`)."""
    if _in_main_thread():
        action()
        return True
    done = threading.Event()
    request = (action, done)
    with _lock:
        if not _main_waiting:
            return False
        _main_requests.append(request)
    _main_wake.set()
    if done.wait(_ASK_SECONDS):
        return True
    with _lock:
        if request in _main_requests:
            _main_requests.remove(request)
            return False
    return True


def _serve_main_requests() -> None:
    """(Main thread.) Do what other threads asked (:func:`_on_main_thread`), in order."""
    while True:
        with _lock:
            if not _main_requests:
                return
            action, done = _main_requests.pop(0)
        try:
            action()
        finally:
            done.set()


def call_interruptibly(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``, run on a worker thread while the main thread waits, so that Ctrl-C
    acts at once instead of after the call. Its result or exception is returned or raised as
    if called directly. On :class:`KeyboardInterrupt` the call is abandoned (see
    :func:`abandoned`) and the interrupt raised; if the call had just finished, its result is
    returned and (inside :func:`stop_on_signals`) the interrupt raised at the end of the next
    :func:`deferred` block, once the result is used. Called outside the main thread, it simply
    calls ``function``: no signal would reach that thread anyway."""
    global _pending, _main_waiting
    if not _in_main_thread():
        return function(*args)
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # handed to the waiting thread, raised there
            outcome["error"] = error
        finally:
            finished.set()
            _main_wake.set()

    thread = threading.Thread(target=work, name="fact-reasoner-item", daemon=True)
    with _lock:
        _main_waiting += 1
    try:
        thread.start()
        # the main thread waits for the item, and does what the item's thread asks of it
        # (ends_at_once); a signal interrupts the wait at once
        while not finished.is_set():
            _main_wake.wait(_POLL_SECONDS)
            _main_wake.clear()
            _serve_main_requests()
        thread.join()
    except KeyboardInterrupt as interrupt:
        if outcome and not thread.is_alive() and _depth and _pending is None:
            # the work was done when the interrupt was noticed: its result is kept, and the
            # interrupt raised once it is used (at the end of the next deferred block)
            _pending = signal.SIGTERM if isinstance(interrupt, _Terminated) else signal.SIGINT
        else:
            with _lock:
                _abandoned.append(thread)
            raise
    finally:
        with _lock:
            _main_waiting -= 1
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def abandoned() -> list[threading.Thread]:
    """The threads of interrupted items that are still running (their results are dropped)."""
    with _lock:
        _abandoned[:] = [thread for thread in _abandoned if thread.is_alive()]
        return list(_abandoned)
