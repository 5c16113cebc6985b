"""Command-line flags generated from the settings' declarations (:mod:`fact_reasoner.settings.config`).

Every field of :class:`~fact_reasoner.settings.config.PipelineConfig` becomes a flag: ``--<dest>`` with
dashes (and the underscore spelling IBM's tool uses), its help text from the field's
description, its choices from a ``Literal`` type or, for a setting that names a backend
(``--engine``, ``--nli``, ``--backend``, ``--service-type``), from that kind's registry
(:mod:`fact_reasoner.settings.registry`: the names and their descriptions, read when the parser is
built), its default from the field (shown in ``--help``, never repeated here). A flag that is not given leaves the setting at its default.
Values are checked by the config itself; a value it rejects is reported like any argparse
error, naming the flag: ``argument --context-prior: must be < 1, got 1.5``. A command's own
numeric flags are held to the same kinds of number (:func:`number`, :mod:`fact_reasoner.settings.fields`).

``fact-reasoner``, ``fact-reasoner ragas`` and ``experiments/run_biographies.py`` all call
:func:`add_config_arguments`, each with the groups (or fields) it uses.
"""

from __future__ import annotations

import argparse
import json
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .config import PipelineConfig, group_model
from .fields import Count, describe_problem, field_dest, path_problem

__all__ = [
    "ConfigFlag",
    "add_config_arguments",
    "brief",
    "config_flags",
    "config_from_args",
    "number",
    "path_argument",
    "path_text",
    "positive_int",
    "real_number",
    "whole_number",
]


@dataclass(frozen=True)
class ConfigFlag:
    """One setting as a command-line flag."""

    group: str
    field: str
    dest: str
    flags: tuple[str, ...]
    help: str
    default: Any
    annotation: Any
    metavar: str | None
    parse: str | None
    visible: bool
    show_default: bool
    registry: str | None = None
    closed: bool = False
    #: flags that take no value and set a fixed one, ``{flag: value}``
    switches: tuple[tuple[str, Any], ...] = ()


def _extra(field: Any) -> dict[str, Any]:
    return field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}


def config_flags() -> list[ConfigFlag]:
    """Every setting with its flag spellings, in declaration order."""
    out = []
    for group in PipelineConfig.GROUPS:
        for name, field in group_model(group).model_fields.items():
            extra = _extra(field)
            dest = field_dest(name, field)
            flags = list(extra.get("flags") or [f"--{dest.replace('_', '-')}"])
            if "flags" not in extra and "_" in dest:
                flags.append(f"--{dest}")
            flags += list(extra.get("aliases", ()))
            default = field.get_default(call_default_factory=True)
            out.append(
                ConfigFlag(
                    group=group,
                    field=name,
                    dest=dest,
                    flags=tuple(flags),
                    help=field.description or "",
                    default=default,
                    annotation=field.annotation,
                    metavar=extra.get("metavar"),
                    parse=extra.get("parse"),
                    visible=bool(extra.get("cli", True)),
                    show_default=field.default_factory is None,
                    registry=extra.get("registry"),
                    closed=bool(extra.get("closed", False)),
                    switches=tuple((extra.get("switches") or {}).items()),
                )
            )
    return out


def _literal_values(annotation: Any) -> tuple[Any, ...] | None:
    """The values of a ``Literal`` (or ``Literal | None``) type, else None."""
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _literal_values(members[0])
    return None


def _scalar_types(annotation: Any) -> list[Any]:
    """The non-None member types of an annotation, with ``Annotated`` unwrapped."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _scalar_types(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for a in typing.get_args(annotation) if a is not type(None) for t in _scalar_types(a)]
    return [annotation]


def whole_number(text: str) -> int:
    """An argparse ``type=``: a whole number, else one error line in the words every numeric
    flag uses (``'1e20' is not a whole number``); its bounds are the setting's, checked by the
    settings model."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def real_number(text: str) -> float:
    """An argparse ``type=``: a number (``0.5``, ``1e-3``), else ``'x' is not a number``."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def path_argument(text: str) -> Path:
    """An argparse ``type=`` for a file or folder: the path, or one error line when the system
    cannot take it (a name over 255 bytes, a path over 4,096: :func:`~fact_reasoner.settings.fields.path_problem`),
    the words a path setting of the config gets too. Whether it exists is the command's to say."""
    return Path(path_text(text))


def path_text(text: str) -> str:
    """:func:`path_argument` for an option that keeps the text (a model folder that could also be
    a name): the text as given, or the same one error line."""
    problem = path_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


whole_number.metavar = "N"  # type: ignore[attr-defined]
real_number.metavar = "X"  # type: ignore[attr-defined]


def _converter(annotation: Any) -> Any:
    """An argparse ``type=`` for the annotation: ints and floats parsed, literals left to pydantic."""
    members = _scalar_types(annotation)
    if any(typing.get_origin(m) is typing.Literal for m in members) and int in members:
        # e.g. K: an integer or a word ("median", "half")
        def int_or_word(text: str) -> int | str:
            try:
                return int(text)
            except ValueError:
                return text

        return int_or_word
    if int in members:
        return whole_number
    if float in members:
        return real_number
    if Path in members:
        return path_argument
    return str


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError("give KEY=VALUE")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace("-", "_"), value


#: the metric a bare ``--fail-under X`` sets: the dataset's factual precision
DEFAULT_GATE_METRIC = "factuality_score"


def _threshold(text: str) -> tuple[str, float]:
    """``X`` or ``METRIC=X`` (``--fail-under``): X a number in [0, 1]; a bare X is the factual
    precision's threshold (:data:`DEFAULT_GATE_METRIC`)."""
    key, sep, raw = text.rpartition("=")
    if sep and not key:
        raise argparse.ArgumentTypeError("give X or METRIC=X")
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return (key.strip() if sep else DEFAULT_GATE_METRIC), value


class _CollectKeyValues(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        collected = dict(getattr(namespace, self.dest, None) or {})
        key, value = values
        collected[key] = value
        setattr(namespace, self.dest, collected)


def _default_text(flag: ConfigFlag) -> str:
    if not flag.show_default or flag.default is None or flag.default == {} or isinstance(flag.default, bool):
        return ""
    return f" (default: {flag.default})"


def number(kind: Any, metavar: str | None = None) -> Callable[[str], Any]:
    """An argparse ``type=`` for a command's own numeric flag, from one of the kinds of number of
    :mod:`fact_reasoner.settings.fields` (``number(Count)`` for ``--limit``): the text is read as a whole
    number or a number, then held to the kind's bounds, so a flag and a setting of the same kind
    refuse the same values with the same words (``must be ≥ 1, got 0``). Argparse prints the
    problem as one line naming the flag; a config file's value goes through the same check."""
    from pydantic import TypeAdapter, ValidationError

    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    whole = int in _scalar_types(kind)

    def parse(text: str) -> Any:
        """The number ``text`` says, within its kind's bounds; else one argparse error."""
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if whole else 'a number'}") from None
        try:
            return adapter.validate_python(value)
        except ValidationError as error:
            raise argparse.ArgumentTypeError(describe_problem(error.errors()[0])) from None

    parse.metavar = metavar or ("N" if whole else "X")  # type: ignore[attr-defined]
    return parse


#: ``--limit`` and the like: a whole number ≥ 1 (a :data:`~fact_reasoner.settings.fields.Count`)
positive_int = number(Count)


_PARENTHESES = re.compile(r"\s*\([^()]*\)")


def brief(text: str) -> str:
    """The first clause of a help text without its parentheses: the one line a setting gets on
    the first screen of ``--help`` (``--help-all`` shows the whole text)."""
    text = text.split("; ")[0]
    while _PARENTHESES.search(text):  # nested ones from the inside out
        text = _PARENTHESES.sub("", text)
    return text.strip()


def _registered_names(flag: ConfigFlag) -> tuple[list[str], str]:
    """The names the registry of ``flag`` holds now, and a help line describing them."""
    if flag.registry is None:
        return [], ""
    from .registry import registry

    descriptions = registry(flag.registry).descriptions()
    listed = "; ".join(f"{name}: {text}" if text else name for name, text in descriptions.items())
    return list(descriptions), f"; choices: {listed}"


def add_config_arguments(
    parser: argparse.ArgumentParser,
    *,
    groups: Iterable[str] = PipelineConfig.GROUPS,
    exclude: Iterable[str] = (),
    titles: Mapping[str, str] | None = None,
) -> list[ConfigFlag]:
    """Add one argument group per config group, one flag per setting; returns the flags added.

    ``exclude`` names settings (by ``dest``) that this command fixes itself (e.g. ``version``
    for the RAG metrics, which always use FR2).
    """
    excluded = set(exclude)
    wanted = list(groups)
    added = []
    sections: dict[str, Any] = {}
    for flag in config_flags():
        if flag.group not in wanted or flag.dest in excluded or not flag.visible:
            continue
        if flag.group not in sections:
            model = group_model(flag.group)
            title = (titles or {}).get(flag.group) or getattr(model, "title", "") or flag.group
            sections[flag.group] = parser.add_argument_group(title)
        section = sections[flag.group]
        kwargs: dict[str, Any] = {"dest": flag.dest, "default": argparse.SUPPRESS}
        help_text = flag.help
        if flag.parse == "key_value":
            kwargs.update(type=_key_value, action=_CollectKeyValues, metavar=flag.metavar or "KEY=VALUE")
        elif flag.parse == "threshold":
            kwargs.update(type=_threshold, action=_CollectKeyValues, metavar=flag.metavar or "X")
        elif bool in _scalar_types(flag.annotation):
            kwargs["action"] = "store_false" if flag.default is True else "store_true"
        else:
            names, listed = _registered_names(flag)
            choices = tuple(names) if flag.closed else _literal_values(flag.annotation)
            converter = _converter(flag.annotation)
            if choices and all(isinstance(c, (str, int)) for c in choices):
                kwargs["choices"] = list(choices)
                kinds = {type(c) for c in choices}
                converter = (whole_number if kinds == {int} else type(choices[0])) if len(kinds) == 1 else converter
            kwargs["type"] = converter
            if flag.metavar:
                kwargs["metavar"] = flag.metavar
            elif flag.registry and not flag.closed:
                kwargs["metavar"] = "NAME"  # a registered name, or a module:factory path
            help_text += _default_text(flag) + listed
        action = section.add_argument(*flag.flags, help=help_text.replace("%", "%%"), **kwargs)
        short = brief(flag.help) + ("" if flag.registry else _default_text(flag))
        if flag.registry:
            short += f": {', '.join(kwargs.get('choices') or _registered_names(flag)[0])} (default: {flag.default})"
        action.brief = short.replace("%", "%%")
        for value in dict.fromkeys(value for _, value in flag.switches):
            spellings = [switch for switch, fixed in flag.switches if fixed == value]
            section.add_argument(
                *spellings,
                dest=flag.dest,
                action="store_const",
                const=value,
                default=argparse.SUPPRESS,
                help=f"the same as {flag.flags[0]} {value}",
            )
        added.append(flag)
    return added


def config_from_args(
    args: argparse.Namespace,
    parser: argparse.ArgumentParser | None = None,
    *,
    file_settings: Mapping[str, Mapping[str, Any]] | None = None,
    **fixed: Any,
) -> PipelineConfig:
    """The config of the flags that were given (the rest keep their defaults), plus ``fixed``.

    ``file_settings`` (``{group: {field: value}}``, from ``--config FILE``) are the values of
    the settings no flag gives; a flag that collects ``KEY=VALUE`` pairs (``--engine-option``,
    ``--fail-under``) adds its pairs to the file's. A value the config rejects is reported
    through ``parser.error`` (exit status 2, naming the flag) when a parser is given, else
    raised as ``ValueError``.
    """
    flags = {f.dest: f for f in config_flags()}
    values: dict[str, Any] = {dest: getattr(args, dest) for dest in flags if hasattr(args, dest)}
    values.update(fixed)
    if file_settings:
        values = _over_file(values, file_settings, flags)
    try:
        return PipelineConfig.model_validate(values)
    except ValidationError as error:
        message = describe_config_error(error, flags)
        if parser is not None:
            parser.error(message)
        raise ValueError(message) from error


def _over_file(
    given: Mapping[str, Any], file_settings: Mapping[str, Mapping[str, Any]], flags: Mapping[str, ConfigFlag]
) -> dict[str, Any]:
    """The file's settings by group, with each given value (by ``dest``) put over its field."""
    nested: dict[str, Any] = {group: dict(values) for group, values in file_settings.items()}
    for dest, value in given.items():
        flag = flags[dest]
        group = nested.setdefault(flag.group, {})
        if flag.parse in ("key_value", "threshold") and isinstance(group.get(flag.field), Mapping):
            value = {**group[flag.field], **value}
        group[flag.field] = value
    return nested


def describe_config_error(error: ValidationError, flags: Mapping[str, ConfigFlag]) -> str:
    """``argument --flag: problem`` for each rejected setting."""
    by_location = {(f.group, f.field): f for f in flags.values()}
    parts = []
    for problem in error.errors():
        location = tuple(str(x) for x in problem["loc"][:2])
        if not location:  # a rule across settings: its message names the flags
            parts.append(str(problem.get("ctx", {}).get("error") or problem.get("msg", "")))
            continue
        flag = by_location.get(location)  # type: ignore[arg-type]
        name = flag.flags[0] if flag else ".".join(location) or "settings"
        parts.append(f"argument {name}: {describe_problem(problem)}")
    return "; ".join(parts)
