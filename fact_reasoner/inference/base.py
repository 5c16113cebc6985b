"""The inference-engine protocol, its result type, and the engine registry.

An engine takes a :class:`~fact_reasoner.graph.factor_graph.FactorGraph` and returns P(x_v = 1) for every
variable. Engines see variable names only, never atoms or contexts. Engines live in
:data:`ENGINES` (a :class:`~fact_reasoner.settings.registry.Registry`); a new one (a user's own, an
installed package's through the ``fact_reasoner.engines`` entry-point group, the merlin bridge
through its plug-in module :mod:`merlin_bridge.plugin`) registers a factory under a name::

    from fact_reasoner.inference import register_engine
    register_engine("mine", lambda **options: MyEngine(**options), description="my engine")
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import FactReasonerError, SettingsError
from ..graph.factor_graph import FactorGraph
from ..settings.registry import Registry


@dataclass
class InferenceResult:
    """Posterior marginals P(x_v = 1) and how they were obtained."""

    marginals: dict[str, float]
    algorithm: str
    exact: bool
    converged: bool = True
    iterations: int = 0
    seconds: float = 0.0
    log_partition: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


class InferenceError(FactReasonerError, RuntimeError):
    """An engine could not produce marginals it can stand behind (never returns bad numbers)."""


@runtime_checkable
class InferenceEngine(Protocol):
    """Anything with a ``name`` and ``infer(graph) -> InferenceResult``."""

    name: str

    def infer(self, graph: FactorGraph) -> InferenceResult: ...


EngineFactory = Callable[..., InferenceEngine]

#: every inference engine (``--engine`` takes any of these names)
ENGINES: Registry[InferenceEngine] = Registry(
    "engines",
    noun="engine",
    entry_point_group="fact_reasoner.engines",
    # shipped beside the core but plugged in like an outside engine: it registers itself
    plugins=("merlin_bridge.plugin",),
)


def register_engine(name: str, factory: EngineFactory | str, **metadata: Any) -> None:
    """Register ``factory`` (a callable, or ``"module:attribute"`` imported on first use).

    ``metadata`` is passed on to :meth:`~fact_reasoner.settings.registry.Registry.register`
    (``description``, ``extras``, ``options`` …)."""
    ENGINES.register(name, factory, **metadata)


def available_engines() -> list[str]:
    """The registered engine names (``--engine`` takes any of them)."""
    return sorted(ENGINES.available())


def make_engine(name: Any = "native", **options: Any) -> InferenceEngine:
    """Create the engine registered as ``name`` with engine-specific ``options``.

    ``name`` may also be a :class:`~fact_reasoner.settings.config.PipelineConfig`: its ``engine`` group
    names the engine and gives the options (``options`` given here are added to them).
    Options an engine does not accept are an error, so a misspelt option is never ignored.
    Every problem with the name or the options raises :class:`~fact_reasoner.errors.SettingsError`
    (a ``ValueError``); an engine that cannot run at all (merlin's binary missing) raises its own
    :class:`InferenceError`.

    >>> from fact_reasoner import PipelineConfig, make_engine
    >>> from fact_reasoner.synthetic import paper_example_1
    >>> engine = make_engine("brute-force")
    >>> round(engine.infer(paper_example_1()).marginals["a1"], 4)  # the paper prints 0.32
    0.3179
    >>> make_engine(PipelineConfig(engine="native")).name
    'native'
    >>> make_engine("native", dampin=0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fact_reasoner.errors.SettingsError: engine 'native': unknown option dampin; it accepts method, ...
    """
    engine_group = getattr(name, "engine", None)
    if engine_group is not None and hasattr(engine_group, "engine_kwargs"):
        name, options = engine_group.name, engine_group.engine_kwargs() | options
    factory = ENGINES.factory(name)
    _check_option_types(name, factory, options)
    try:
        return factory(**options)
    except TypeError as error:  # an option of the right type the engine still cannot use
        raise SettingsError(f"engine {name!r}: {error}") from None
    except SettingsError:
        raise
    except ValueError as error:  # the engine's own check of an option's value (damping in [0, 1))
        raise SettingsError(str(error)) from error


def _check_option_types(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Reject an option whose value is not of its default's type (an int, float, bool or str
    default), naming the option: ``max_iterations=lots`` fails here, not deep in the engine."""
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    unknown = sorted(set(options) - set(parameters))
    if unknown and not takes_any:
        accepted = ", ".join(k for k, p in parameters.items() if p.kind is p.KEYWORD_ONLY or p.default is not p.empty)
        raise SettingsError(f"engine {name!r}: unknown option {', '.join(unknown)}; it accepts {accepted or 'none'}")
    expected_names = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    for key, value in options.items():
        parameter = parameters.get(key)
        if parameter is None or parameter.default is inspect.Parameter.empty or parameter.default is None:
            continue
        kind = type(parameter.default)
        if kind not in expected_names:
            continue
        # bool is an int in Python, but true/false is never a count or a number here
        allowed = (int, float) if kind is float else (kind,)
        if isinstance(value, bool) is not (kind is bool) or not isinstance(value, allowed):
            raise SettingsError(f"engine {name!r}: option {key} must be {expected_names[kind]}, got {value!r}")
