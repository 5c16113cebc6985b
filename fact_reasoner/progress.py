"""Progress bars that also work in log files.

tqdm's ``disable=None`` hides the bar when stderr is not a terminal, which is exactly when a
long run is started with ``nohup … > run.log`` and its progress matters most. Here the bar is
shown unless the user asked for quiet; off a terminal it is redrawn at most once a minute, each
time on a line of its own, so a log gets one readable line (done/total, rate, ETA) per minute
instead of nothing or one endless carriage-return line. The bar's first drawing (nothing done
yet) is left out of a log: a short run gets one line, its final count, not "0/2" then "2/2".

Within a record (:func:`stage_progress`): a run of a few records spends minutes inside one — the
language model atomizes a 12-sentence answer in about 50 s on two cores — while the batch bar
stays at 0/1. Inside :func:`stages_shown` (the dataset runner turns it on for at most
:data:`STAGE_PROGRESS_MAX_RECORDS` records) each stage of each record gets a bar of its own:
sentences atomized, atoms revised, pairs judged. A stage's bar appears only once the stage has
run :data:`STAGE_BAR_DELAY_SECONDS` (a stage answered from the cache draws nothing, so a quick
run still prints one line). Elsewhere (many records, ``--quiet``, the server, the library
called directly) a stage reports into nothing.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

LOG_INTERVAL_SECONDS = 60.0
#: a run of at most this many records also shows the progress of each stage within a record
STAGE_PROGRESS_MAX_RECORDS = 3
#: a stage's bar is drawn only after the stage has run this long (tqdm's ``delay``)
STAGE_BAR_DELAY_SECONDS = 1.0


class _LineWriter:
    """Turns tqdm's in-place redraws ("\\r" + bar) into one line per redraw; writes nothing while
    ``muted`` (the bar's first drawing, when nothing is done yet)."""

    def __init__(self, stream: Any, *, muted: bool = False):
        self.stream = stream
        self.muted = muted

    def write(self, text: str) -> None:
        if self.muted:
            return
        redraw = text.startswith("\r")
        text = text.replace("\r", "").rstrip(" ")
        if text.strip():
            self.stream.write(text if text.endswith("\n") or not redraw else text + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(
    total: int,
    *,
    desc: str | None = None,
    unit: str = "it",
    quiet: bool = False,
    file: Any = None,
    delay: float = 0.0,
) -> Any:
    """A ``tqdm`` bar over ``total`` items on ``file`` (default stderr); nothing when ``quiet``;
    nothing until ``delay`` seconds have passed (nothing at all when it ends before)."""
    from tqdm import tqdm

    stream = file if file is not None else sys.stderr
    if bool(getattr(stream, "isatty", lambda: False)()):
        return tqdm(total=total, desc=desc, unit=unit, disable=quiet, file=stream, dynamic_ncols=True, delay=delay)
    writer = _LineWriter(stream, muted=True)
    bar = tqdm(
        total=total,
        desc=desc,
        unit=unit,
        disable=quiet,
        file=writer,
        ncols=100,
        mininterval=LOG_INTERVAL_SECONDS,
        maxinterval=LOG_INTERVAL_SECONDS,
        delay=delay,
    )
    writer.muted = False  # the first drawing (0 done) is over
    return bar


#: where stage bars go while :func:`stages_shown` is active (None: nowhere). A process-wide
#: setting, not a context variable: the runner works on a record in a thread of its own
#: (:func:`fact_reasoner.interrupts.call_interruptibly`), which would not see one.
_stage_stream: Any = None
_stage_lock = threading.Lock()


@contextmanager
def stages_shown(*, file: Any = None) -> Iterator[None]:
    """Within the block, :func:`stage_progress` draws a bar per stage on ``file`` (default stderr)."""
    global _stage_stream
    with _stage_lock:
        before, _stage_stream = _stage_stream, file if file is not None else sys.stderr
    try:
        yield
    finally:
        with _stage_lock:
            _stage_stream = before


def stage_progress_active() -> bool:
    """Whether stage bars are being drawn (inside :func:`stages_shown`)."""
    return _stage_stream is not None


def _nothing(n: int = 1) -> None:
    """A stage's progress where no bar is drawn."""


@contextmanager
def stage_progress(stage: str, total: int, *, unit: str) -> Iterator[Callable[[int], None]]:
    """A bar for one stage of one record ("atomize: 5/12 sentences") while :func:`stages_shown`
    is active, advanced by the function this yields (from any thread); elsewhere, or with
    nothing to do, the function does nothing."""
    stream = _stage_stream
    if stream is None or total <= 0:
        yield _nothing
        return
    lock = threading.Lock()
    with progress_bar(total, desc=stage, unit=unit, file=stream, delay=STAGE_BAR_DELAY_SECONDS) as bar:

        def advance(n: int = 1) -> None:
            with lock:
                bar.update(n)

        yield advance
