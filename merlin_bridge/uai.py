"""UAI model files (PASCAL/UAI inference competition format) for the FactReasoner graph.

Writing (:func:`export_graph`) produces three files from one stem:

``<stem>.uai``
    the model as a ``MARKOV`` network: line 1 ``MARKOV``; the number of variables; their
    cardinalities (all 2); the number of factors; one scope line per factor
    (``arity idx idx …``); then for each factor its table size and its values, row-major with
    the **last scope variable changing fastest**. Factors are the V unary priors
    ``[1 − p, p]`` (variable ``i`` for factor ``i``) followed by the pairwise factors in the
    graph's order, each with scope ``(source, target)`` and values
    ``table[0,0] table[0,1] table[1,0] table[1,1]``.
``<stem>.uai.evid``
    the evidence, one line ``N var val var val …`` (``0`` when there is none). The
    ``.uai.evid`` suffix is the UAI competition's convention and what merlin's examples use.
``<stem>.vars.json``
    the variable index ↔ name mapping. **Variable index = position of the name in the sorted
    list of variable names** (``sorted(graph.variables)``, Python string order), stored
    explicitly as ``"variables": [name_0, name_1, …]`` so no reader has to re-derive it; also
    the evidence by name and ``log_scale`` (see ``rescale``).

Values are printed with the shortest decimal string that reads back as the same double
(``numpy.format_float_positional(unique=True)``), always positional, never ``1e-06``:
pgmpy's ``UAIReader`` grammar accepts only ``digits[.digits]``, and positional digits keep the
round trip exact for every reader.

Reading (:func:`read_uai`, :func:`read_evidence`, :func:`read_variable_map`,
:func:`load_exported`) accepts any ``MARKOV`` or ``BAYES`` file into a generic
:class:`UaiModel`; :meth:`UaiModel.to_factor_graph` turns a binary model with unary and
pairwise factors back into a :class:`~fact_reasoner.graph.factor_graph.FactorGraph`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fact_reasoner.graph.factor_graph import FactorGraph

UAI_SUFFIX = ".uai"
EVIDENCE_SUFFIX = ".uai.evid"
VARIABLES_SUFFIX = ".vars.json"
VARIABLE_MAP_FORMAT = "merlin_bridge.vars/1"


# --------------------------------------------------------------------------------------------
# Generic model


@dataclass(frozen=True, eq=False)
class UaiModel:
    """A discrete graphical model as a UAI file holds it.

    ``tables[f]`` has shape ``tuple(cardinalities[v] for v in scopes[f])`` and is indexed in
    scope order, so ``tables[f].ravel()`` (C order, last axis fastest) is the file's order.
    For ``BAYES`` files the last scope variable of each factor is the child.
    """

    network_type: str  # "MARKOV" or "BAYES"
    cardinalities: tuple[int, ...]
    scopes: tuple[tuple[int, ...], ...]
    tables: tuple[np.ndarray, ...]

    def __post_init__(self) -> None:
        if self.network_type not in ("MARKOV", "BAYES"):
            raise ValueError(f"network type must be MARKOV or BAYES, not {self.network_type!r}")
        if len(self.scopes) != len(self.tables):
            raise ValueError("scopes and tables disagree on the number of factors")
        n = len(self.cardinalities)
        for f, (scope, table) in enumerate(zip(self.scopes, self.tables)):
            if any(not 0 <= v < n for v in scope):
                raise ValueError(f"factor {f} names a variable outside 0..{n - 1}: {scope}")
            if len(set(scope)) != len(scope):
                raise ValueError(f"factor {f} repeats a variable in its scope: {scope}")
            shape = tuple(self.cardinalities[v] for v in scope)
            if table.shape != shape:
                raise ValueError(f"factor {f} has a table of shape {table.shape}, scope needs {shape}")

    @property
    def num_variables(self) -> int:
        return len(self.cardinalities)

    @property
    def num_factors(self) -> int:
        return len(self.scopes)

    def to_factor_graph(self, names: Sequence[str] | None = None) -> tuple[FactorGraph, float]:
        """The model as a :class:`FactorGraph` (variable ``i`` named ``names[i]``), and the log
        of the constant the model was divided by.

        Needs a binary ``MARKOV`` model whose factors are unary or pairwise. The unary factors
        of a variable multiply into its prior: when a variable has exactly one unary factor
        ``[q0, q1]`` with ``q0 + q1 == 1`` its prior is ``q1`` exactly (so a file written by
        :func:`export_graph` reads back bit for bit); otherwise the product is normalised,
        ``p = u1 / (u0 + u1)``, and ``log(u0 + u1)`` goes into the returned log constant, as
        it does for a variable with no unary factor (prior 0.5, constant log 2). Hence
        ``ln Z(file) = ln Z(graph) + log_constant``.
        """
        if self.network_type != "MARKOV":
            raise ValueError("only MARKOV models convert to a FactorGraph")
        if any(c != 2 for c in self.cardinalities):
            raise ValueError("only binary models convert to a FactorGraph (a variable has cardinality ≠ 2)")
        if names is None:
            names = [f"x{i}" for i in range(self.num_variables)]
        if len(names) != self.num_variables:
            raise ValueError(f"{len(names)} names for {self.num_variables} variables")
        unary: list[list[np.ndarray]] = [[] for _ in range(self.num_variables)]
        source, target, tables = [], [], []
        for scope, table in zip(self.scopes, self.tables):
            if len(scope) == 1:
                unary[scope[0]].append(table)
            elif len(scope) == 2:
                source.append(scope[0])
                target.append(scope[1])
                tables.append(table)
            else:
                raise ValueError(f"a factor of arity {len(scope)} has no place in a pairwise FactorGraph")
        prior = np.empty(self.num_variables)
        log_constant = 0.0
        for v, factors in enumerate(unary):
            if len(factors) == 1 and factors[0][0] + factors[0][1] == 1.0:
                prior[v] = factors[0][1]
                continue
            u = np.prod(factors, axis=0) if factors else np.ones(2)
            total = float(u.sum())
            if total <= 0.0:
                raise ValueError(f"the unary factors of variable {v} multiply to zero")
            prior[v] = u[1] / total
            log_constant += math.log(total)
        graph = FactorGraph(
            variables=tuple(names),
            prior=prior,
            source=np.array(source, dtype=np.int64),
            target=np.array(target, dtype=np.int64),
            tables=np.array(tables, dtype=float).reshape(-1, 2, 2),
        )
        return graph, log_constant


# --------------------------------------------------------------------------------------------
# Writing


def format_value(x: float) -> str:
    """Shortest positional decimal that parses back to exactly ``x`` (``0.000001``, not
    ``1e-06``, because pgmpy's UAI grammar has no exponents)."""
    if not math.isfinite(x) or x < 0.0:
        raise ValueError(f"a factor value must be finite and non-negative, not {x!r}")
    return np.format_float_positional(float(x), unique=True, trim="-")


def variable_order(graph: FactorGraph) -> tuple[str, ...]:
    """UAI variable order: index ``i`` is the ``i``-th name in sorted order (the mapping merlin's
    output is read back with)."""
    return tuple(sorted(graph.variables))


def graph_to_uai_model(graph: FactorGraph, *, rescale: bool = False) -> tuple[UaiModel, tuple[str, ...], float]:
    """The graph as a :class:`UaiModel` in sorted-name order, its names, and ``log_scale``.

    With ``rescale`` every table is divided by its largest entry (marginals unchanged) and
    ``log_scale = Σ_f log max(table_f)``, so ``ln Z(graph) = ln Z(file) + log_scale``. This
    keeps ln Z of a large FR graph (thousands of factors ≤ 1) from falling below the
    ≈ −745 where merlin's ``exp(ln Z) == 0`` test reports underflow and drops the marginals.
    """
    names = variable_order(graph)
    position = {name: i for i, name in enumerate(names)}
    remap = np.array([position[name] for name in graph.variables], dtype=np.int64)
    unary_tables = [np.array([1.0 - p, p]) for p in graph.prior[np.argsort(remap)]]
    # graph.prior[k] belongs to graph.variables[k] whose UAI index is remap[k]; argsort(remap)
    # lists graph positions in UAI-index order.
    scopes: list[tuple[int, ...]] = [(i,) for i in range(len(names))]
    scopes += [(int(remap[s]), int(remap[t])) for s, t in zip(graph.source, graph.target)]
    tables = unary_tables + [np.array(t, dtype=float) for t in graph.tables]
    log_scale = 0.0
    if rescale:
        scaled = []
        for table in tables:
            top = float(table.max())
            if top <= 0.0:
                raise ValueError("a factor table is all zeros: Z = 0")
            scaled.append(table / top)
            log_scale += math.log(top)
        tables = scaled
    model = UaiModel("MARKOV", (2,) * len(names), tuple(scopes), tuple(tables))
    return model, names, log_scale


def uai_text(model: UaiModel) -> str:
    """The UAI file text of ``model`` (full precision, last scope variable fastest)."""
    lines = [
        model.network_type,
        str(model.num_variables),
        " ".join(str(c) for c in model.cardinalities),
        str(model.num_factors),
    ]
    lines += [" ".join([str(len(scope)), *map(str, scope)]) for scope in model.scopes]
    for table in model.tables:
        lines.append("")
        lines.append(str(table.size))
        lines.append(" ".join(format_value(x) for x in table.ravel(order="C")))
    return "\n".join(lines) + "\n"


def evidence_text(evidence: Mapping[int, int]) -> str:
    """Evidence line ``N var val var val …`` (variables in increasing index order)."""
    items = sorted(evidence.items())
    return " ".join([str(len(items)), *(f"{var} {val}" for var, val in items)]) + "\n"


@dataclass(frozen=True)
class ExportedFiles:
    """Paths written by :func:`export_graph`."""

    uai: Path
    evidence: Path
    variables: Path

    def as_list(self) -> list[Path]:
        return [self.uai, self.evidence, self.variables]


def export_paths(path_stem: str | Path) -> ExportedFiles:
    stem = str(path_stem)
    return ExportedFiles(Path(stem + UAI_SUFFIX), Path(stem + EVIDENCE_SUFFIX), Path(stem + VARIABLES_SUFFIX))


def record_stem(directory: str | Path, record_id: str) -> Path:
    """``directory/<safe record id>``: a stem for :func:`export_graph` when exporting one model
    per record. Characters other than letters, digits, ``-``, ``_`` and ``.`` become ``_``
    (so an id can never escape ``directory``); an empty result becomes ``record``."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_.") else "_" for ch in str(record_id))
    safe = safe.lstrip(".") or "record"
    return Path(directory) / safe


def export_graph(
    graph: FactorGraph,
    path_stem: str | Path,
    evidence: Mapping[str, int] | None = None,
    *,
    rescale: bool = False,
) -> list[Path]:
    """Write ``<stem>.uai``, ``<stem>.uai.evid`` and ``<stem>.vars.json``; return their paths.

    ``evidence`` maps variable names to observed values (0 or 1). ``rescale`` divides every
    table by its maximum (see :func:`graph_to_uai_model`); the default writes the graph's
    tables unchanged.
    """
    evidence = dict(evidence or {})
    model, names, log_scale = graph_to_uai_model(graph, rescale=rescale)
    position = {name: i for i, name in enumerate(names)}
    for name, value in evidence.items():
        if name not in position:
            raise ValueError(f"evidence names an unknown variable {name!r}")
        if value not in (0, 1):
            raise ValueError(f"evidence value of {name!r} must be 0 or 1, not {value!r}")
    paths = export_paths(path_stem)
    paths.uai.parent.mkdir(parents=True, exist_ok=True)
    paths.uai.write_text(uai_text(model), encoding="ascii")
    paths.evidence.write_text(
        evidence_text({position[name]: int(value) for name, value in evidence.items()}), encoding="ascii"
    )
    mapping = {
        "format": VARIABLE_MAP_FORMAT,
        "index_rule": "variable index = position of the name in sorted(variable names)",
        "variables": list(names),
        "evidence": {name: int(value) for name, value in sorted(evidence.items())},
        "num_unary_factors": len(names),
        "num_pairwise_factors": graph.num_factors,
        "log_scale": log_scale,
        "rescaled": rescale,
    }
    paths.variables.write_text(json.dumps(mapping, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return paths.as_list()


# --------------------------------------------------------------------------------------------
# Reading


def _tokens(text: str) -> list[str]:
    # '#' starts a comment in some UAI files (pgmpy strips them too).
    return " ".join(line.split("#", 1)[0] for line in text.splitlines()).split()


def parse_uai(text: str) -> UaiModel:
    """Parse UAI text (MARKOV or BAYES) into a :class:`UaiModel`; clear errors on bad input."""
    tokens = _tokens(text)
    pos = 0

    def take(what: str) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"UAI text ends early: expected {what}")
        pos += 1
        return tokens[pos - 1]

    def take_int(what: str) -> int:
        token = take(what)
        try:
            value = int(token)
        except ValueError:
            raise ValueError(f"expected an integer for {what}, got {token!r}") from None
        if value < 0:
            raise ValueError(f"{what} is negative: {value}")
        return value

    network_type = take("the network type").upper()
    if network_type not in ("MARKOV", "BAYES"):
        raise ValueError(f"UAI network type must be MARKOV or BAYES, not {network_type!r}")
    n = take_int("the number of variables")
    cardinalities = tuple(take_int(f"the cardinality of variable {i}") for i in range(n))
    if any(c == 0 for c in cardinalities):
        raise ValueError("a variable has cardinality 0")
    num_factors = take_int("the number of factors")
    scopes = []
    for f in range(num_factors):
        arity = take_int(f"the arity of factor {f}")
        scopes.append(tuple(take_int(f"variable {j} of factor {f}'s scope") for j in range(arity)))
    tables = []
    for f, scope in enumerate(scopes):
        size = take_int(f"the table size of factor {f}")
        shape = tuple(cardinalities[v] if v < n else 0 for v in scope)
        if any(v >= n for v in scope):
            raise ValueError(f"factor {f} names a variable outside 0..{n - 1}: {scope}")
        if size != math.prod(shape):
            raise ValueError(f"factor {f} declares {size} values, its scope needs {math.prod(shape)}")
        values = []
        for k in range(size):
            token = take(f"value {k} of factor {f}")
            try:
                values.append(float(token))
            except ValueError:
                raise ValueError(f"value {k} of factor {f} is not a number: {token!r}") from None
        tables.append(np.array(values, dtype=float).reshape(shape))
    if pos != len(tokens):
        raise ValueError(f"UAI text has {len(tokens) - pos} unexpected trailing tokens")
    return UaiModel(network_type, cardinalities, tuple(scopes), tuple(tables))


def read_uai(path: str | Path) -> UaiModel:
    """Read a UAI model file (see :func:`parse_uai`)."""
    return parse_uai(Path(path).read_text(encoding="ascii"))


def read_evidence(path: str | Path) -> dict[int, int]:
    """Read an evidence file ``N var val …`` into ``{var index: value}``.

    An empty file means no evidence. (The old multi-sample format, a sample count before
    each line, is not supported: merlin reads only one sample too.)
    """
    tokens = _tokens(Path(path).read_text(encoding="ascii"))
    if not tokens:
        return {}
    try:
        numbers = [int(t) for t in tokens]
    except ValueError:
        raise ValueError(f"evidence file {path} holds a non-integer token") from None
    count, rest = numbers[0], numbers[1:]
    if len(rest) != 2 * count:
        raise ValueError(f"evidence file {path} announces {count} pairs but holds {len(rest) / 2:g}")
    pairs = dict(zip(rest[0::2], rest[1::2]))
    if len(pairs) != count:
        raise ValueError(f"evidence file {path} observes a variable twice")
    return pairs


@dataclass(frozen=True)
class VariableMap:
    """Contents of ``<stem>.vars.json``: ``variables[i]`` is the name of UAI variable ``i``."""

    variables: tuple[str, ...]
    evidence: dict[str, int]
    log_scale: float = 0.0

    def index(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.variables)}


def read_variable_map(path: str | Path) -> VariableMap:
    """The variable map written beside an exported UAI file (UAI index → variable name)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != VARIABLE_MAP_FORMAT:
        raise ValueError(f"{path} is not a {VARIABLE_MAP_FORMAT} variable map")
    variables = tuple(data["variables"])
    if len(set(variables)) != len(variables):
        raise ValueError(f"{path} lists a variable name twice")
    return VariableMap(variables, dict(data.get("evidence", {})), float(data.get("log_scale", 0.0)))


@dataclass(frozen=True)
class ExportedModel:
    """A model read back from :func:`export_graph`'s files."""

    graph: FactorGraph  # variables in UAI index order (sorted names)
    evidence: dict[str, int]
    variables: VariableMap
    log_constant: float  # ln Z(file) = ln Z(graph) + log_constant


def load_exported(path_stem: str | Path) -> ExportedModel:
    """Read ``<stem>.uai``, ``<stem>.uai.evid`` and ``<stem>.vars.json`` back."""
    paths = export_paths(path_stem)
    variables = read_variable_map(paths.variables)
    model = read_uai(paths.uai)
    if model.num_variables != len(variables.variables):
        raise ValueError(
            f"{paths.uai} has {model.num_variables} variables, {paths.variables} names {len(variables.variables)}"
        )
    graph, log_constant = model.to_factor_graph(variables.variables)
    evidence = {}
    if paths.evidence.exists():
        evidence = {variables.variables[i]: v for i, v in read_evidence(paths.evidence).items()}
    if evidence != variables.evidence:
        raise ValueError(f"{paths.evidence} and {paths.variables} disagree on the evidence")
    return ExportedModel(graph, evidence, variables, log_constant)
