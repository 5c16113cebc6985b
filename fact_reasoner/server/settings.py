"""Which settings a request may change, derived from the settings model.

A request of ``fact-reasoner serve`` may change a setting (``/v1/assess?version=2&top_k=3``) only
when all of these hold; every other name is refused by name (HTTP 422):

1. it can change a result (``affects_results``): threads, the cache, timeouts, the executor and
   the CI gate are the server's operation, not a request's;
2. its value is closed: a yes/no, a number, or one word of a fixed list (a ``Literal``, or the
   names of the registry a setting is closed to: ``--checkworthy``). A free
   text can be a path, a URL, a model or a ``module:callable`` name (``--model``,
   ``--nli-model``, ``--store``, ``--cache-dir``, ``--service-type``, ``--search-url``,
   merlin's binary), which a caller over HTTP must never choose;
3. it is not in a group the server fixes when it starts (:data:`FIXED_GROUPS`: which pipeline
   and engine run, the cache, execution, the gate);
4. it is not read when a stage is built (:data:`BUILT_ONCE`): the server builds the judge, the
   language model, the atomizer, the reviser and the retriever once, so a request cannot give
   them other options.

What remains is read per record (the FR version, priors, K, the NLI pair selection, top-k, …):
:func:`request_settings` lists it, ``GET /v1/info`` shows it, and :func:`apply_request_settings`
applies a request's values through the settings model, which checks them.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..errors import SettingsError
from ..settings.cli_options import ConfigFlag, config_flags
from ..settings.cli_options import _scalar_types as _members  # the member types of a setting's annotation
from ..settings.config import PipelineConfig, group_model
from ..settings.fields import affects_results, describe_problem

__all__ = [
    "BUILT_ONCE",
    "FIXED_GROUPS",
    "RequestSetting",
    "UnsafeSetting",
    "apply_request_settings",
    "request_settings",
    "setting_choices",
    "setting_type",
]

#: groups a request never changes: which pipeline and engine run (an engine's options include
#: merlin's binary), the cache, where records run, the CI gate
FIXED_GROUPS = ("pipeline", "engine", "cache", "execution", "gate")

#: closed-valued settings that a stage reads when it is built (the server builds each once):
#: which NLI backend and LLM backend, the LLM judge's and the cascade's options, the atomizer's
#: and reviser's prompts and the reviser's topic rule, and the web retrievers' page options and
#: topic filter
BUILT_ONCE = frozenset(
    {
        "nli",
        "backend",
        "nli_cascade_band",
        "nli_prompt_version",
        "nli_calibrate",
        "nli_samples",
        "atomizer_prompt_version",
        "reviser_prompt_version",
        "topic_pronouns",
        "topic_filter",
        "fetch_pages",
        "passage_chars",
        "max_page_bytes",
    }
)


class UnsafeSetting(SettingsError):
    """A request named a setting it may not change, or gave one a value the settings model
    refuses; ``setting`` is its name."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class RequestSetting:
    """A setting a request may change: its name (the flag's ``dest``), group, JSON type, the
    fixed words it takes (if any) and its description."""

    name: str
    group: str
    type: str
    choices: tuple[Any, ...] | None
    description: str

    def as_dict(self, value: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "group": self.group, "type": self.type, "value": value}
        if self.choices is not None:
            out["choices"] = list(self.choices)
        out["description"] = self.description
        return out


def closed_type(annotation: Any) -> str | None:
    """The JSON type of a setting whose every value is closed (bool, int, float, a ``Literal``
    word, or a union of those), else None (free text, a path, a dict)."""
    names = []
    for member in _members(annotation):
        if typing.get_origin(member) is typing.Literal:
            words = typing.get_args(member)
            names.append("integer" if all(isinstance(w, int) and not isinstance(w, bool) for w in words) else "string")
        elif member is bool:
            names.append("boolean")
        elif member is int:
            names.append("integer")
        elif member is float:
            names.append("number")
        else:
            return None
    return " | ".join(dict.fromkeys(names))


def _choices(annotation: Any) -> tuple[Any, ...] | None:
    words = [v for m in _members(annotation) if typing.get_origin(m) is typing.Literal for v in typing.get_args(m)]
    return tuple(words) or None


def setting_type(flag: ConfigFlag) -> str | None:
    """The JSON type of a setting whose values are closed (:func:`closed_type`; a setting closed
    to a registry's names is a string), else None."""
    return "string" if flag.registry and flag.closed else closed_type(flag.annotation)


def setting_choices(flag: ConfigFlag) -> tuple[Any, ...] | None:
    """The words a closed setting takes: its ``Literal``'s, or its registry's names."""
    if flag.registry and flag.closed:
        from ..settings.registry import registry

        return tuple(registry(flag.registry).available())
    return _choices(flag.annotation)


def _field(flag: ConfigFlag) -> Any:
    return group_model(flag.group).model_fields[flag.field]


def request_settings(groups: tuple[str, ...] | None = None, excluded: tuple[str, ...] = ()) -> list[RequestSetting]:
    """The settings a request may change (rules in the module docstring), in declaration order;
    ``groups`` limits them to the settings groups a command takes, ``excluded`` drops those it
    fixes (``ragas`` fixes ``version``)."""
    out = []
    for flag in config_flags():
        if flag.group in FIXED_GROUPS or (groups is not None and flag.group not in groups):
            continue
        if flag.dest in BUILT_ONCE or flag.dest in excluded or not flag.visible:
            continue
        if not affects_results(_field(flag)):
            continue
        kind = setting_type(flag)
        if kind is None:
            continue
        out.append(RequestSetting(flag.dest, flag.group, kind, setting_choices(flag), flag.help))
    return out


def apply_request_settings(
    config: PipelineConfig, values: Mapping[str, Any], allowed: list[RequestSetting]
) -> PipelineConfig:
    """``config`` with a request's settings (text from a query string, or JSON values), checked
    by the settings model. Raises :class:`UnsafeSetting` naming the first setting that is
    unknown, not allowed over HTTP, or given a value the model refuses."""
    if not values:
        return config
    known = {setting.name: setting for setting in allowed}
    owners = {flag.dest for flag in config_flags()}
    changes: dict[str, Any] = {}
    for name, value in values.items():
        if name not in known:
            why = "may not be changed by a request" if name in owners else "is not a setting"
            listed = ", ".join(sorted(known))
            raise UnsafeSetting(name, f"setting {name!r} {why}; a request may change: {listed}")
        changes[name] = _from_text(value, known[name]) if isinstance(value, str) else value
    for name, value in changes.items():  # one at a time, so that a refused value is named
        try:
            config = config.with_options(**{name: value})
        except ValidationError as error:
            raise UnsafeSetting(name, f"setting {name!r}: {describe_problem(error.errors()[0])}") from None
    return config


def _from_text(text: str, setting: RequestSetting) -> Any:
    """A query-string value as the setting reads it: one of its words (``"2"`` → 2 for the FR
    version), an integer where it takes integers (``"3"`` → 3 for K), ``null`` for none; the
    rest (``"true"``, ``"0.5"``) is read by the settings model."""
    for word in setting.choices or ():
        if text == str(word):
            return word
    if "integer" in setting.type.split(" | "):
        try:
            return int(text)
        except ValueError:
            pass
    if text.lower() in ("null", "none"):
        return None
    return text
