"""How a setting is declared: a pydantic ``Field`` with its description and command-line metadata.

A setting is declared once, where it belongs: the groups of
:class:`~fact_reasoner.settings.config.PipelineConfig` in :mod:`fact_reasoner.settings.config` (the graph's in
:mod:`fact_reasoner.settings.graph_options`), a backend's own settings in its registration
(:class:`fact_reasoner.settings.registry.Option`: the LLM judge's, merlin's, the web services'). The
command line (:mod:`fact_reasoner.settings.cli_options`), the config file and the resume fingerprint
(:meth:`~fact_reasoner.settings.config.PipelineConfig.settings`) read this metadata, through the readers
below, instead of repeating it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

if TYPE_CHECKING:  # pragma: no cover
    from .registry import Option

from pydantic import AfterValidator, BaseModel, Field, create_model
from pydantic_core import PydanticCustomError

__all__ = [
    "MAX_COUNT",
    "MAX_SECONDS",
    "MAX_THREADS",
    "MAX_WEIGHT",
    "Cosine",
    "Count",
    "CountOrZero",
    "Milliseconds",
    "OpenProbability",
    "PathName",
    "PathText",
    "Port",
    "Probability",
    "Quantity",
    "Seconds",
    "SecondsOrZero",
    "Size",
    "Threads",
    "Weight",
    "affects_results",
    "applies",
    "assemble",
    "checked",
    "closed_to",
    "describe_problem",
    "dotted",
    "field_dest",
    "omitted",
    "one_of",
    "option",
    "path_problem",
]

# -- what a number may be ------------------------------------------------------------------------
#
# Every numeric setting and every numeric flag of every command is one of the kinds below, so
# that what a count, a size, a probability, a time or a weight may be is said once. A value
# outside its kind's bounds is refused with one line naming the flag (``argument --beta: must
# be > 0, got -3``: :func:`describe_problem`); a value within them that cannot matter for the
# data at hand (a K above every response's atoms, a --top-k nothing is retrieved for) is a
# one-line warning of the run instead (:mod:`fact_reasoner.runner`).

#: the most of anything countable (records, atoms, contexts, K, a batch, characters, bytes): more
#: than any input of this program holds, and below 2**31, so the native libraries behind the
#: stages (llama.cpp, ONNX Runtime, chromadb, bm25s) never receive a number they overflow on
MAX_COUNT = 1_000_000_000
#: the most threads or concurrent workers: more cores than any machine this runs on has, while
#: asking a thread pool for millions of threads would exhaust the machine before any work
MAX_THREADS = 1024
#: the longest wait, about 11.6 days: Python's waits raise OverflowError on huge timeouts
MAX_SECONDS = 1_000_000.0
#: the largest weight (F-beta's beta): beta**2 stays far from float overflow, where F-beta
#: would become inf / inf = NaN
MAX_WEIGHT = 1_000_000.0

#: a number of things, at least one (records, atoms, contexts, K, samples, a batch)
Count = Annotated[int, Field(ge=1, le=MAX_COUNT)]
#: a number of things where none means something (retries, a window, a queue beyond the workers)
CountOrZero = Annotated[int, Field(ge=0, le=MAX_COUNT)]
#: a size in characters or bytes, at least one
Size = Annotated[int, Field(ge=1, le=MAX_COUNT)]
#: threads, processes or requests in flight at once
Threads = Annotated[int, Field(ge=1, le=MAX_THREADS)]
#: a probability or a share, in [0, 1]
Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
#: a time to wait, above zero
Seconds = Annotated[float, Field(gt=0.0, le=MAX_SECONDS, allow_inf_nan=False)]
#: a time to wait where zero means "do not wait"
SecondsOrZero = Annotated[float, Field(ge=0.0, le=MAX_SECONDS, allow_inf_nan=False)]
#: a short wait in milliseconds, zero allowed
Milliseconds = Annotated[float, Field(ge=0.0, le=MAX_SECONDS * 1000, allow_inf_nan=False)]
#: a positive weight (F-beta's beta)
Weight = Annotated[float, Field(gt=0.0, le=MAX_WEIGHT, allow_inf_nan=False)]
#: a TCP port; 0 asks the system for a free one
Port = Annotated[int, Field(ge=0, le=65535)]
#: a probability strictly between 0 and 1 (a prior: 0 or 1 would make a factor table zero)
OpenProbability = Annotated[float, Field(gt=0.0, lt=1.0, allow_inf_nan=False)]
#: a cosine similarity, in [-1, 1]
Cosine = Annotated[float, Field(ge=-1.0, le=1.0, allow_inf_nan=False)]
#: a non-negative amount counted in things, fractions allowed (FActScore's γ, in atoms)
Quantity = Annotated[float, Field(ge=0.0, le=MAX_COUNT, allow_inf_nan=False)]

#: the error type of a validator that words its own bound (``--k``: a number or a word)
NUMBER_KIND_ERROR = "number_kind"
#: the error type of a path the system cannot take (:func:`path_problem`), already in its words
PATH_ERROR = "path_name"

# -- what a path may be ----------------------------------------------------------------------------
#
# A name longer than the file system takes (NAME_MAX, 255 bytes on Linux and macOS) or a path
# longer than the system takes (PATH_MAX, 4,096 bytes with its final NUL) makes every system call
# on it fail with ENAMETOOLONG, wherever the path is first used: a check that a folder is one, the
# output's lock, a model folder's config. So every path a command takes is held to these limits
# when its arguments are read: one line naming the flag, never a traceback from deep in the run.


def _system_limit(name: str, default: int) -> int:
    try:
        return int(os.pathconf("/", name))
    except (AttributeError, OSError, ValueError):  # not on POSIX, or a limit the system does not say
        return default


#: the longest name of a file or folder, in bytes, and the longest path, in bytes with its final NUL
NAME_MAX = _system_limit("PC_NAME_MAX", 255)
PATH_MAX = _system_limit("PC_PATH_MAX", 4096)


def path_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the system cannot take ``path`` as a file or folder name, in one line, or None: one of
    its names is longer than :data:`NAME_MAX` bytes, or the whole is longer than ``PATH_MAX − 1``.

    >>> print(path_problem("out/" + "x" * 300))
    a name in the path is 300 bytes long (xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…); a file or folder name may be at most 255 bytes
    >>> path_problem("fact_reasoner/examples/short_answer.jsonl") is None
    True
    """
    encoded = os.fsencode(path)
    longest = max(encoded.split(os.fsencode(os.sep)), key=len)
    if len(longest) > NAME_MAX:
        start = os.fsdecode(longest)[:30]
        return (
            f"a name in the path is {len(longest)} bytes long ({start}…); a file or folder name may be at most "
            f"{NAME_MAX} bytes"
        )
    if len(encoded) >= PATH_MAX:
        return f"the path is {len(encoded)} bytes long; a path may be at most {PATH_MAX - 1} bytes"
    return None


def _checked_path(value: Any) -> Any:
    problem = path_problem(value) if value else None
    if problem:
        raise PydanticCustomError(PATH_ERROR, problem)
    return value


#: a setting that names a file or folder (``--cache-dir``, ``--keep-uai``)
PathName = Annotated[Path, AfterValidator(_checked_path)]
#: a setting that names a file or folder, or something else by name (``--nli-model``: a model
#: folder or a hub id; ``--model``: a registered model or a ``.gguf`` file)
PathText = Annotated[str, AfterValidator(_checked_path)]
_BOUND_WORDS = {"greater_than": ">", "greater_than_equal": "≥", "less_than": "<", "less_than_equal": "≤"}
_BOUND_KEYS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than": "lt", "less_than_equal": "le"}


def dotted(settings: Any, prefix: str = "") -> dict[str, Any]:
    """Nested settings (an output's ``settings``, a fingerprint) as ``{"group.field": value}``,
    the names the docs, the messages and the comparisons of two runs' settings use."""
    if isinstance(settings, Mapping):
        out: dict[str, Any] = {}
        for key, item in settings.items():
            out |= dotted(item, f"{prefix}{key}.")
        return out
    return {prefix.rstrip("."): settings}


def shown_number(value: Any) -> str:
    """A number as a message shows it: ``-3`` for -3.0, ``1e+20`` for 1e20, an int in full."""
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


def checked(kind: Any, value: Any, name: str) -> Any:
    """``value`` held to a kind of number (``checked(Weight, beta, "beta")``), for the Python
    API's own parameters: the value as the kind reads it, or ``ValueError`` in the words a flag
    gets (``beta: must be > 0, got -3``)."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(kind).validate_python(value)
    except ValidationError as error:
        raise ValueError(f"{name}: {describe_problem(error.errors()[0])}") from None


def describe_problem(problem: Mapping[str, Any]) -> str:
    """One of pydantic's errors (``ValidationError.errors()[i]``) in one line, without the flag:
    ``must be > 0, got -3`` for a bound, ``must be a finite number, got nan``, else the value
    and pydantic's own words (``'x': Input should be 'llm' or 'nli'``)."""
    kind = problem.get("type", "")
    value = problem.get("input")
    context = problem.get("ctx") or {}
    if kind in _BOUND_WORDS:
        return f"must be {_BOUND_WORDS[kind]} {shown_number(context.get(_BOUND_KEYS[kind]))}, got {shown_number(value)}"
    if kind == "finite_number":
        return f"must be a finite number, got {shown_number(value)}"
    if kind in (NUMBER_KIND_ERROR, PATH_ERROR):  # a setting's own rule, already in these words
        return str(problem.get("msg", ""))
    shown = f"{value!r}: " if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    return f"{shown}{str(problem.get('msg', '')).removeprefix('Value error, ')}"


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
        The kind of backend the setting names (a key of :data:`fact_reasoner.settings.registry.KINDS`):
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


# -- reading the metadata ------------------------------------------------------------------------


def _metadata(field: Any) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def affects_results(field: Any) -> bool:
    """False for a setting declared ``affects_results=False`` (left out of the settings)."""
    return bool(_metadata(field).get("affects_results", True))


def omitted(field: Any, value: Any) -> bool:
    """True for a field declared ``omit_default`` whose value is its default."""
    return bool(_metadata(field).get("omit_default")) and value == field.get_default(call_default_factory=True)


def applies(field: Any, group_values: dict[str, Any]) -> bool:
    """False when the field is declared ``only_when=(other, value)`` and ``other`` is not ``value``
    (or not one of the values, when a list of them is given); for a setting that names several
    backends (:data:`NAMES_SEVERAL`), when none of them is."""
    condition = _metadata(field).get("only_when")
    if condition is None:
        return True
    wanted = condition[1]
    current = group_values.get(condition[0])
    if condition[0] in NAMES_SEVERAL:
        # a panel (``--nli a,b``): the option applies when it applies to one of its judges
        return any(
            name in wanted if isinstance(wanted, (list, tuple)) else name == wanted for name in member_names(current)
        )
    return current in wanted if isinstance(wanted, (list, tuple)) else current == wanted


#: settings whose value can name several backends (``--nli cross-encoder,align``)
NAMES_SEVERAL = frozenset({"nli"})


def member_names(value: object) -> list[str]:
    """The backend names a ``--nli`` value mentions (one for a single judge), without checking
    them (the grammar, ``NAME[=MODEL][@ROLE],…``, is :mod:`~fact_reasoner.settings.panel`'s):
    what a backend's option declared ``only_when=("nli", …)`` is matched against."""
    if not isinstance(value, str):
        return [value]  # type: ignore[list-item]
    return [part.split("@", 1)[0].split("=", 1)[0].strip() for part in value.split(",")]


def closed_to(field: Any) -> str | None:
    """The registry kind whose names are the setting's only values (declared with
    ``registry=…, closed=True``), else None."""
    metadata = _metadata(field)
    return str(metadata["registry"]) if metadata.get("registry") and metadata.get("closed") else None


def field_dest(name: str, field: Any) -> str:
    """The flat name of a field: its flag without dashes, and its top-level shorthand key."""
    return str(_metadata(field).get("dest") or name)


def one_of(names: Sequence[str], value: str) -> str:
    """``value`` if it is one of the registered ``names``; else the error pydantic gives for a
    fixed set of choices (these settings had one before their registries), naming them all."""
    if value in names:
        return value
    quoted = [repr(name) for name in names]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    raise ValueError(f"Input should be {listed}")


def assemble(name: str, declared: type[BaseModel], options: Iterable["Option"], *, module: str) -> type[BaseModel]:
    """A model named ``name`` with the fields of ``declared`` and the backends' ``options``
    (:class:`~fact_reasoner.settings.registry.Option`), each placed after the setting its ``after`` names
    (at the end when it names none; options after the same setting keep their order). It
    derives from ``declared``'s base, which holds the group's validators and methods: deriving
    from ``declared`` itself would put every added field after the declared ones. An option
    whose name is taken (by a setting or an earlier option) keeps the first declaration, as
    :meth:`Registry.options <fact_reasoner.settings.registry.Registry.options>` does."""
    names = list(declared.model_fields)
    fields: dict[str, Any] = {key: (info.annotation, info) for key, info in declared.model_fields.items()}
    last_after: dict[str, str] = {}  # the last option placed after each setting
    for added in options:
        if added.name in fields:
            continue
        if added.after is None:
            names.append(added.name)
        else:
            if added.after not in fields:
                raise TypeError(f"option {added.name!r} is placed after {added.after!r}, which {name} does not have")
            names.insert(names.index(last_after.get(added.after, added.after)) + 1, added.name)
            last_after[added.after] = added.name
        fields[added.name] = (added.annotation, added.field)
    model: type[BaseModel] = create_model(
        name,
        __base__=declared.__base__,
        __module__=module,
        __doc__=declared.__doc__,
        **{key: fields[key] for key in names},
    )
    return model
