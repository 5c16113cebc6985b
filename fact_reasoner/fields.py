"""How a setting is declared: a pydantic ``Field`` with its description and command-line metadata.

A setting is declared once, where it belongs (:class:`~fact_reasoner.graph.GraphOptions` beside
the graph, the other groups in :mod:`fact_reasoner.config`); the command line
(:mod:`fact_reasoner.cli_options`) and the resume fingerprint
(:meth:`~fact_reasoner.config.PipelineConfig.settings`) read this metadata instead of repeating it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import Field

__all__ = ["option"]


def option(
    default: Any = None,
    description: str = "",
    *,
    default_factory: Callable[[], Any] | None = None,
    dest: str | None = None,
    flags: Sequence[str] | None = None,
    aliases: Sequence[str] = (),
    metavar: str | None = None,
    parse: str | None = None,
    affects_results: bool = True,
    only_when: tuple[str, Any] | None = None,
    omit_default: bool = False,
    cli: bool = True,
    registry: str | None = None,
    closed: bool = False,
    switches: Mapping[str, Any] | None = None,
) -> Any:
    """A setting's ``Field``.

    Parameters
    ----------
    default, default_factory:
        The one default of the setting.
    description:
        Help text (also the ``--help`` line).
    dest:
        Its flat name (flag and top-level shorthand), when not the field name.
    flags:
        The command-line flags, when not ``--<dest with dashes>`` (plus ``--<dest>`` if it has
        underscores, the spelling IBM's tool uses). A boolean whose default is True is turned
        off by its flag (e.g. ``--no-cache``).
    aliases:
        Extra spellings added to the derived flags (``--K`` for ``--k``).
    parse:
        ``"key_value"``: a repeatable ``KEY=VALUE`` flag collected into a dict (JSON values).
    affects_results:
        False for settings that cannot change a result (threads, cache location): they are left
        out of the settings that a resumed run must share.
    cli:
        False keeps the setting off the command line.
    registry:
        The kind of backend the setting names (a key of :data:`fact_reasoner.registry.KINDS`):
        ``--help`` lists that registry's names and descriptions when the parser is built.
    closed:
        With ``registry``: the flag takes only the registered names (argparse ``choices``).
    only_when:
        ``(field, value)``: the setting can change a result only when that other field of its
        group has that value, or one of them when ``value`` is a sequence (a backend's own option): otherwise it is left out of the settings
        a resumed run must share, so adding such an option does not refuse the outputs of
        earlier versions.
    switches:
        Flags that take no value and set the setting to a fixed one, ``{flag: value}``
        (``--use-priors`` for ``--factor-tables priors``, IBM's spelling).
    omit_default:
        The setting is left out of the settings a resumed run must share while it has its
        default value (which reproduces what the program did before the setting existed): adding
        it does not refuse the outputs written before, and turning it on does.
    """
    extra: dict[str, Any] = {"affects_results": affects_results, "cli": cli}
    for key, value in (
        ("dest", dest),
        ("flags", list(flags) if flags else None),
        ("metavar", metavar),
        ("parse", parse),
        ("registry", registry),
    ):
        if value is not None:
            extra[key] = value
    if aliases:
        extra["aliases"] = list(aliases)
    if closed:
        extra["closed"] = True
    if only_when is not None:
        condition_field, wanted = only_when
        extra["only_when"] = [condition_field, list(wanted) if isinstance(wanted, (list, tuple)) else wanted]
    if omit_default:
        extra["omit_default"] = True
    if switches:
        extra["switches"] = dict(switches)
    if default_factory is not None:
        return Field(default_factory=default_factory, description=description, json_schema_extra=extra)
    return Field(default, description=description, json_schema_extra=extra)
