"""The command line: ``fact-reasoner [COMMAND] …`` (also ``python -m fact_reasoner``).

Every command is a class in this package, registered once in :data:`COMMANDS` (a kind of
:mod:`fact_reasoner.settings.registry`, like the engines and NLI backends: an installed package adds a
command through the ``fact_reasoner.commands`` entry-point group). A command parses its
arguments, builds a job and hands it to the one runner
(:func:`fact_reasoner.runner.run_dataset`); its parser, help, config file and the way a run
ends are those of :class:`~fact_reasoner.commands.base.Command`.

``assess`` is the default: ``fact-reasoner --input-file …`` is ``fact-reasoner assess
--input-file …``. Any project error (:class:`~fact_reasoner.errors.FactReasonerError`) that
ends a command is caught once, in :func:`main`, and printed as one line ``error: <message>``;
the exit status is the error's ``exit_code``. Ctrl-C ends a command with status 130.
"""

from __future__ import annotations

import logging
import os
import sys

from ..errors import FactReasonerError, SetupError
from .base import COMMANDS, INTERRUPTED, Command

__all__ = ["COMMANDS", "DEFAULT_COMMAND", "Command", "configure_logging", "console_main", "main"]

# every command of ``fact-reasoner`` (COMMANDS is declared beside Command, in .base): a new
# command is one more line here, or an entry point of an installed package
COMMANDS.register(
    "assess",
    "fact_reasoner.commands.assess:Assess",
    description="assess a dataset or one response (the default command)",
    builtin=True,
)
COMMANDS.register(
    "correct",
    "fact_reasoner.commands.correct:Correct",
    description="a corrected response with citations, re-assessed",
    builtin=True,
)
COMMANDS.register(
    "ragas",
    "fact_reasoner.commands.ragas:Ragas",
    description="RAG metrics (faithfulness, factual correctness, …) on the same atoms and graphs",
    builtin=True,
)
COMMANDS.register(
    "index",
    "fact_reasoner.commands.index:Index",
    description="build or extend a retrieval store (chroma + BM25) from corpus files",
    builtin=True,
)
COMMANDS.register(
    "report",
    "fact_reasoner.commands.report:Report",
    description="a self-contained HTML report of result files",
    builtin=True,
)
COMMANDS.register(
    "serve",
    "fact_reasoner.commands.serve:Serve",
    description="serve checks over HTTP (FastAPI): POST /v1/assess, /v1/ragas, a page at /",
    builtin=True,
)
COMMANDS.register(
    "conformal",
    "fact_reasoner.commands.conformal:Conformal",
    description="fit a conformal filter on labelled rows: keep claims with a guaranteed error rate",
    builtin=True,
)

#: the command run when the first argument names none
DEFAULT_COMMAND = "assess"


def command(name: str) -> Command:
    """The command registered as ``name``; one whose module cannot be imported (an optional
    part not installed) raises :class:`~fact_reasoner.errors.SetupError`."""
    entry = COMMANDS.entry(name)
    try:
        return COMMANDS.make(entry.name)
    except ImportError as error:
        raise SetupError(f"`{name}` needs optional parts that are not installed: {error}") from error


def main(argv: list[str] | None = None) -> int:
    """``fact-reasoner [command] …``: the exit status. A project error
    (:class:`~fact_reasoner.errors.FactReasonerError`) ends the command with one line,
    ``error: <message>``, and the error's ``exit_code`` (2, or 1 for a failed record)."""
    from ..interrupts import stop_on_signals

    argv = list(sys.argv[1:] if argv is None else argv)
    typed = list(argv)  # for the command that resumes an interrupted run
    configure_logging(quiet="--quiet" in argv)
    try:
        with stop_on_signals():
            name = DEFAULT_COMMAND
            if argv and not argv[0].startswith("-"):
                if argv[0] not in COMMANDS:
                    print(
                        f"error: unknown command {argv[0]!r}; choose from: {', '.join(COMMANDS.available())}\n"
                        f"try 'fact-reasoner --help' for the options",
                        file=sys.stderr,
                    )
                    return 2
                name, argv = argv[0], argv[1:]
            chosen = command(name)
            args, parser = chosen.parse(argv)
            if getattr(args, "quiet", False):
                configure_logging(quiet=True)  # also when --config FILE says so
            if args.print_config:
                return chosen.print_config(args, parser)
            args.argv = typed
            return int(chosen.run(args, parser) or 0)
    except FactReasonerError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:  # before or after a dataset run, which reports its own
        print("interrupted", file=sys.stderr)
        return INTERRUPTED


def console_main() -> None:
    """The ``fact-reasoner`` program: :func:`main`, then the exit. After Ctrl-C, an abandoned
    model call may still be running in C code, which would hold up the interpreter's shutdown
    (or abort it, coming back to a finished interpreter): an interrupted process ends at once
    (``os._exit``), once everything it prints is flushed. Results and caches are on disk by
    then: every row was written and fsynced, every cache entry committed."""
    from ..interrupts import abandoned

    status = main()
    if status == INTERRUPTED or abandoned():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


def configure_logging(quiet: bool) -> None:
    """Library messages (model installation, loading) go to stderr, one line each, after
    ``[fact_reasoner]``; stdout stays for results (a single-response run prints its JSON there).

    The dataset run's own messages (``fact_reasoner.runner``: ``error: file:line: …``,
    ``resuming: …``) are the command's output lines: they keep their own prefix. Both are written
    above the progress bar, never on its line (the model is loaded while the bar is drawn)."""
    from .. import runner

    handler = _AboveProgressBar()
    handler.setFormatter(logging.Formatter("[fact_reasoner] %(message)s"))
    handler.addFilter(lambda record: not record.name.startswith(runner.__name__))
    run_handler = _AboveProgressBar()
    run_handler.addFilter(lambda record: record.name.startswith(runner.__name__))
    root = logging.getLogger("fact_reasoner")
    root.handlers[:] = [handler, run_handler]
    root.setLevel(logging.WARNING if quiet else logging.INFO)


class _AboveProgressBar(logging.Handler):
    """Writes each message as its own line on the current stderr, above a progress bar if one
    is shown (``tqdm.write``)."""

    def emit(self, record: logging.LogRecord) -> None:
        from tqdm import tqdm

        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # a logging handler must never raise into the run
            self.handleError(record)
