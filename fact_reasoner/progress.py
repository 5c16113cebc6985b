"""Progress bars that also work in log files.

tqdm's ``disable=None`` hides the bar when stderr is not a terminal, which is exactly when a
long run is started with ``nohup … > run.log`` and its progress matters most. Here the bar is
shown unless the user asked for quiet; off a terminal it is redrawn at most once a minute, each
time on a line of its own, so a log gets one readable line (done/total, rate, ETA) per minute
instead of nothing or one endless carriage-return line. The bar's first drawing (nothing done
yet) is left out of a log: a short run gets one line, its final count, not "0/2" then "2/2".
"""

from __future__ import annotations

import sys
from typing import Any

LOG_INTERVAL_SECONDS = 60.0


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
    total: int, *, desc: str | None = None, unit: str = "it", quiet: bool = False, file: Any = None
) -> Any:
    """A ``tqdm`` bar over ``total`` items on ``file`` (default stderr); nothing when ``quiet``."""
    from tqdm import tqdm

    stream = file if file is not None else sys.stderr
    if bool(getattr(stream, "isatty", lambda: False)()):
        return tqdm(total=total, desc=desc, unit=unit, disable=quiet, file=stream, dynamic_ncols=True)
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
    )
    writer.muted = False  # the first drawing (0 done) is over
    return bar
