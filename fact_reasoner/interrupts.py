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

__all__ = ["abandoned", "call_interruptibly", "deferred", "stop_on_signals"]

T = TypeVar("T")

#: how often the waiting main thread looks again: a signal the kernel gives the main thread
#: interrupts its wait at once, one given to another thread is seen at the next look
_POLL_SECONDS = 0.2

_abandoned: list[threading.Thread] = []
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
    global _depth
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
            _raise_pending()


def _raise_pending() -> None:
    global _pending
    if _pending is not None:
        signum, _pending = _pending, None
        raise _interrupt(signum)


def call_interruptibly(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)``, run on a worker thread while the main thread waits, so that Ctrl-C
    acts at once instead of after the call. Its result or exception is returned or raised as
    if called directly. On :class:`KeyboardInterrupt` the call is abandoned (see
    :func:`abandoned`) and the interrupt raised; if the call had just finished, its result is
    returned and (inside :func:`stop_on_signals`) the interrupt raised at the end of the next
    :func:`deferred` block, once the result is used. Called outside the main thread, it simply
    calls ``function``: no signal would reach that thread anyway."""
    global _pending
    if not _in_main_thread():
        return function(*args)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # handed to the waiting thread, raised there
            outcome["error"] = error

    thread = threading.Thread(target=work, name="fact-reasoner-item", daemon=True)
    try:
        thread.start()
        while thread.is_alive():
            thread.join(_POLL_SECONDS)
    except KeyboardInterrupt as interrupt:
        if outcome and not thread.is_alive() and _depth and _pending is None:
            # the work was done when the interrupt was noticed: its result is kept, and the
            # interrupt raised once it is used (at the end of the next deferred block)
            _pending = signal.SIGTERM if isinstance(interrupt, _Terminated) else signal.SIGINT
        else:
            with _lock:
                _abandoned.append(thread)
            raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def abandoned() -> list[threading.Thread]:
    """The threads of interrupted items that are still running (their results are dropped)."""
    with _lock:
        _abandoned[:] = [thread for thread in _abandoned if thread.is_alive()]
        return list(_abandoned)
