"""One registry for every kind of pluggable backend: name → factory, plus what it needs.

Each kind is one :class:`Registry`, and every factory of a kind is called the same way, from
one place (its ``make_*`` function):

- ``engines``: ``factory(**engine_options)`` (:func:`fact_reasoner.inference.make_engine`);
- ``retrievers``: ``factory(config)`` (:func:`fact_reasoner.retrieval.make_retriever`);
- ``nli``: ``factory(models, llm_factory)``, ``models`` the configuration's ``models`` group
  (:func:`fact_reasoner.nli.factory.make_nli`);
- ``llm_backends``: ``factory(config, cache)`` (:func:`fact_reasoner.llm.make_llm`);
- ``metrics``: ``factory(**metric_parameters)`` (:func:`fact_reasoner.metrics.make_metric`);
- ``pipelines``: ``factory(config, **stages)`` (:func:`fact_reasoner.pipelines.make_pipeline`);
- ``commands``: ``factory()``, a :class:`~fact_reasoner.commands.base.Command` class
  (:func:`fact_reasoner.commands.main`);
- ``executors``: ``factory(execution_options, code_paths=…)``
  (:func:`fact_reasoner.executors.make_executor`);
- ``checkworthy``: ``factory(llm)`` (:func:`fact_reasoner.atoms.checkworthy.make_classifier`);
- ``embedders``: ``factory(model_path, threads=…, cache_dir=…)``
  (:class:`fact_reasoner.embeddings.SentenceEmbedder`).

An entry says everything the rest of the program needs to know about a backend, in one place:

- the **factory** that builds it (a callable, or ``"module:attribute"`` imported on first use,
  so a heavy backend costs nothing until chosen);
- a one-line **description** (``--help`` and ``available()`` show it);
- the **extras** it needs: importable modules and the pip extra that installs each one
  (preflight checks them before a run and says how to install them: from this project's
  checkout, the CPU build of torch first where torch is one of them), and what else it
  **also needs** once they are installed (the published checkers' weights, downloaded once);
- the **options** it adds to the configuration (each becomes a setting and a command-line
  flag; merlin's ``--merlin-path`` is one);
- the other stages it **uses** (the LLM judge uses the language model; ``relations``: an NLI
  entry that judges with the records' own relations) and a start-up **check** (the web search
  needs its API key);
- the entry it **resolves to**, for a name that stands for another one (``--nli auto`` for the
  default judge): :meth:`Registry.resolve` follows it, so that choice is made in one place.

A name nothing is registered under raises :class:`UnknownName` (or the kind's subclass of it),
listing the choices, wherever it is looked up. A kind that also takes ``module:callable`` paths
(``--service-type my.module:factory``) imports them through the same loader as every
``"module:attribute"`` factory.

Outside packages add backends without touching this project: an entry point in the kind's
group (``fact_reasoner.<kind>``: ``fact_reasoner.engines``, ``fact_reasoner.retrievers`` …)
named after the backend, pointing to its factory. Entry points are read on the first lookup.

A small registry of its own::

    >>> from fact_reasoner.settings.registry import Extra, Registry
    >>> greeters = Registry("greeters", noun="greeter")
    >>> greeters.register("hello", lambda name: f"hello {name}", description="says hello")
    >>> greeters.available()
    ['hello']
    >>> greeters.make("hello", "world")
    'hello world'
    >>> greeters.make("bye", "world")
    Traceback (most recent call last):
    ...
    fact_reasoner.settings.registry.UnknownName: unknown greeter 'bye'; choose from: hello
    >>> greeters.register("shout", "string:capwords", extras=[Extra("no_such_module_here", "shouting")])
    >>> [extra.module for extra in greeters.missing_extras("shout")]
    ['no_such_module_here']

Adding a kind (a later ``pipelines`` kind, say): create its ``Registry`` beside its factory
function, register the built-ins there, and name it in :data:`KINDS`; ``available()``, the
entry-point group and the error messages follow from that.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from ..errors import SettingsError, StageUnavailable

logger = logging.getLogger(__name__)

__all__ = [
    "CPU_TORCH",
    "KINDS",
    "TORCH_FIRST",
    "Entry",
    "Extra",
    "Option",
    "Registry",
    "UnknownName",
    "available",
    "install_hint",
    "install_steps",
    "numbered",
    "registry",
    "require_extras",
]

#: this project's distribution, as its checkout's ``pyproject.toml`` names it. It is on no package
#: index, so an extra is installed from the checkout (:func:`install_hint`); never name
#: ``fact-reasoner`` in a hint: a different project of that name is on PyPI
DISTRIBUTION = "fact-reasoner-offline"
#: torch without CUDA: the CPU build, from PyTorch's own index. A bare ``torch`` requirement (an
#: extra's ``torch>=2.10``) pulls the CUDA build from PyPI, about 3 GB of nvidia packages
CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
#: what an :class:`Extra` of torch installs first (its ``first``)
TORCH_FIRST = f"install the CPU build of torch: `{CPU_TORCH}` (a bare `torch` brings the CUDA build, about 3 GB)"


def checkout() -> Path | None:
    """The checkout this package runs from (an editable install, as the quick start's), or None
    when it was installed otherwise (the folder above the package has no ``pyproject.toml`` of
    :data:`DISTRIBUTION`)."""
    root = Path(__file__).resolve().parents[2]
    try:
        declared = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in declared else None


def install_hint(extra: str) -> str:
    """How a user installs this project's ``extra``: ``pip install -e '.[extra]'`` in its
    checkout (named when this package runs from one), the way the quick start installed it."""
    root = checkout()
    return f"`pip install -e '.[{extra}]'` in this project's checkout" + (f" ({root})" if root else "")


T = TypeVar("T")


class UnknownName(SettingsError):
    """A name no backend of the kind is registered under (the message lists the choices); a
    :class:`~fact_reasoner.errors.SettingsError`, so a ``ValueError`` too."""


@dataclass(frozen=True)
class Extra:
    """A module a backend imports, and the pip extra of this project that installs it; ``first``:
    what to install before the extra when this module is missing, with its command
    (:data:`TORCH_FIRST` for torch, which the extra would otherwise bring with CUDA)."""

    module: str
    extra: str
    first: str | None = None

    def missing(self) -> bool:
        """True when the module cannot be imported here."""
        try:
            return importlib.util.find_spec(self.module) is None
        except (ImportError, ValueError):  # a parent package that is itself missing
            return True

    def install_hint(self) -> str:
        """The install of its extra (:func:`install_hint`), after ``first`` where there is one."""
        steps = install_steps([self])
        return install_hint(self.extra) if len(steps) == 1 else numbered(steps)


def install_steps(extras: Sequence[Extra]) -> list[str]:
    """The installs that bring the missing ``extras``, in the order they must run: what must come
    first (the CPU build of torch), then each extra from this project's checkout."""
    firsts = [extra.first for extra in extras if extra.first]
    names = [extra.extra for extra in extras]
    return list(dict.fromkeys([*firsts, *(f"install the {name} extra: {install_hint(name)}" for name in names)]))


def numbered(steps: Sequence[str]) -> str:
    """Steps in one line, in order: the step alone, or ``(1) …; (2) …``."""
    if len(steps) == 1:
        return steps[0]
    return "; ".join(f"({number}) {step}" for number, step in enumerate(steps, 1))


def require_extras(needed: Iterable[tuple[str, Extra]], also_needs: Mapping[str, str] | None = None) -> None:
    """Raise :class:`~fact_reasoner.errors.StageUnavailable` for the first ``what`` (what needs
    them) some of whose extras' modules cannot be imported: one line naming those packages and
    the steps that make it work, in order: the installs (:func:`install_steps`), then what
    ``what`` also needs once they are installed (``also_needs[what]``: a checker's weights,
    downloaded once)."""
    missing: dict[str, list[Extra]] = {}
    for what, extra in needed:
        if extra.missing():
            missing.setdefault(what, []).append(extra)
    if not missing:
        return
    what, extras = next(iter(missing.items()))
    modules = ", ".join(dict.fromkeys(repr(extra.module) for extra in extras))
    noun = "package" if len(extras) == 1 else "packages"
    steps = install_steps(extras)
    also = (also_needs or {}).get(what)
    if len(steps) == 1 and not also:  # the extra alone: its command
        raise StageUnavailable(f"{what} needs the Python {noun} {modules}: {install_hint(extras[0].extra)}")
    raise StageUnavailable(f"{what} needs the Python {noun} {modules}: {numbered([*steps, *([also] if also else [])])}")


@dataclass(frozen=True)
class Option:
    """A setting a backend adds to its kind's group of the configuration (and so a command-line
    flag, a key of the config file and, if it can change a result, of the output's settings).

    ``field`` is a pydantic field made with :func:`fact_reasoner.settings.fields.option` (default,
    description, flag spelling, whether it changes results); ``after`` the setting of the group
    it stands after (in ``--help``, the config file and the settings; default: at the end).
    Engines receive their options as keywords of the factory (``argument``: the keyword, when
    not ``name``; passed only when set, and only to the engine that declared it); the other
    kinds read them from the configuration (``config.models.nli_samples``).

    Which group a kind's options join: :data:`fact_reasoner.settings.config.PipelineConfig` (each group
    names the kinds it takes options from). The group's model is assembled when a configuration
    is first built after a registration, so a backend registered in code, or by a plug-in
    loaded on the first lookup (``merlin_bridge.plugin``), adds its settings; a backend that
    comes from an entry point declares none (an engine's then go through
    ``--engine-option KEY=VALUE``).
    """

    name: str
    annotation: Any
    field: Any
    argument: str | None = None
    after: str | None = None

    @property
    def keyword(self) -> str:
        return self.argument or self.name


@dataclass
class Entry(Generic[T]):
    """One registered backend (see the module docstring for what each part is for)."""

    name: str
    factory: Callable[..., T] | str
    description: str = ""
    extras: tuple[Extra, ...] = ()
    options: tuple[Option, ...] = ()
    uses: tuple[str, ...] = ()
    check: Callable[..., Any] | str | None = None
    builtin: bool = False
    origin: str = "registered"
    resolves_to: str | None = None
    also_needs: str = ""

    @property
    def option_names(self) -> tuple[str, ...]:
        """The names of the settings the backend adds (its :attr:`options`)."""
        return tuple(option.name for option in self.options)

    def load(self) -> Callable[..., T]:
        """The factory, imported now if it was given as ``"module:attribute"``."""
        factory = self.factory
        if isinstance(factory, str):
            factory = self.factory = _import_attribute(factory)
        return factory

    def run_check(self, *args: Any) -> None:
        """Run the start-up check, if any (it raises when the backend cannot work)."""
        if self.check is None:
            return
        check = _import_attribute(self.check) if isinstance(self.check, str) else self.check
        check(*args)


def _import_attribute(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        value = getattr(value, part)
    return value


class Registry(Generic[T]):
    """Backends of one kind by name.

    Parameters
    ----------
    kind:
        The kind's plural name (``engines``), its key in :func:`available`.
    noun:
        What one backend is called in messages (``engine``, ``NLI backend``).
    entry_point_group:
        Where installed packages declare their backends (None: no entry points).
    plugins:
        Modules shipped with this project that register themselves into this registry when
        imported (loaded on the first lookup, like entry points).
    paths:
        Whether a ``"module:callable"`` path that is not registered names a factory too.
    error:
        The :class:`UnknownName` subclass raised for an unknown name (a kind whose callers
        catch their own error class, such as the retrievers' ``RetrievalError``).
    """

    def __init__(
        self,
        kind: str,
        *,
        noun: str | None = None,
        entry_point_group: str | None = None,
        plugins: Sequence[str] = (),
        paths: bool = False,
        error: type[UnknownName] | None = None,
    ) -> None:
        self.kind = kind
        self.noun = noun or kind.rstrip("s")
        self.entry_point_group = entry_point_group
        self.plugins = tuple(plugins)
        self.paths = paths
        self.error = error or UnknownName
        self._entries: dict[str, Entry[T]] = {}
        self._aliases: dict[str, str] = {}
        self._loaded = False
        self._loading = False
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} registered)"

    # -- registering ------------------------------------------------------------------------

    def register(
        self,
        name: str,
        factory: Callable[..., T] | str,
        *,
        description: str = "",
        extras: Iterable[Extra] = (),
        options: Iterable[Option] = (),
        uses: Iterable[str] = (),
        check: Callable[..., Any] | str | None = None,
        aliases: Iterable[str] = (),
        builtin: bool = False,
        origin: str = "registered",
        resolves_to: str | None = None,
        also_needs: str = "",
    ) -> None:
        """Register ``factory`` under ``name`` (a later registration of the same name replaces it)."""
        with self._lock:
            self._entries[name] = Entry(
                name=name,
                factory=factory,
                description=description,
                extras=tuple(extras),
                options=tuple(options),
                uses=tuple(uses),
                check=check,
                builtin=builtin,
                origin=origin,
                resolves_to=resolves_to,
                also_needs=also_needs,
            )
            for alias in aliases:
                self._aliases[alias] = name

    def unregister(self, name: str) -> None:
        """Forget ``name`` and its aliases (a test's or a session's own backend)."""
        with self._lock:
            self._entries.pop(name, None)
            for alias in [a for a, target in self._aliases.items() if target == name]:
                del self._aliases[alias]

    def _load_plugins(self) -> None:
        """Import the bundled plug-in modules and read the entry points, once."""
        if self._loaded:
            return
        with self._lock:  # another thread waits here until the names are complete
            if self._loaded or self._loading:
                return  # _loading: a plug-in registering itself (same thread) looks names up
            self._loading = True
            try:
                for module in self.plugins:
                    try:
                        importlib.import_module(module)
                    except ImportError as error:
                        logger.warning("%s plug-in %s could not be loaded: %s", self.noun, module, error)
                if self.entry_point_group:
                    self._load_entry_points(self.entry_point_group)
            finally:
                self._loaded, self._loading = True, False

    def _load_entry_points(self, group: str) -> None:
        from importlib.metadata import entry_points

        for point in entry_points(group=group):
            if point.name in self._entries:
                continue  # a name registered in code wins over an installed package's
            distribution = getattr(point.dist, "name", None) or "an installed package"
            self._entries[point.name] = Entry(
                name=point.name,
                factory=_EntryPointFactory(point),
                description=f"from {distribution}",
                origin=f"entry point {group}",
            )

    # -- looking up -------------------------------------------------------------------------

    def available(self) -> list[str]:
        """The registered names, in registration order (aliases left out)."""
        self._load_plugins()
        return list(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.available())

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return isinstance(name, str) and (name in self._entries or name in self._aliases)

    def entry(self, name: str) -> Entry[T]:
        """The entry registered as ``name`` (or an alias of it), or for a kind that takes paths
        the ``module:callable`` that ``name`` is; :class:`UnknownName` if none."""
        self._load_plugins()
        entry = self._entries.get(self._aliases.get(name, name))
        if entry is None:
            if self.paths and ":" in name:
                return Entry(name=name, factory=name, description="a module:callable path", origin="path")
            raise self.unknown(name)
        return entry

    def resolve(self, name: str) -> str:
        """The entry that ``name`` stands for: its ``resolves_to`` (``auto`` → the default NLI
        judge), else its own name (an alias → the name it is registered under)."""
        entry = self.entry(name)
        return entry.resolves_to or entry.name

    def unknown(self, name: str) -> UnknownName:
        """The error for a name nothing is registered under, listing the choices."""
        return self.error(f"unknown {self.noun} {name!r}; choose from: {', '.join(self.available())}")

    def factory(self, name: str) -> Callable[..., T]:
        entry = self.entry(name)
        if entry.origin != "path":
            return entry.load()
        module_name, _, attribute = name.partition(":")
        try:
            return entry.load()
        except ImportError as error:
            raise self.error(f"{self.noun} {name!r}: cannot import {module_name!r}: {error}") from error
        except AttributeError as error:
            raise self.error(f"{self.noun} {name!r}: {module_name!r} has no {attribute!r}") from error

    def make(self, name: str, *args: Any, **kwargs: Any) -> T:
        """Build the backend registered as ``name`` with the given arguments."""
        return self.factory(name)(*args, **kwargs)

    def missing_extras(self, name: str) -> list[Extra]:
        """The extras of ``name`` whose module cannot be imported here, in declared order."""
        return [extra for extra in self.entry(name).extras if extra.missing()]

    def descriptions(self) -> dict[str, str]:
        """Name → one-line description, for ``--help`` and listings."""
        return {name: self.entry(name).description for name in self.available()}

    def options(self) -> list[Option]:
        """Every option any registered backend declares (each name once: the first wins)."""
        seen: dict[str, Option] = {}
        for name in self.available():
            for option in self.entry(name).options:
                seen.setdefault(option.name, option)
        return list(seen.values())


@dataclass
class _EntryPointFactory:
    """An entry point's target, imported on the first call (listing names imports nothing)."""

    point: Any
    _loaded: Any = field(default=None, repr=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._loaded is None:
            self._loaded = self.point.load()
        return self._loaded(*args, **kwargs)


#: every kind: its name in :func:`available` → where its registry lives (imported on use, so
#: listing the kinds loads nothing and the core never imports, say, the metrics package)
KINDS: dict[str, str] = {
    "engines": "fact_reasoner.inference.base:ENGINES",
    "retrievers": "fact_reasoner.retrieval.base:RETRIEVERS",
    "nli": "fact_reasoner.nli.factory:NLI_BACKENDS",
    "llm_backends": "fact_reasoner.llm:LLM_BACKENDS",
    "metrics": "fact_reasoner.metrics.catalog:METRICS",
    "pipelines": "fact_reasoner.pipelines:PIPELINES",
    "commands": "fact_reasoner.commands:COMMANDS",
    "executors": "fact_reasoner.executors:EXECUTORS",
    "checkworthy": "fact_reasoner.atoms.checkworthy:CHECKWORTHY",
    "embedders": "fact_reasoner.embeddings:EMBEDDERS",
}


def registry(kind: str) -> Registry[Any]:
    """The registry of ``kind`` (one of :data:`KINDS`)."""
    try:
        location = KINDS[kind]
    except KeyError:
        raise UnknownName(f"unknown kind {kind!r}; choose from: {', '.join(KINDS)}") from None
    found = _import_attribute(location)
    if not isinstance(found, Registry):  # pragma: no cover - a declaration error
        raise TypeError(f"{location} is not a Registry")
    return found


def available() -> dict[str, list[str]]:
    """What is registered, by kind."""
    return {kind: registry(kind).available() for kind in KINDS}
