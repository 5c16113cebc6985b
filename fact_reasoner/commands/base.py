"""What every command shares: its parser, its help, its config file, and how a run ends.

A command (:class:`Command`) declares its name, its texts and its own flags, and says which
groups of the settings model (:class:`~fact_reasoner.settings.config.PipelineConfig`) it takes; the
flags of those groups come from the settings' declarations (:mod:`fact_reasoner.settings.cli_options`).
Everything below is the same for every command:

- **errors**: a bad flag prints one line, ``error: argument --top-k: -3: …``, and where to read
  more, nothing else (:class:`CommandParser`);
- **help**: ``--help`` is one screen, the options a newcomer needs (:attr:`Command.basic`, one
  line each); ``--help-all`` lists every option by group;
- **config file**: ``--config FILE.toml`` sets what the flags set, flags override it, and
  ``--print-config`` writes the effective settings as TOML (:mod:`fact_reasoner.settings.config_file`);
- **the end of a run** (:func:`finish_run`): why it stopped, the summary, what an interruption
  kept and the exact command that resumes it, the ``--fail-under`` gate, the exit status.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from ..gate import GATE_FAILED, evaluate_gate
from ..runner import RunReport
from ..settings.cli_options import add_config_arguments, config_flags, config_from_args, path_argument
from ..settings.config import PipelineConfig, field_owners, group_model
from ..settings.config_file import ConfigFile, read_config_file, to_toml
from ..settings.fields import describe_problem
from ..settings.registry import Registry

__all__ = [
    "COMMANDS",
    "Command",
    "CommandParser",
    "finish_run",
    "resume_command",
]

#: the program's name in messages and usage lines
PROG = "fact-reasoner"

#: exit status of an interrupted command (128 + SIGINT, as a shell reports it)
INTERRUPTED = 130


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, and whose ``--help`` shows only the options
    named in ``basic`` (one line each) while ``--help-all`` shows every option."""

    def __init__(self, *args: Any, basic: Iterable[str] = (), more: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        kwargs.setdefault("add_help", False)
        super().__init__(*args, **kwargs)
        self.basic = tuple(basic)
        self.more = more
        self.full_help = False
        #: the ``dest`` of each settings flag (the rest are the command's own options)
        self.settings_dests: set[str] = set()

    def error(self, message: str) -> Any:
        """The problem, and where to read more: two lines on stderr, exit status 2."""
        self.exit(2, f"error: {message}\ntry '{self.prog} --help' for the options\n")

    def format_help(self) -> str:
        if self.full_help:
            return super().format_help()
        return self.first_screen()

    def first_screen(self) -> str:
        """The short help: usage, the description's first paragraph, then one entry per basic
        option (in the order of ``basic``), its first spelling and its one-line help."""
        import shutil
        import textwrap

        width = min(shutil.get_terminal_size().columns, 100) - 2
        by_dest: dict[str, argparse.Action] = {}
        for action in self._actions:
            key = "help_all" if "--help-all" in action.option_strings else action.dest
            key = "help" if "--help" in action.option_strings else key
            by_dest.setdefault(key, action)
        entries = []
        for dest in self.basic:
            found = by_dest.get(dest)
            if found is None:
                continue
            action = found
            name = action.option_strings[0] if action.option_strings else str(action.metavar or action.dest)
            if dest == "help":
                name = ", ".join(action.option_strings)
            if action.option_strings and action.nargs != 0:
                name += f" {self._metavar(action)}"
            text = (getattr(action, "brief", None) or action.help or "").replace("%%", "%")
            if "%(default)s" in text:
                text = text.replace("%(default)s", str(action.default))
            entries.append((name, text))
        column = 24
        lines = [f"usage: {self.usage}" if self.usage else self.format_usage().rstrip(), ""]
        wrap = textwrap.TextWrapper(width, break_on_hyphens=False, break_long_words=False)
        lines += wrap.wrap((self.description or "").split("\n\n")[0].replace("\n", " ")) + [""]
        total = sum(1 for a in self._actions if a.option_strings and a.help != argparse.SUPPRESS)
        lines.append(f"the options most runs need (--help-all: all {total}):")
        for name, text in entries:
            head = f"  {name}"
            if len(head) + 2 > column:  # a long spelling gets a line of its own
                lines.append(head)
                head = ""
            head = head.ljust(column)
            wrapped = textwrap.wrap(text, max(width - column, 30), break_on_hyphens=False, break_long_words=False)
            wrapped = wrapped or [""]
            lines.append(head + wrapped[0])
            lines += [" " * column + more for more in wrapped[1:]]
        if self.more:
            lines += ["", *wrap.wrap(self.more)]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _metavar(action: argparse.Action) -> str:
        if action.metavar:
            return str(action.metavar)
        listed = ",".join(str(c) for c in action.choices or ())
        if action.choices and len(listed) <= 14:
            return "{" + listed + "}"
        if action.choices:
            return "NAME"
        kind_metavar = getattr(action.type, "metavar", None)  # a number: N or X (cli_options)
        if kind_metavar:
            return str(kind_metavar)
        if action.type is int:
            return "N"
        if action.type in (Path, path_argument):
            return "PATH"
        return action.dest.upper()


class _Help(argparse.Action):
    """``-h/--help`` (the first screen) and ``--help-all`` (every option)."""

    def __init__(self, option_strings: Sequence[str], dest: str, full: bool = False, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)
        self.full = full

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option_string: Any = None) -> None:
        if isinstance(parser, CommandParser):
            parser.full_help = self.full
        parser.print_help()
        parser.exit()


class Command(ABC):
    """One subcommand of ``fact-reasoner``: registered once, in
    :data:`fact_reasoner.commands.COMMANDS`, by the name of its class.

    A command sets its texts and :attr:`basic` (the ``dest`` of each option on the first screen
    of ``--help``), adds its own flags in :meth:`add_arguments`, names the settings groups it
    takes in :attr:`settings_groups` (and those it fixes itself in :attr:`settings_excluded`),
    and does its work in :meth:`run`. A dataset command builds a
    :class:`~fact_reasoner.runner.DatasetJob`, hands it to
    :func:`~fact_reasoner.runner.run_dataset` and ends with :func:`finish_run`.
    """

    name: ClassVar[str]
    #: one line, in the list of commands
    summary: ClassVar[str]
    #: ``--help``: the first paragraph is on the first screen, the whole text on ``--help-all``
    description: ClassVar[str]
    epilog: ClassVar[str] = ""
    #: the usage line (argparse's own would list every option)
    usage: ClassVar[str]
    #: the options on the first screen of ``--help``
    basic: ClassVar[tuple[str, ...]] = ()
    #: the settings groups whose flags the command takes
    settings_groups: ClassVar[tuple[str, ...]] = ()
    #: settings (by ``dest``) the command fixes itself (no flag, not in the config file)
    settings_excluded: ClassVar[tuple[str, ...]] = ()

    @property
    def prog(self) -> str:
        return f"{PROG} {self.name}"

    @abstractmethod
    def add_arguments(self, parser: CommandParser) -> None:
        """The command's own flags (the settings' flags are added after them)."""

    @abstractmethod
    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        """Do the work; the exit status. Problems raise a
        :class:`~fact_reasoner.errors.FactReasonerError` (printed as one line by ``main``)."""

    def fixed_settings(self, args: argparse.Namespace) -> dict[str, Any]:
        """Settings the command sets itself, by ``dest`` (``version=2`` for the RAG metrics)."""
        return {}

    # -- the parser ---------------------------------------------------------------------------

    def build_parser(self) -> CommandParser:
        """The command's parser: help, config file, its own flags, then the settings' flags."""
        parser = CommandParser(
            prog=self.prog,
            usage=self.usage,
            description=self.description,
            epilog=self.epilog,
            basic=(*self.basic, "config", "print_config", "help_all", "help"),
            more=self._more(),
        )
        general = parser.add_argument_group("help and settings file")
        general.add_argument("-h", "--help", action=_Help, help="the options most runs need (this screen)")
        general.add_argument("--help-all", action=_Help, full=True, help="every option, by group")
        general.add_argument(
            "--config",
            type=path_argument,
            metavar="FILE.toml",
            help="settings from a TOML file (flags given here override it)",
        )
        general.add_argument(
            "--print-config",
            action="store_true",
            help="print the effective settings as TOML (for --config); run nothing",
        )
        self.add_arguments(parser)
        if self.settings_groups:
            added = add_config_arguments(parser, groups=self.settings_groups, exclude=self.settings_excluded)
            parser.settings_dests = {flag.dest for flag in added}
        return parser

    def _more(self) -> str:
        return (
            f"--help-all lists every option; other commands: {', '.join(_command_names(self.name))} "
            f"({PROG} COMMAND --help)"
        )

    def parse(self, argv: Sequence[str]) -> tuple[argparse.Namespace, CommandParser]:
        """The parsed flags, over the defaults from ``--config FILE`` when one is given; the
        file's settings are kept on ``args.file_settings`` for :meth:`settings`."""
        parser = self.build_parser()
        file = _config_file_argument(argv)
        file_settings: dict[str, dict[str, Any]] = {}
        if file is not None:
            loaded = read_config_file(file)
            file_settings = self._apply_config_file(loaded, parser)
        args = parser.parse_args(list(argv))
        args.file_settings = file_settings
        return args, parser

    def settings(self, args: argparse.Namespace, parser: CommandParser) -> PipelineConfig:
        """The settings of the flags over those of the config file, plus the command's fixed
        ones; a value the settings model rejects is an argument error naming its flag."""
        return config_from_args(args, parser, file_settings=args.file_settings, **self.fixed_settings(args))

    def print_config(self, args: argparse.Namespace, parser: CommandParser) -> int:
        """``--print-config``: the effective settings as TOML on stdout, to be read back with
        ``--config`` (the command's own options in ``[<command>]``)."""
        tables: dict[str, dict[str, Any]] = {}
        comments: dict[str, str] = {}
        if self.settings_groups:
            config = self.settings(args, parser)
            excluded = set(self.settings_excluded)
            for flag in config_flags():
                if flag.group in self.settings_groups and flag.dest not in excluded and flag.visible:
                    value = getattr(getattr(config, flag.group), flag.field)
                    tables.setdefault(flag.group, {})[flag.field] = _plain(value)
                    comments.setdefault(flag.group, _group_title(flag.group))
        own = {action.dest: getattr(args, action.dest, None) for action in _own_actions(parser)}
        tables[self.name] = {dest: _plain(value) for dest, value in own.items()}
        comments[self.name] = f"{PROG} {self.name}: its own options"
        sys.stdout.write(to_toml(tables, comments))
        return 0

    # -- the config file ------------------------------------------------------------------------

    def _apply_config_file(self, file: ConfigFile, parser: CommandParser) -> dict[str, dict[str, Any]]:
        """Check every key of the file; set the command's own options as the parser's defaults;
        return the settings groups (checked against the settings model, naming file and line)."""
        own_actions = {action.dest: action for action in _own_actions(parser)}
        groups = set(self.settings_groups)
        excluded = {
            (f.group, f.field)
            for f in config_flags()
            if (f.dest in self.settings_excluded and f.group in groups) or not f.visible
        }
        fields = {g: [f for f in _group_fields(g) if (g, f) not in excluded] for g in PipelineConfig.GROUPS}
        settings: dict[str, dict[str, Any]] = {}
        owners = field_owners()
        for table, values in file.data.items():
            if not isinstance(values, dict):
                if table in owners:  # a flag's name at the top: say where it goes
                    group, name = owners[table]
                    raise file.error(None, table, f"{table!r} belongs in its group: [{group}] {name} = …")
                raise file.error(None, table, f"{table!r} is not a table: settings go in [group] or [{self.name}]")
            if table == self.name:
                self._set_defaults(file, table, values, own_actions, parser)
            elif table in COMMANDS:
                continue  # another command's options: one file may serve several commands
            elif table in fields:
                for key, value in values.items():
                    if (table, key) in excluded:
                        raise file.error(table, key, f"{table}.{key} is not a setting of `{self.name}`")
                    if key not in fields[table]:
                        raise file.error(
                            table, key, f"unknown setting {table}.{key}; [{table}] has: {', '.join(fields[table])}"
                        )
                    if table in groups:  # a group this command does not use is left for those that do
                        settings.setdefault(table, {})[key] = value
            else:
                known = [*PipelineConfig.GROUPS, *COMMANDS.available()]
                raise file.error(None, table, f"unknown table [{table}]; known: {', '.join(known)}")
        if settings:
            _check_file_settings(file, settings)
        return settings

    def _set_defaults(
        self,
        file: ConfigFile,
        table: str,
        values: Mapping[str, Any],
        actions: Mapping[str, argparse.Action],
        parser: CommandParser,
    ) -> None:
        defaults: dict[str, Any] = {}
        for key, value in values.items():
            action = actions.get(key)
            if action is None:
                raise file.error(
                    table, key, f"unknown option {table}.{key}; [{table}] has: {', '.join(sorted(actions))}"
                )
            try:
                defaults[key] = _option_value(action, value)
            except (argparse.ArgumentTypeError, ValueError, TypeError) as error:
                raise file.error(table, key, f"{table}.{key}: {error}") from None
            action.required = False  # given by the file
        parser.set_defaults(**defaults)


#: every command of ``fact-reasoner``: name → its :class:`Command` (the built-in ones are
#: registered in :mod:`fact_reasoner.commands`; an installed package adds one through the
#: ``fact_reasoner.commands`` entry-point group)
COMMANDS: Registry[Command] = Registry("commands", noun="command", entry_point_group="fact_reasoner.commands")


def _config_file_argument(argv: Sequence[str]) -> Path | None:
    """``--config FILE`` (or ``--config=FILE``) from the raw arguments, before parsing."""
    for position, word in enumerate(argv):
        if word == "--config" and position + 1 < len(argv):
            return Path(argv[position + 1])
        if word.startswith("--config="):
            return Path(word.split("=", 1)[1])
    return None


def _own_actions(parser: CommandParser) -> list[argparse.Action]:
    """The command's own options (not the settings', help or the config file's flags)."""
    settings = parser.settings_dests
    skip = {"config", "print_config", "help", "help_all", argparse.SUPPRESS}
    return [a for a in parser._actions if a.option_strings and a.dest not in skip and a.dest not in settings]


def _option_value(action: argparse.Action, value: Any) -> Any:
    """A file's value for an option, converted and checked as the flag's text would be."""
    if action.nargs == 0:  # store_true / store_false
        if not isinstance(value, bool):
            raise ValueError(f"{value!r} is not true or false")
        return value
    if isinstance(value, list):
        if action.nargs not in ("+", "*"):
            raise ValueError("give one value, not a list")
        return [_option_value_one(action, item) for item in value]
    if action.nargs in ("+", "*"):
        return [_option_value_one(action, value)]
    return _option_value_one(action, value)


def _option_value_one(action: argparse.Action, value: Any) -> Any:
    if isinstance(value, (dict, list)):
        raise ValueError(f"{value!r} is not a single value")
    converted = action.type(str(value)) if callable(action.type) else value
    if action.choices is not None and converted not in action.choices:
        raise ValueError(f"{value!r} is not one of {', '.join(map(str, action.choices))}")
    return converted


def _group_fields(group: str) -> list[str]:
    return list(group_model(group).model_fields)


def _group_title(group: str) -> str:
    return str(getattr(group_model(group), "title", "") or group)


def _check_file_settings(file: ConfigFile, settings: dict[str, dict[str, Any]]) -> None:
    """Validate the file's settings alone, so that a bad value names the file and its line."""
    from pydantic import ValidationError

    try:
        PipelineConfig.model_validate(settings)
    except ValidationError as error:
        problem = error.errors()[0]
        location = [str(part) for part in problem["loc"]]
        group, key = (location + ["", ""])[:2]
        raise file.error(group or None, key, f"{'.'.join(location[:2])}: {describe_problem(problem)}") from None


def _plain(value: Any) -> Any:
    """A value as TOML can hold it (paths as text; nested values likewise)."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _command_names(current: str) -> list[str]:
    return [name for name in COMMANDS.available() if name != current]


# -- the end of a dataset run -----------------------------------------------------------------------


def resume_command(argv: Sequence[str]) -> str:
    """The command line that resumes an interrupted run: the same arguments, less
    ``--overwrite`` (which would start over), as the program was called."""
    words = [word for word in argv if word != "--overwrite"]
    program = sys.argv[0] if sys.argv else ""
    if program.endswith("__main__.py") or program == "-m":
        head = [sys.executable, "-m", "fact_reasoner"]
    else:
        head = [PROG]
    return shlex.join([*head, *words])


def finish_run(
    report: RunReport,
    *,
    noun: str = "record",
    quiet: bool,
    argv: Sequence[str],
    summary_lines: Callable[[RunReport], list[str]],
    thresholds: Mapping[str, float] | None = None,
    gate_scores: Callable[[Sequence[dict[str, Any]]], Mapping[str, Sequence[tuple[str, float | None]]]] | None = None,
    failed: bool | None = None,
) -> int:
    """Print how a dataset run ended and return the exit status: 2 it stopped (why, what was
    kept), 130 interrupted (what was kept and the exact command that resumes it), 3 the
    ``--fail-under`` gate failed, 1 an item failed (``failed`` overrides), else 0. The summary
    (``summary_lines``) is printed unless ``quiet`` or the run stopped."""
    if report.stopped_by is not None:
        print(f"error: {report.stopped_by}", file=sys.stderr)
        print(f"stopped: {kept_in(report, noun)}; fix the cause and rerun to resume", file=sys.stderr)
        return 2
    if not quiet:
        for line in summary_lines(report):
            print(line, file=sys.stderr)
    if report.interrupted:
        print(f"interrupted: {kept_in(report, noun)}; rerun to resume: {resume_command(argv)}", file=sys.stderr)
        return INTERRUPTED
    status = 1 if (report.failures if failed is None else failed) else 0
    if thresholds and gate_scores is not None:
        gate = evaluate_gate(thresholds, gate_scores(report.rows), [str(failure) for failure in report.failures])
        for line in gate.lines:
            print(line, file=sys.stderr)
        if gate.below_threshold:
            return GATE_FAILED
    return status


def results_line(report: RunReport, noun: str = "record") -> str:
    """The summary's first line: where the results are, or that none were written and whether
    the output file is there (a run that wrote nothing leaves no file it created)."""
    if report.rows:
        return f"results: {report.output_file}"
    if report.output_exists:
        return f"results: no {noun} written to {report.output_file}"
    return f"results: no {noun} written, so {report.output_file} was not created"


def kept_in(report: RunReport, noun: str = "record") -> str:
    """What a stopped or interrupted run kept: ``3 record(s) kept in FILE``, or, when the run
    wrote nothing and so left no output file, that none was created."""
    if not report.output_exists:
        return f"0 {noun}(s) kept ({report.output_file} was not created)"
    return f"{report.kept} {noun}(s) kept in {report.output_file}"


def figure(value: Any) -> str:
    """A summary figure as the summaries print it: 4 decimals, ``nan``, or the value."""
    from ..scores import describe_k

    if isinstance(value, list):  # the K values the records were scored with
        return describe_k(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def output_problems(flag: str, path: Path | None, *, directory: bool = False) -> list[str]:
    """What stops ``path`` from being written (a directory where a file goes, a file where a
    folder goes), as argument errors of ``flag``."""
    if path is None:
        return []
    problems = []
    if not directory and path.is_dir():
        problems.append(f"argument {flag}: {path} is a directory, not a file")
    target = path / "x" if directory else path
    parent = next((p for p in target.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        problems.append(f"argument {flag}: {parent} is a file, not a directory")
    return problems


def input_problems(flag: str, path: Path | None) -> list[str]:
    """An input path that is a directory, as an argument error of ``flag``."""
    if path is not None and path.is_dir():
        return [f"argument {flag}: {path} is a directory, not a file"]
    return []
