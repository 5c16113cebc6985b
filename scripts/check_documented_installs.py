"""docs/integrations.md's installs, run as the page writes them, each in a fresh environment.

    python -m scripts.check_documented_installs [--only NAME ...] [--workdir DIR] [--keep]

The page's table gives one install command per library (``pip install -e ".[ragas]"``,
``pip install -e ".[deepeval]"``); a user runs one of them, or both one after the other, in
either order. Each of these four ways is a scenario: a new virtual environment, the page's
command(s) run in it as written (``pip`` the environment's own, in the repository root, with
whatever index pip is configured with and no constraints file: what a user gets), then

- ``pip check``: no installed distribution left with a requirement another one broke (the
  second install once downgraded huggingface_hub below what datasets needs, and ``import ragas``
  failed on ``cannot import name 'httpx' from 'huggingface_hub.utils'``);
- for each library installed: the page's example (:func:`examples`), which must print what the
  page shows (the ragas script exactly; the DeepEval test file: every line shown), and the
  faithfulness metric with its defaults (``FRFaithfulness()``, ``FRFaithfulnessMetric()``:
  ``atomizer="auto"``, which without the ``llm`` extra is one claim per sentence), which must
  score the page's first sample 1.0 (:data:`DEFAULTS`).

Why a script and not the integrations' test environment: that one installs
``.[ragas,deepeval,llm]`` together, pinned, which hid every one of these failures. It prints one
line per scenario with its time, and exits 1 if any failed (the reason on the lines after it).
``scripts/run_tests.sh`` runs it after the integrations' tests (``SKIP_DOCUMENTED_INSTALLS=1``
skips it); what it takes is measured in ``docs/integrations.md``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "integrations.md"

EXAMPLE = re.compile(r"<!-- integration example: (\w+)((?: file=\S+)?)[^>]*-->\n```python\n(.*?)```", re.S)
OUTPUT = re.compile(r"<!-- output: (\w+) -->\n```text\n(.*?)```", re.S)
#: a row of the page's first table: ``| library | metrics | `pip install …` |``
INSTALL_ROW = re.compile(r"^\| (ragas|DeepEval) [^|]*\|[^|]*\| `(pip install [^`]+)` \|$", re.M)

#: the faithfulness metric of each library with its defaults, on the page's first ragas sample;
#: it prints the score (1.0: both claims are supported), whichever atomizer ``auto`` chose
DEFAULTS = {
    "ragas": """
import asyncio
from ragas import SingleTurnSample
from fact_reasoner.integrations.ragas import FRFaithfulness
sample = SingleTurnSample(
    user_input="Where is the Eiffel Tower, and when was it completed?",
    response="The Eiffel Tower is in Paris. It was completed in 1889.",
    retrieved_contexts=[
        "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
        "Construction of the Eiffel Tower began in 1887 and was completed in 1889.",
    ],
)
print(asyncio.run(FRFaithfulness().single_turn_ascore(sample)))
""",
    "deepeval": """
from deepeval.test_case import LLMTestCase
from fact_reasoner.integrations.deepeval import FRFaithfulnessMetric
metric = FRFaithfulnessMetric()
metric.measure(
    LLMTestCase(
        input="Where is the Eiffel Tower, and when was it completed?",
        actual_output="The Eiffel Tower is in Paris. It was completed in 1889.",
        retrieval_context=[
            "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
            "Construction of the Eiffel Tower began in 1887 and was completed in 1889.",
        ],
    )
)
print(metric.score)
""",
}
DEFAULT_SCORE = "1.0"


def install_commands(page: str) -> dict[str, str]:
    """Library (``ragas``, ``deepeval``) → the install command the page's table gives for it."""
    found = {library.lower(): command for library, command in INSTALL_ROW.findall(page)}
    if sorted(found) != ["deepeval", "ragas"]:
        raise ValueError(f"{PAGE.name}: the install table should name ragas and DeepEval, found {sorted(found)}")
    return found


def examples(page: str) -> dict[str, tuple[str | None, str, str]]:
    """The page's examples: NAME → (file or None, code, the output the page shows). An example
    is marked ``<!-- integration example: NAME [file=FILE] … -->`` before its ``python`` block,
    its output ``<!-- output: NAME -->`` before a ``text`` block; one with ``file=`` is a pytest
    file, whose output must hold every line shown, the others are scripts that print exactly it."""
    outputs = dict(OUTPUT.findall(page))
    return {
        name: (file.strip().removeprefix("file=") or None, code, outputs[name])
        for name, file, code in EXAMPLE.findall(page)
    }


def scenarios(libraries: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each library alone, then both one after the other in either order: name → installs."""
    out = {library: (library,) for library in libraries}
    for first in libraries:
        for second in libraries:
            if first != second:
                out[f"{first}-then-{second}"] = (first, second)
    return out


@dataclass
class Outcome:
    """What one scenario did: the problems found (none: it passed) and its seconds."""

    name: str
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        verdict = "ok" if not self.problems else f"FAILED ({len(self.problems)} problem(s))"
        return f"{self.name:24s} {verdict} in {self.seconds:.0f} s"


def _env(folder: Path, venv: Path) -> dict[str, str]:
    """The environment a user's shell would have after activating ``venv``, with the libraries'
    telemetry off (as docs/integrations.md says) and a home of its own."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
        env.pop(name, None)
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        HOME=str(folder / "home"),
        RAGAS_DO_NOT_TRACK="true",
        DEEPEVAL_TELEMETRY_OPT_OUT="1",
        HF_HUB_OFFLINE="1",
        COLUMNS="200",
    )
    return env


def _run(argv: Sequence[str] | str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, shell=isinstance(argv, str)
    )


def _tail(done: subprocess.CompletedProcess, chars: int = 1500) -> str:
    return (done.stdout + done.stderr)[-chars:].strip()


def run_scenario(name: str, installs: Sequence[str], workdir: Path, page: str, python: str = sys.executable) -> Outcome:
    """One scenario in ``workdir/name``: a fresh environment, the installs as the page writes
    them, then ``pip check``, each installed library's example and its defaults."""
    start = time.perf_counter()
    outcome = Outcome(name)
    folder = workdir / name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "home").mkdir(parents=True)
    venv = folder / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    env = _env(folder, venv)
    commands, shown = install_commands(page), examples(page)
    for library in installs:
        done = _run(commands[library], ROOT, env, timeout=1800)  # the page's command, as written
        if done.returncode != 0:
            outcome.problems.append(f"`{commands[library]}` exited {done.returncode}: {_tail(done)}")
            outcome.seconds = time.perf_counter() - start
            return outcome
    done = _run([str(venv / "bin" / "python"), "-m", "pip", "check"], folder, env, timeout=300)
    if done.returncode != 0:
        outcome.problems.append(f"pip check: {_tail(done)}")
    for library in dict.fromkeys(installs):
        outcome.problems += _check_library(library, shown[library], folder, venv, env)
    outcome.seconds = time.perf_counter() - start
    return outcome


def _check_library(
    library: str, example: tuple[str | None, str, str], folder: Path, venv: Path, env: dict[str, str]
) -> list[str]:
    """The page's example of ``library`` and its faithfulness metric with the defaults."""
    problems = []
    python = str(venv / "bin" / "python")
    file, code, shown = example
    if file is None:
        done = _run([python, "-c", code], folder, env, timeout=900)
        if done.returncode != 0 or done.stdout != shown:
            problems.append(f"{library} example: exit {done.returncode}, printed:\n{done.stdout}\n{_tail(done)}")
    else:
        (folder / file).write_text(code, encoding="utf-8")
        done = _run([python, "-m", "pytest", file, "-q", "-p", "no:cacheprovider"], folder, env, timeout=900)
        missing = [line for line in shown.splitlines() if line not in done.stdout]
        if done.returncode != 1 or missing:  # the page's example: one test passes, one fails
            problems.append(f"{library} example: exit {done.returncode}, lines not printed {missing}: {_tail(done)}")
    done = _run([python, "-c", DEFAULTS[library]], folder, env, timeout=900)
    if done.returncode != 0 or done.stdout.strip() != DEFAULT_SCORE:
        problems.append(f"{library} with its defaults: exit {done.returncode}, printed {done.stdout!r}: {_tail(done)}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these scenarios only (ragas, deepeval-then-ragas …)")
    parser.add_argument("--workdir", type=Path, help="where the environments go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the environments afterwards")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    every = scenarios(sorted(install_commands(page)))
    unknown = sorted(set(args.only or ()) - set(every))
    if unknown:
        parser.error(f"argument --only: {', '.join(unknown)} is not one of {', '.join(every)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="documented-installs-"))
    start = time.perf_counter()
    failed = 0
    try:
        for name, installs in every.items():
            if args.only and name not in args.only:
                continue
            outcome = run_scenario(name, installs, workdir, page)
            print(outcome.line(), flush=True)
            for problem in outcome.problems:
                print(f"  {problem}", flush=True)
            failed += bool(outcome.problems)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"documented installs: {'all passed' if not failed else f'{failed} failed'} in {time.perf_counter() - start:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
