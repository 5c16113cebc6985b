"""Command line: ``python -m fact_reasoner`` / ``fact-reasoner``.

The commands live in :mod:`fact_reasoner.commands` (one module each, registered once); this
module keeps the names other code imports: :func:`main`, :func:`console_main` and
:func:`build_assess_parser` (the default command's parser, with every flag).
"""

from __future__ import annotations

from .commands import COMMANDS, configure_logging, console_main, main
from .commands.assess import GATE_METRICS
from .commands.base import CommandParser


def build_assess_parser() -> CommandParser:
    """The parser of ``fact-reasoner`` (``assess``): its own flags, then one per setting."""
    from .commands.assess import Assess

    return Assess().build_parser()


__all__ = ["COMMANDS", "GATE_METRICS", "build_assess_parser", "configure_logging", "console_main", "main"]
