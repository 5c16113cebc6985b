"""Finding and running the merlin binary.

The binary comes from an explicit path (``--merlin-path``) or the ``MERLIN_PATH`` environment
variable. It runs as::

    merlin --input-file F.uai --evidence-file F.uai.evid --task MAR --algorithm wmb
           --ibound 6 [--iterations N] --output-format json --output-file OUT

in its own process group with a timeout (the whole group is killed when it runs out, so a
wrapper script cannot leave a solver behind), and its output file ``OUT.MAR.json`` /
``OUT.MAR`` is parsed by :mod:`merlin_bridge.output`.

Quirks of merlin (commit dbafe06, checked by reading its source and running it):

- a model file it cannot open makes it crash with a segmentation fault (``main`` ignores the
  result of ``init()``), reported here as "killed by signal 11" with its stderr; a truncated
  model file is *not* detected (missing values are read as garbage/0, exit 0), so the bridge
  only ever hands it files it wrote and checked itself; bad options exit 1 with
  "Invalid command line arguments.";
- numbers are printed with 6 decimals (``std::fixed``), so marginals are rounded to 1e-6;
- ``status`` is false when ``exp(ln Z) == 0``, i.e. ln Z < ≈ −745 — reached by any large FR
  graph, whose thousands of factors are all ≤ 1; :class:`~merlin_bridge.engine.MerlinEngine`
  therefore rescales every table to a maximum of 1 before writing (marginals unchanged);
- its Gibbs sampler writes JSON without the closing brace and UAI output without the PR and
  STATUS sections; the parsers accept exactly those defects for ``--algorithm gibbs`` only;
- default i-bound 2 and 10 iterations when not given; WMB is exact when the induced width of
  its (randomised min-fill) order is ≤ the i-bound and says so on stdout
  (``exact inference  : Yes``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import MerlinExitError, MerlinNotFoundError, MerlinOutputError, MerlinTimeoutError
from .output import MarOutput, parse_mar_json, parse_mar_uai
from .plugin import ALGORITHMS

MERLIN_PATH_ENV = "MERLIN_PATH"
OUTPUT_FORMATS = ("json", "uai")
STDERR_TAIL_CHARS = 2000


def find_merlin(path: str | os.PathLike[str] | None = None) -> Path:
    """The merlin executable: ``path`` if given, else ``$MERLIN_PATH``.

    ``merlin`` on PATH is deliberately not searched: other programs share the name (LLNL's
    workflow tool installs a ``merlin`` command). Raises :class:`MerlinNotFoundError` saying
    which source was used and what is wrong.
    """
    if path is not None and str(path):
        source, candidate = "--merlin-path", str(path)
    elif os.environ.get(MERLIN_PATH_ENV):
        source, candidate = MERLIN_PATH_ENV, os.environ[MERLIN_PATH_ENV]
    else:
        raise MerlinNotFoundError(
            "no merlin binary: pass --merlin-path /path/to/merlin or set MERLIN_PATH "
            "(merlin is built from https://github.com/radum2275/merlin with cmake; see the README)"
        )
    binary = Path(candidate).expanduser()
    if not binary.exists():
        raise MerlinNotFoundError(f"merlin binary from {source} does not exist: {binary}")
    if binary.is_dir():
        raise MerlinNotFoundError(f"merlin path from {source} is a directory, not the binary: {binary}")
    if not os.access(binary, os.X_OK):
        raise MerlinNotFoundError(f"merlin binary from {source} is not executable: {binary} (chmod +x it)")
    return binary.resolve()


@dataclass(frozen=True)
class MerlinRun:
    """One finished merlin run: its parsed output and what it printed."""

    output: MarOutput
    output_file: Path
    command: tuple[str, ...]
    stdout: str
    stderr: str
    seconds: float

    @property
    def reports_exact(self) -> bool | None:
        """What merlin's stdout says about exactness (``exact inference : Yes/No``), if anything."""
        match = re.search(r"exact inference\s*:\s*(Yes|No)", self.stdout)
        return None if match is None else match.group(1) == "Yes"

    @property
    def induced_width(self) -> int | None:
        match = re.search(r"induced width\s*:\s*(-?\d+)", self.stdout)
        return None if match is None else int(match.group(1))


def _tail(text: str, limit: int = STDERR_TAIL_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def merlin_command(
    binary: Path,
    uai_file: Path,
    evidence_file: Path | None,
    output_stem: Path,
    *,
    algorithm: str = "wmb",
    ibound: int = 6,
    iterations: int | None = None,
    output_format: str = "json",
) -> list[str]:
    """merlin's command line for a MAR run."""
    command = [str(binary), "--input-file", str(uai_file)]
    if evidence_file is not None:
        command += ["--evidence-file", str(evidence_file)]
    command += ["--task", "MAR", "--algorithm", algorithm, "--ibound", str(ibound)]
    if iterations is not None:
        command += ["--iterations", str(iterations)]
    command += ["--output-format", output_format, "--output-file", str(output_stem)]
    return command


def run_merlin(
    binary: Path,
    uai_file: Path,
    evidence_file: Path | None,
    output_stem: Path,
    num_variables: int,
    *,
    algorithm: str = "wmb",
    ibound: int = 6,
    iterations: int | None = None,
    output_format: str = "json",
    timeout: float = 600.0,
) -> MerlinRun:
    """Run merlin for MAR and parse its output; every failure raises a :class:`MerlinError`."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"merlin algorithm must be one of {', '.join(ALGORITHMS)}, not {algorithm!r}")
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"merlin output format must be json or uai, not {output_format!r}")
    command = merlin_command(
        binary,
        uai_file,
        evidence_file,
        output_stem,
        algorithm=algorithm,
        ibound=ibound,
        iterations=iterations,
        output_format=output_format,
    )
    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=output_stem.parent,
            text=True,
            errors="replace",
            start_new_session=True,  # own process group: a timeout kills wrappers' children too
        )
    except OSError as exc:
        raise MerlinNotFoundError(f"cannot start merlin at {binary}: {exc}") from None
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        raise MerlinTimeoutError(
            f"merlin ({algorithm}, i-bound {ibound}) did not finish within {timeout:g} s and was killed"
            + (f"; stderr: {_tail(stderr)}" if stderr.strip() else "")
        ) from None
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        how = (
            f"was killed by signal {-process.returncode}"
            if process.returncode < 0
            else f"exited with status {process.returncode}"
        )
        tail = _tail(stderr) or _tail(stdout, 500)
        raise MerlinExitError(f"merlin {how}: {tail or '(no output)'}", process.returncode, _tail(stderr))
    suffix = ".MAR.json" if output_format == "json" else ".MAR"
    output_file = Path(str(output_stem) + suffix)
    if not output_file.exists():
        raise MerlinOutputError(
            f"merlin exited 0 but wrote no {output_file.name}"
            + (f"; stderr: {_tail(stderr)}" if stderr.strip() else "; it printed nothing on stderr")
        )
    text = output_file.read_text(encoding="utf-8", errors="replace")
    parse = parse_mar_json if output_format == "json" else parse_mar_uai
    output = parse(text, num_variables, source=f"merlin output {output_file.name}", gibbs_quirks=algorithm == "gibbs")
    return MerlinRun(output, output_file, tuple(command), stdout, stderr, seconds)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
