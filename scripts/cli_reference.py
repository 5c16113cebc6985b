"""The command-line reference of the documentation site, generated from the commands' parsers.

    .venv-dev/bin/python -m scripts.cli_reference > cli.md

Nothing here is written by hand: each command registered in
:data:`fact_reasoner.commands.COMMANDS` builds its parser (the same one ``--help-all`` prints),
and each option becomes one row with its spellings, its value, its default, its key in a
``--config`` file and its help text. The settings' flags come from the settings model
(:mod:`fact_reasoner.settings.cli_options` makes them from the ``option(...)`` fields of
:class:`~fact_reasoner.settings.config.PipelineConfig`), so they are listed once, by group, with the
commands that take them; each command lists its own options. ``docs/hooks.py`` puts the page
into the site at every ``mkdocs build``, so the reference cannot drift from the code;
``tests/project/test_docs.py`` checks that every flag of every command is in it.
"""

from __future__ import annotations

import argparse
import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: options no config file sets (``_own_actions`` in :mod:`fact_reasoner.commands.base` skips them)
_NOT_IN_FILE = {"config", "print_config", "help", "help_all", argparse.SUPPRESS}

#: where the page lies in the site (``docs/`` holds no file of that name: it is generated)
PAGE = "reference/cli.md"


@dataclass
class _Setting:
    """One setting as the reference lists it: its flag, its switches and the commands taking it."""

    group: str
    field: str
    action: argparse.Action
    switches: list[argparse.Action] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)


def _cell(text: Any) -> str:
    """Text for a Markdown table cell: one line; pipes, angle brackets, stars and square brackets
    escaped (help texts are plain text: ``<input>.jsonl`` is no HTML tag, ``2 * 3`` no emphasis,
    ``NAME[=MODEL][@ROLE]`` no reference link)."""
    text = html.escape(" ".join(str(text).replace("%%", "%").split()), quote=False)
    return text.replace("|", "\\|").replace("*", "\\*").replace("[", "\\[").replace("]", "\\]")


def _code(text: str) -> str:
    return f"`{text}`"


def _value(action: argparse.Action) -> str:
    """What the option takes: nothing for a switch, else its metavar or its choices."""
    if action.nargs == 0:
        return ""
    if action.metavar:
        shown = str(action.metavar)
    elif action.choices is not None:
        shown = "{" + ",".join(str(c) for c in action.choices) + "}"
        if len(shown) > 40:
            shown = "NAME"
    elif getattr(action.type, "metavar", None):  # a number (fact_reasoner.settings.cli_options): N or X
        shown = str(action.type.metavar)  # type: ignore[union-attr]
    elif action.type is int:
        shown = "N"
    elif action.type is float:
        shown = "X"
    elif action.type is Path:
        shown = "PATH"
    else:
        shown = action.dest.upper()
    if action.nargs in ("+", "*"):
        shown += " …"
    return shown


def _spellings(action: argparse.Action) -> str:
    """``--top-k N`` first, the other spellings after it (IBM's underscores, short forms)."""
    if not action.option_strings:
        return _code(action.metavar or action.dest)  # type: ignore[arg-type]
    value = _value(action)
    first = action.option_strings[0] + (f" {value}" if value else "")
    others = action.option_strings[1:]
    return _code(first) + "".join(f"<br>{_code(s)}" for s in others)


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(default)s" in text:
        text = text.replace("%(default)s", str(action.default))
    return _cell(text)


def _own_default(action: argparse.Action) -> str:
    default = action.default
    if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 or default == []:
        return ""
    return _code(str(default))


def _setting_default(flag: Any) -> str:
    if not flag.show_default or flag.default is None or flag.default == {}:
        return ""
    return _code(str(flag.default).lower() if isinstance(flag.default, bool) else str(flag.default))


def _commands() -> list[tuple[str, str, Any, argparse.ArgumentParser]]:
    """(name, description, command, parser) of every registered command, in registration order."""
    from fact_reasoner.commands import COMMANDS, command

    out = []
    for name, description in COMMANDS.descriptions().items():
        chosen = command(name)
        out.append((name, description, chosen, chosen.build_parser()))
    return out


def _groups(parser: argparse.ArgumentParser) -> Iterable[tuple[str, list[argparse.Action]]]:
    for group in parser._action_groups:  # argparse keeps the sections only here
        actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS]
        if actions:
            yield str(group.title), actions


def cli_reference() -> str:
    """The whole page, as Markdown."""
    from fact_reasoner.settings.cli_options import config_flags

    flags = {flag.dest: flag for flag in config_flags()}
    commands = _commands()
    settings: dict[str, _Setting] = {}
    lines = [
        "# Command-line reference",
        "",
        "Generated at every build of this site from the commands' parsers and the settings model",
        "(`scripts/cli_reference.py`, run by `docs/hooks.py`): what `fact-reasoner COMMAND --help-all`",
        "prints, with each setting's key in a [`--config` file](../configuration.md). A setting's",
        "flag, its key in the file and its name in the output's `settings` are one declaration.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{name}`](#{name}) | {_cell(description)} |" for name, description, _, _ in commands]
    for name, _, chosen, parser in commands:
        _collect_settings(name, parser, flags, settings)
        lines += _command_section(name, chosen, parser, flags)
    lines += _settings_section(settings, flags)
    return "\n".join(lines) + "\n"


def _collect_settings(name: str, parser: Any, flags: dict[str, Any], settings: dict[str, _Setting]) -> None:
    """Note, for each setting ``name``'s parser takes, its flag, its switches and that ``name`` takes it."""
    for action in parser._actions:
        flag = flags.get(action.dest)
        if flag is None or action.dest not in getattr(parser, "settings_dests", set()):
            continue
        setting = settings.setdefault(f"{flag.group}.{flag.field}", _Setting(flag.group, flag.field, action))
        if _is_switch(action, flags):
            if all(action.option_strings != s.option_strings for s in setting.switches):
                setting.switches.append(action)
        elif name not in setting.commands:
            setting.commands.append(name)


def _command_section(name: str, chosen: Any, parser: Any, flags: dict[str, Any]) -> list[str]:
    """A command: its usage, description and examples, its own options by group, and links to
    the settings groups it takes."""
    dests = getattr(parser, "settings_dests", set())
    lines = ["", f"## `fact-reasoner {name}` {{#{name}}}", "", "```text", f"usage: {parser.usage}", "```", ""]
    texts = [(parser.description or "").strip(), (parser.epilog or "").rstrip()]
    lines += ["```text", "\n\n".join(t for t in texts if t), "```", ""]
    for title, actions in _groups(parser):
        own = [a for a in actions if a.dest not in dests and not _is_switch(a, flags)]
        if not own:  # a settings group: listed once, under Settings
            continue
        lines += [f"### {title}", "", "| option | default | in `--config` | what it does |", "|---|---|---|---|"]
        for action in own:
            # what a file can set: the command's own options, not help, the file itself or positionals
            settable = action.option_strings and action.dest not in _NOT_IN_FILE
            where = f"`[{name}] {action.dest}`" if settable else ""
            lines.append(f"| {_spellings(action)} | {_own_default(action)} | {where} | {_help(action)} |")
        lines.append("")
    groups = list(dict.fromkeys(flags[d].group for d in sorted(dests, key=list(flags).index) if d in flags))
    if groups:
        lines.append(f"Settings it takes: {', '.join(f'[{_group_title(g)}](#settings-{g})' for g in groups)}.")
        excluded = getattr(chosen, "settings_excluded", ())
        if excluded:
            lines.append(f"It fixes {', '.join(_code(e) for e in excluded)} itself (no flag, not in its file).")
        lines.append("")
    return lines


def _settings_section(settings: dict[str, _Setting], flags: dict[str, Any]) -> list[str]:
    """Every setting some command takes, by group, in the order the settings model declares them."""
    from fact_reasoner.settings.config import PipelineConfig

    order = [f"{flag.group}.{flag.field}" for flag in flags.values()]
    lines = [
        "## Settings {#settings}",
        "",
        "Each setting: its flag, its key in a `--config` file (`[group] name`, the name the output's",
        "`settings` use), its default, its help, and the commands that take it.",
    ]
    for group in PipelineConfig.GROUPS:
        members = sorted(
            (s for s in settings.values() if s.group == group), key=lambda s: order.index(f"{s.group}.{s.field}")
        )
        if not members:
            continue
        lines += [
            "",
            f"### {_group_title(group)} `[{group}]` {{#settings-{group}}}",
            "",
            "| option | default | in `--config` | what it sets | commands |",
            "|---|---|---|---|---|",
        ]
        for setting in members:
            flag = flags[setting.action.dest]
            spelled = _spellings(setting.action)
            for switch in setting.switches:
                spelled += "".join(f"<br>{_code(s)}" for s in switch.option_strings)
            switched = "".join(
                f" {', '.join(map(_code, s.option_strings))}: {_cell(s.help)}." for s in setting.switches
            )
            lines.append(
                f"| {spelled} | {_setting_default(flag)} | `[{group}] {setting.field}` | "
                f"{_help(setting.action)}{switched} | {', '.join(setting.commands)} |"
            )
    return lines


def _is_switch(action: argparse.Action, flags: dict[str, Any]) -> bool:
    """A flag that sets a setting to a fixed value (``--paper-tables``), not the setting's own."""
    flag = flags.get(action.dest)
    return (
        flag is not None
        and isinstance(action, argparse._StoreConstAction)
        and action.option_strings[0] not in flag.flags
    )


def _group_title(group: str) -> str:
    from fact_reasoner.settings.config import group_model

    return str(getattr(group_model(group), "title", "") or group)


def main() -> None:
    print(cli_reference(), end="")


if __name__ == "__main__":
    main()
