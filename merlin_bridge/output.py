"""Reading merlin's MAR output files (and writing them, for the reference solver).

JSON (``--output-format json``, file ``<out>.MAR.json``), as merlin's source writes it (its
README's ``solution``/``marginal`` keys are wrong)::

    {"algorithm": "wmb", "ibound": 6, "iterations": 10, "task": "MAR",
     "value": <ln Z>, "status": "true"|"false", "message": "...",
     "marginals": [{"variable": i, "states": 2, "probabilities": [p0, p1]}, ...]}

UAI (``--output-format uai``, file ``<out>.MAR``)::

    PR
    <ln Z> (<Z>)
    STATUS
    true: Consistent evidence          (or  false: Inconsistent evidence or underflow)
    MAR
    N 2 p0 p1 2 p0 p1 ...

merlin prints numbers with ``std::fixed`` and 6 decimals, so marginals come back rounded to
1e-6 (at most 5e-7 off) and an underflowed ln Z is printed as ``-inf``/``nan``, which is not
JSON: those bare tokens are accepted here before parsing. ``status`` false means
``exp(ln Z) == 0``: the marginals are then empty or meaningless and
:class:`~merlin_bridge.errors.MerlinUnderflowError` is raised — never numbers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import MerlinOutputError, MerlinUnderflowError, MerlinVariableMismatchError

#: Tolerance on p0 + p1 = 1: merlin rounds each to 6 decimals.
SUM_TOLERANCE = 1e-4

# inf/nan as C++ prints them, after a key or inside an array; JSON has no spelling for them
_BARE_NUMBER = re.compile(r"([:\[,]\s*)(-?inf(?:inity)?|-?nan)(?=\s*[,}\]])", re.IGNORECASE)


@dataclass(frozen=True)
class MarOutput:
    """Parsed MAR output: ``marginals[i]`` is the distribution of UAI variable ``i``."""

    log_partition: float
    marginals: tuple[tuple[float, ...], ...]
    message: str = ""
    algorithm: str | None = None
    ibound: int | None = None
    iterations: int | None = None


def _check_marginals(entries: dict[int, list[float]], num_variables: int, source: str) -> tuple[tuple[float, ...], ...]:
    if len(entries) != num_variables or set(entries) != set(range(num_variables)):
        raise MerlinVariableMismatchError(
            f"{source}: the model has {num_variables} variables but the output lists "
            f"{len(entries)} (indices {sorted(entries)[:5]}{'…' if len(entries) > 5 else ''})"
        )
    out = []
    for i in range(num_variables):
        probs = entries[i]
        if any(math.isnan(p) or math.isinf(p) for p in probs):
            raise MerlinUnderflowError(
                f"{source}: merlin returned non-finite marginals for variable {i} ({probs}): its "
                "computation overflowed or underflowed; no marginals returned"
            )
        if len(probs) != 2:
            raise MerlinOutputError(f"{source}: variable {i} has {len(probs)} states, expected 2")
        if not all(math.isfinite(p) and -1e-9 <= p <= 1.0 + 1e-9 for p in probs):
            raise MerlinOutputError(f"{source}: variable {i} has probabilities outside [0, 1]: {probs}")
        if abs(sum(probs) - 1.0) > SUM_TOLERANCE:
            raise MerlinOutputError(f"{source}: probabilities of variable {i} sum to {sum(probs)}, not 1")
        out.append(tuple(probs))
    return tuple(out)


def _float(value: object, what: str, source: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise MerlinOutputError(f"{source}: {what} is not a number: {value!r}") from None


def parse_mar_json(
    text: str, num_variables: int, source: str = "merlin output", *, gibbs_quirks: bool = False
) -> MarOutput:
    """Parse ``<out>.MAR.json``; raise on underflow, truncation, malformed content or a
    variable count that differs from ``num_variables``.

    ``gibbs_quirks``: merlin's Gibbs sampler writes its JSON without the closing ``}``; with
    this flag (set by the runner for ``--algorithm gibbs`` only) a file whose only defect is
    that missing final brace is accepted. Any other truncation still fails.
    """
    if not text.strip():
        raise MerlinOutputError(f"{source} is empty")
    cleaned = _BARE_NUMBER.sub(lambda m: f'{m.group(1)}"{m.group(2)}"', text)
    if gibbs_quirks and cleaned.rstrip().endswith("]"):
        cleaned = cleaned.rstrip() + " }"
    try:
        data = json.loads(cleaned)
    except json.JSONDecodeError as exc:
        raise MerlinOutputError(f"{source} is not valid JSON (truncated or malformed): {exc}") from None
    if not isinstance(data, dict):
        raise MerlinOutputError(f"{source} is not a JSON object")
    if data.get("task") != "MAR":
        raise MerlinOutputError(f"{source}: task is {data.get('task')!r}, expected 'MAR'")
    status = data.get("status")
    message = str(data.get("message", ""))
    if status in ("false", False):
        raise MerlinUnderflowError(
            f"merlin reported status false ({message or 'no message'}): Z underflowed to 0 "
            f"(ln Z = {data.get('value')}) or the evidence is inconsistent; no marginals returned"
        )
    if status not in ("true", True):
        raise MerlinOutputError(f"{source}: status is {status!r}, expected 'true' or 'false'")
    log_z = _float(data.get("value"), "value (ln Z)", source)
    marginals = data.get("marginals")
    if not isinstance(marginals, list):
        raise MerlinOutputError(f"{source}: 'marginals' is missing or not a list")
    entries: dict[int, list[float]] = {}
    for item in marginals:
        if not isinstance(item, dict) or not {"variable", "probabilities"} <= item.keys():
            raise MerlinOutputError(f"{source}: a marginal entry lacks 'variable' or 'probabilities': {item!r}")
        index = item["variable"]
        if not isinstance(index, int) or isinstance(index, bool):
            raise MerlinOutputError(f"{source}: variable index {index!r} is not an integer")
        if index in entries:
            raise MerlinVariableMismatchError(f"{source}: variable {index} is listed twice")
        probs = [_float(p, f"a probability of variable {index}", source) for p in item["probabilities"]]
        if "states" in item and item["states"] != len(probs):
            raise MerlinOutputError(f"{source}: variable {index} says {item['states']} states, lists {len(probs)}")
        entries[index] = probs
    return MarOutput(
        log_partition=log_z,
        marginals=_check_marginals(entries, num_variables, source),
        message=message,
        algorithm=data.get("algorithm"),
        ibound=data.get("ibound"),
        iterations=data.get("iterations"),
    )


def parse_mar_uai(
    text: str, num_variables: int, source: str = "merlin output", *, gibbs_quirks: bool = False
) -> MarOutput:
    """Parse the UAI-format ``<out>.MAR`` (see the module docstring).

    ``gibbs_quirks``: merlin's Gibbs sampler writes only the ``MAR`` section (no ``PR``, no
    ``STATUS``); with this flag that is accepted and ln Z is reported as NaN.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise MerlinOutputError(f"{source} is empty")
    message = ""
    if gibbs_quirks and lines[0] == "MAR":
        log_z = math.nan
    else:
        try:
            pr = lines.index("PR")
            status_at = lines.index("STATUS")
        except ValueError:
            raise MerlinOutputError(f"{source} lacks a PR or STATUS section (truncated or malformed)") from None
        if pr + 1 >= len(lines) or status_at + 1 >= len(lines):
            raise MerlinOutputError(f"{source} is truncated after PR/STATUS")
        status_line = lines[status_at + 1]
        verdict, _, message = status_line.partition(":")
        if verdict.strip() == "false":
            raise MerlinUnderflowError(
                f"merlin reported status false ({message.strip() or 'no message'}): Z underflowed to 0 "
                f"(ln Z line: {lines[pr + 1]}) or the evidence is inconsistent; no marginals returned"
            )
        if verdict.strip() != "true":
            raise MerlinOutputError(f"{source}: STATUS line is {status_line!r}")
        log_z = _float(lines[pr + 1].split()[0], "ln Z", source)
    if "MAR" not in lines:
        raise MerlinOutputError(f"{source} has no MAR section (truncated)")
    tokens = " ".join(lines[lines.index("MAR") + 1 :]).split()
    if not tokens:
        raise MerlinOutputError(f"{source}: the MAR section is empty (truncated)")
    count = tokens[0]
    if not count.isdigit():
        raise MerlinOutputError(f"{source}: MAR section starts with {count!r}, not a variable count")
    if int(count) != num_variables:
        raise MerlinVariableMismatchError(
            f"{source}: the model has {num_variables} variables but the output lists {count}"
        )
    entries: dict[int, list[float]] = {}
    pos = 1
    for i in range(num_variables):
        if pos >= len(tokens):
            raise MerlinOutputError(f"{source} is truncated: marginal of variable {i} missing")
        states = tokens[pos]
        if not states.isdigit():
            raise MerlinOutputError(f"{source}: expected the number of states of variable {i}, got {states!r}")
        k = int(states)
        values = tokens[pos + 1 : pos + 1 + k]
        if len(values) != k:
            raise MerlinOutputError(f"{source} is truncated inside the marginal of variable {i}")
        entries[i] = [_float(v, f"a probability of variable {i}", source) for v in values]
        pos += 1 + k
    if pos != len(tokens):
        raise MerlinOutputError(f"{source} has {len(tokens) - pos} unexpected tokens after the marginals")
    return MarOutput(
        log_partition=log_z, marginals=_check_marginals(entries, num_variables, source), message=message.strip()
    )


# --------------------------------------------------------------------------------------------
# Writing (used by the reference solver, in merlin's exact layout)


def format_fixed(x: float, digits: int) -> str:
    """``std::fixed << std::setprecision(digits)``: ``-inf``/``nan`` spelled like glibc."""
    if math.isnan(x):
        return "nan" if math.copysign(1, x) > 0 else "-nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}f}"


def mar_json_text(
    *,
    algorithm: str,
    ibound: int,
    iterations: int,
    log_partition: float,
    marginals: Sequence[Sequence[float]] | None,
    digits: int = 6,
    samples: int = 1000,
) -> str:
    """merlin's MAR JSON text (``marginals=None`` writes the status-false form).

    For ``algorithm="gibbs"`` it copies merlin's Gibbs writer: ``samples`` instead of i-bound
    and iterations, no message, and no closing brace."""
    if algorithm == "gibbs":
        items = [
            f'{{ "variable" : {i},  "states" : {len(p)},  "probabilities" : [{", ".join(format_fixed(x, digits) for x in p)}] }}'
            for i, p in enumerate(marginals or [])
        ]
        return (
            f'{{ "algorithm" : "gibbs",  "samples" : {samples},  "task" : "MAR",  '
            f'"value" : {format_fixed(log_partition, digits)},  "status" : "true",  "marginals" : [ '
            + ", ".join(items)
            + "] "
        )
    head = (
        f'{{ "algorithm" : "{algorithm}",  "ibound" : {ibound},  "iterations" : {iterations},  '
        f'"task" : "MAR",  "value" : {format_fixed(log_partition, digits)}, '
    )
    if marginals is None:
        return head + ' "status" : "false",  "message" : "Inconsistent evidence or underflow",  "marginals" : [] }'
    items = []
    for i, probs in enumerate(marginals):
        values = ", ".join(format_fixed(p, digits) for p in probs)
        items.append(f'{{ "variable" : {i},  "states" : {len(probs)},  "probabilities" : [{values}] }}')
    return head + ' "status" : "true",  "message" : "Consistent evidence",  "marginals" : [ ' + ", ".join(items) + "] }"


def mar_uai_text(
    *,
    log_partition: float,
    marginals: Sequence[Sequence[float]] | None,
    status: bool = True,
    digits: int = 6,
    gibbs: bool = False,
) -> str:
    """merlin's UAI-format MAR text. Like merlin, the status-false form still lists whatever
    marginals there are (``None``: none); ``gibbs`` writes only the MAR section, as merlin's
    Gibbs sampler does."""
    z = (
        math.exp(log_partition)
        if math.isfinite(log_partition) and log_partition < 709
        else (0.0 if not math.isfinite(log_partition) or log_partition < 0 else math.inf)
    )
    lines = []
    if not gibbs:
        lines = ["PR", f"{format_fixed(log_partition, digits)} ({z:.{digits}e})", "STATUS"]
        lines.append("true: Consistent evidence" if status else "false: Inconsistent evidence or underflow")
    lines.append("MAR")
    parts = [str(len(marginals or []))]
    for probs in marginals or []:
        parts.append(str(len(probs)))
        parts += [format_fixed(p, digits) for p in probs]
    lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"
