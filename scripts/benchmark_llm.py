"""How long the embedded LLM default takes, cold, against an earlier version in the same run.

    .venv-dev/bin/python -m scripts.benchmark_llm --baseline <git ref> [--case quick-start paragraph] \
        [--args "--version 3"] [--variant LABEL="ARGS" …] [--fresh-only] [--repeats 1] [--json out.json]
    .venv-dev/bin/python -m scripts.benchmark_llm --threads-check [--repeats 2]
    .venv-dev/bin/python -m scripts.benchmark_llm --batch-check [--repeats 2]

Cases (each one input file, its passages supplied, so nothing is retrieved):

- ``quick-start``: ``fact_reasoner/examples/short_answer.jsonl``, the README's first command;
- ``paragraph``: a four-sentence answer about Albert Einstein with two passages (written for
  this benchmark, :data:`PARAGRAPH`), the size of answer a user tries next;
- ``long``: an eight-sentence answer about Abraham Lincoln with three passages (written for
  this benchmark, :data:`LONG`): the kind of answer issue 59 measured;
- ``dev-bios``: eight of the 33 FActScore ChatGPT development biographies (not the 14 held
  out; every fourth by topic, :data:`DEV_BIOS_TOPICS`), each its raw response and its
  FActScore passages, the gold atoms set aside, in one input file (one process: what a dataset
  run sees); read from ``../shared/data/factscore_bios_dev``;
- ``--input FILE``: any input file instead.

``--variant LABEL="ARGS"`` (repeatable) adds a run of the current checkout with these
fact-reasoner arguments besides ``--args`` (``--variant reviser-v4="--reviser-prompt-version
v4"``): each lever measured against the baseline and the current defaults in one run, the
order baseline, current, variants repeated ``--repeats`` times. ``--fresh-only`` skips the
``again`` runs. At the end a Markdown table gives, per case and code, the LLM stages' calls and
tokens (prompt computed, reused, generated: independent of the load, the primary evidence) and
the median seconds of atomize + revise, with the ratio to the baseline.

For the current checkout and for ``--baseline`` (checked out into a temporary git worktree),
each in a new process with the model already installed:

- ``first``: a fresh cache directory — no model-call cache, no saved prompt-prefix states
  (what a user sees the first time);
- ``again``: the same cache directory with the model-call cache deleted — a new input, but the
  prefix states a first run saved are there (what every later run of a user sees).

Printed per run: wall seconds of the whole command (process start to exit: imports, loading
the model, every stage), start-up (wall less the record's stage seconds), seconds per stage
(atomize, revise, nli, …) and, per LLM stage where the version records them, where the time
went: calls, prompt tokens computed and seconds spent on them, prompt tokens reused from the
server's prompt cache, tokens generated and seconds spent generating; then atoms (made,
revised, skipped by the reviser, ungrounded) and the ratio baseline / current. The 1-minute
load average of the machine is printed beside each run: a busy CPU slows every number here, so
compare runs of one invocation only, and quote the load with any time.

``--threads-check`` asks the model for one atomizer reply (a 14-word sentence: about 300
prompt tokens, 30 generated), each in a new process, with prompt/generation threads 2/2, 2/1
and 1/1 in turn, then with 1/1 and the JSON schema without its ``maxItems`` and without any
schema (``--repeats`` rounds), and prints wall and CPU seconds, prompt and generation seconds,
milliseconds per generated token and the load: on a busy machine two generating threads wait
for each other (:func:`fact_reasoner.llm.local.generation_threads_for`); the grammar that
enforces the schema is compared with none.

``--batch-check`` asks whether decoding two requests at once pays here: llama.cpp's server with
two slots generates 60 tokens for each of two prompts one after the other, then both at once
(two threads sending), with 1 generating thread and 1 or 2 prompt threads (a step that decodes
two sequences is a batch: llama.cpp runs it with the prompt threads), and prints the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("atomizer", "reviser", "nli_llm")
TIMED = ("atomize", "revise", "retrieve", "nli", "infer")

#: the four-sentence answer (the issue's kind of paragraph), with two passages
PARAGRAPH = {
    "input": "Who was Albert Einstein?",
    "output": (
        "Albert Einstein was a German-born theoretical physicist. He was born in Ulm in 1879. "
        "He developed the theory of relativity, one of the two pillars of modern physics. "
        "He received the Nobel Prize in Physics in 1921 and died in Princeton in 1955."
    ),
    "topic": "Albert Einstein",
    "contexts": [
        {
            "id": "c0",
            "title": "Albert Einstein",
            "text": "Albert Einstein (born in Ulm in 1879) was a German-born theoretical physicist who "
            "developed the theory of relativity.",
        },
        {
            "id": "c1",
            "title": "Albert Einstein",
            "text": "Einstein received the 1921 Nobel Prize in Physics. He died in Princeton, New Jersey, in 1955.",
        },
    ],
}
#: the eight-sentence answer (issue 59's kind of long answer), with three passages
LONG = {
    "input": "Tell me a bio of Abraham Lincoln.",
    "topic": "Abraham Lincoln",
    "output": (
        "Abraham Lincoln was an American lawyer and politician who served as the 16th president of the "
        "United States. He was born in a log cabin in Hodgenville, Kentucky, in 1809. In 1842 he married "
        "Mary Todd, and they had four sons. He served one term in the House of Representatives. In 1860 he "
        "won the presidential election as the candidate of the Republican Party. During the Civil War he "
        "issued the Emancipation Proclamation, which declared the enslaved people in the Confederate states "
        "free. In 1863 he delivered the Gettysburg Address at the dedication of a military cemetery. He was "
        "shot by John Wilkes Booth at Ford's Theatre in 1865 and died the next day."
    ),
    "contexts": [
        {
            "id": "c0",
            "title": "Abraham Lincoln",
            "text": "Abraham Lincoln (February 12, 1809 - April 15, 1865) was an American lawyer and statesman who "
            "served as the 16th president of the United States from 1861 until his assassination in 1865. He was "
            "born in a log cabin near Hodgenville, Kentucky. He married Mary Todd in 1842; they had four sons.",
        },
        {
            "id": "c1",
            "title": "Abraham Lincoln",
            "text": "Lincoln served a single term in the U.S. House of Representatives (1847-1849). As the "
            "Republican nominee he won the presidential election of 1860. During the Civil War he issued the "
            "Emancipation Proclamation in 1863, declaring free the enslaved people in the states in rebellion.",
        },
        {
            "id": "c2",
            "title": "Abraham Lincoln",
            "text": "On November 19, 1863, Lincoln delivered the Gettysburg Address at the dedication of the "
            "Soldiers' National Cemetery. On April 14, 1865, he was shot by John Wilkes Booth at Ford's Theatre "
            "in Washington, D.C., and he died the following morning.",
        },
    ],
}
#: every fourth of the 33 development biographies, by topic (none of the 14 held out)
DEV_BIOS_TOPICS = (
    "Abdou Diallo",
    "David Wenham",
    "Ji Sung",
    "Keita Kadokura",
    "Owen Wright (surfer)",
    "Sara Paxton",
    "Taika Waititi",
    "Toru Muranishi",
)
FACTSCORE_DEV = ROOT.parent / "shared" / "data" / "factscore_bios_dev"
CASES: dict[str, Any] = {
    "quick-start": ROOT / "fact_reasoner" / "examples" / "short_answer.jsonl",
    "paragraph": PARAGRAPH,
    "long": LONG,
    "dev-bios": "dev-bios",
}


def dev_bios(data: Path = FACTSCORE_DEV) -> list[dict[str, Any]]:
    """The ``dev-bios`` case: :data:`DEV_BIOS_TOPICS`' raw responses with their FActScore
    passages (each passage once), the gold atoms set aside (the pipeline makes its own)."""
    from experiments.prepare_factscore import prepare

    records, _ = prepare(data / "ChatGPT.jsonl", data / "passages_bm25_ChatGPT_dev.jsonl", topics=set(DEV_BIOS_TOPICS))
    out = []
    for record in sorted(records, key=lambda r: r["topic"]):
        texts = list(dict.fromkeys(c["text"] for c in record["contexts"]))
        contexts = [{"id": f"c{i}", "title": record["topic"], "text": text} for i, text in enumerate(texts)]
        out.append({key: record[key] for key in ("input", "output", "topic")} | {"contexts": contexts})
    if len(out) != len(DEV_BIOS_TOPICS):
        raise SystemExit(f"found {len(out)} of the {len(DEV_BIOS_TOPICS)} development biographies in {data}")
    return out


def run_once(code_dir: Path, cache: Path, input_file: Path, extra: list[str], out: Path) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, FACT_REASONER_CACHE=str(cache), PYTHONPATH=str(code_dir), HF_HUB_OFFLINE="1")
    command = [
        sys.executable,
        "-m",
        "fact_reasoner",
        "--input-file",
        str(input_file),
        "--output-dir",
        str(out),
        "--quiet",
        *extra,
    ]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=code_dir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{code_dir}: exit {done.returncode}\n{done.stderr[-2000:]}")
    rows = [
        json.loads(line)
        for path in out.glob("*.jsonl")
        if not path.name.endswith(".errors.jsonl")
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    timings: dict[str, float] = {}
    counters: dict[str, float] = {}
    for row in rows:
        for key, value in row.get("timings", {}).items():
            timings[key] = timings.get(key, 0.0) + value
        for key, value in row.get("counters", {}).items():
            if isinstance(value, (int, float)):
                counters[key] = counters.get(key, 0.0) + value
    atoms = {
        "judged": sum(len(row.get("atoms") or []) for row in rows),
        "ungrounded": sum(len(row.get("ungrounded_atoms") or []) for row in rows),
        "texts": [a["text"] for row in rows for a in row.get("atoms") or []],
    }
    return {
        "wall": wall,
        "load": load,
        "timings": timings,
        "counters": counters,
        "records": len(rows),
        "atoms": atoms,
        "factuality_score": [row.get("factuality_score") for row in rows],
    }


def describe(label: str, result: dict[str, Any]) -> str:
    t, c = result["timings"], result["counters"]
    stages = " ".join(f"{k} {t[k]:5.1f}" for k in TIMED if k in t)
    startup = result["wall"] - t.get("total", 0.0)
    parts = [
        f"{label:24s} wall {result['wall']:6.1f} s  (load {result['load']:.1f})  start-up {startup:5.1f}  {stages}"
    ]
    for stage in STAGES:
        if f"llm_{stage}_calls" not in c:
            continue
        line = (
            f"{'':24s}   {stage:9s} calls {c[f'llm_{stage}_calls']:3.0f}  prompt computed "
            f"{c[f'llm_{stage}_prompt_tokens']:5.0f}"
        )
        if f"llm_{stage}_prompt_seconds" in c:
            line += f" ({c[f'llm_{stage}_prompt_seconds']:5.1f} s)"
        line += f"  reused {c[f'llm_{stage}_cached_prompt_tokens']:5.0f}  generated {c[f'llm_{stage}_generated_tokens']:4.0f}"
        if f"llm_{stage}_generation_seconds" in c:
            line += f" ({c[f'llm_{stage}_generation_seconds']:5.1f} s)"
        parts.append(line)
    atoms = result["atoms"]
    parts.append(
        f"{'':24s}   atoms judged {atoms['judged']}, ungrounded {atoms['ungrounded']}, "
        f"revised {c.get('reviser_atoms', 0):.0f} (skipped {c.get('reviser_skipped', 0):.0f}); "
        f"factuality_score {result['factuality_score']}"
    )
    return "\n".join(parts)


#: one atomizer call, timed, in this process: ``python -c THREADS_CHECK threads generation``
THREADS_CHECK = """
import os, resource, sys, tempfile, time
from pathlib import Path
from fact_reasoner.atoms import atomizer
from fact_reasoner.llm.base import ChatRequest
from fact_reasoner.llm.local import LocalLLM
threads, generation, schema = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
llm = LocalLLM(None, cache_dir=Path(tempfile.mkdtemp()), cache=None, threads=threads,
               generation_threads=generation, keep_prefix_states=False)
llm.server
sentence = "Albert Einstein was a German-born theoretical physicist who developed the theory of relativity."
bounded = atomizer.atoms_schema(atomizer.max_atoms(sentence, "v3"))
unbounded = {**bounded, "properties": {"atoms": {"type": "array", "items": {"type": "string"}}}}
json_schema = {"bounded": bounded, "unbounded": unbounded, "none": None}[schema]
request = ChatRequest.of(atomizer.build_messages("v3", sentence), "atomizer/v3", max_tokens=400, json_schema=json_schema)
before, load, start = resource.getrusage(resource.RUSAGE_SELF), os.getloadavg()[0], time.perf_counter()
timings = llm._complete(request.payload(llm.model), "atomizer/v3")["timings"]
wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print(f"threads {threads}/{generation}, schema {schema:9s}: wall {wall:6.1f} s, CPU {cpu:6.1f} s; prompt "
      f"{timings['prompt_n']} tokens {timings['prompt_ms'] / 1000:5.1f} s, generated {timings['predicted_n']} tokens "
      f"{timings['predicted_ms'] / 1000:5.1f} s ({timings['predicted_per_token_ms']:.0f} ms/token) (load {load:.1f})",
      flush=True)
"""


def threads_check(repeats: int) -> None:
    """``--threads-check`` (module docstring)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(repeats):
        for threads, generation, schema in (
            (2, 2, "bounded"),
            (2, 1, "bounded"),
            (1, 1, "bounded"),
            (1, 1, "unbounded"),
            (1, 1, "none"),
        ):
            command = [sys.executable, "-c", THREADS_CHECK, str(threads), str(generation), schema]
            subprocess.run(command, env=env, check=True)


#: two 60-token replies one after the other, then at once: ``python -c BATCH_CHECK prompt_threads``
BATCH_CHECK = """
import os, sys, threading, time
import httpx
import xllamacpp
from fact_reasoner.llm.models import resolve_local_model
params = xllamacpp.CommonParams()
params.model.path = str(resolve_local_model(None).path)
params.n_parallel, params.n_ctx, params.warmup, params.verbosity = 2, 8192, False, -1
params.cpuparams.n_threads, params.cpuparams_batch.n_threads = 1, int(sys.argv[1])
server = xllamacpp.Server(params)
def ask(slot, seconds):
    body = {"messages": [{"role": "user", "content": f"List {slot + 20} short facts about bridges, one a line."}],
            "max_tokens": 60, "temperature": 0, "seed": 42, "id_slot": slot, "ignore_eos": True}
    start = time.perf_counter()
    httpx.post(server.listening_address + "/v1/chat/completions", json=body, timeout=900).raise_for_status()
    seconds[slot] = time.perf_counter() - start
ask(0, {}), ask(1, {})  # the prompts read once: both runs below reuse them
load = os.getloadavg()[0]
start = time.perf_counter(); ask(0, {}); ask(1, {}); apart = time.perf_counter() - start
both = [threading.Thread(target=ask, args=(slot, {})) for slot in (0, 1)]
start = time.perf_counter(); [t.start() for t in both]; [t.join() for t in both]; together = time.perf_counter() - start
print(f"prompt threads {sys.argv[1]}, 1 generating: 2 x 60 tokens one after the other {apart:5.1f} s, "
      f"at once {together:5.1f} s ({apart / together:.2f}x) (load {load:.1f})", flush=True)
"""


def batch_check(repeats: int) -> None:
    """``--batch-check`` (module docstring)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(repeats):
        for prompt_threads in (1, 2):
            subprocess.run([sys.executable, "-c", BATCH_CHECK, str(prompt_threads)], env=env, check=True)


def llm_seconds(result: dict[str, Any]) -> float:
    """Seconds of the language model's stages (atomize + revise) of one run."""
    return result["timings"].get("atomize", 0.0) + result["timings"].get("revise", 0.0)


def markdown_table(figures: list[dict[str, Any]], kind: str = "first") -> str:
    """Per case and code, the median of the runs of ``kind``: the LLM stages' calls and tokens
    and the seconds of atomize + revise, with the ratio to the baseline."""
    lines = [
        "| case | code | atomizer calls / prompt / reused / generated | reviser calls / prompt / reused / generated "
        "| atoms (revised) | atomize s | revise s | atomize + revise s | ratio to baseline | load |",
        "|---|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    cases = list(dict.fromkeys(f["case"] for f in figures))
    for case in cases:
        runs = [f for f in figures if f["case"] == case and f["kind"] == kind]
        codes = list(dict.fromkeys(f["code"] for f in runs))
        base = statistics.median(llm_seconds(f) for f in runs if f["code"] == "baseline") if codes else 0.0
        for code in codes:
            mine = [f for f in runs if f["code"] == code]
            c = mine[0]["counters"]

            def tokens(stage: str) -> str:
                keys = ("calls", "prompt_tokens", "cached_prompt_tokens", "generated_tokens")
                return " / ".join(f"{c.get(f'llm_{stage}_{k}', 0):.0f}" for k in keys)

            atomize = statistics.median(f["timings"].get("atomize", 0.0) for f in mine)
            revise = statistics.median(f["timings"].get("revise", 0.0) for f in mine)
            both = statistics.median(llm_seconds(f) for f in mine)
            loads = ", ".join(f"{f['load']:.1f}" for f in mine)
            lines.append(
                f"| {case} | {code} | {tokens('atomizer')} | {tokens('reviser')} | {mine[0]['atoms']['judged']} "
                f"({c.get('reviser_atoms', 0):.0f}) | {atomize:.1f} | {revise:.1f} | {both:.1f} | "
                f"{both / base if base else float('nan'):.2f} | {loads} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="git ref of the version to compare with")
    parser.add_argument(
        "--threads-check",
        action="store_true",
        help="time one atomizer reply with 2/2, 2/1 and 1/1 threads, and without the JSON schema",
    )
    parser.add_argument(
        "--batch-check", action="store_true", help="time two replies one after the other and decoded at once"
    )
    parser.add_argument("--case", nargs="+", choices=sorted(CASES), default=["quick-start", "paragraph"])
    parser.add_argument("--input", type=Path, default=None, help="an input file instead of the cases")
    parser.add_argument("--args", default="--version 3", help="extra fact-reasoner arguments (quoted)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar='LABEL="ARGS"',
        help="also run the current checkout with these arguments besides --args (repeatable)",
    )
    parser.add_argument("--fresh-only", action="store_true", help="only the first run of each (no 'again' run)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each kind; the median wall is compared")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path.home() / ".cache" / "fact_reasoner" / "models",
        help="where the installed model lives (linked into each fresh cache directory)",
    )
    args = parser.parse_args()
    if args.threads_check:
        threads_check(args.repeats)
        return
    if args.batch_check:
        batch_check(args.repeats)
        return
    if args.baseline is None:
        parser.error("--baseline is required (or --threads-check, --batch-check)")
    if not (args.models / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").is_file():
        raise SystemExit(
            f"the model is not installed in {args.models}: run python -m scripts.prepare_local_model first"
        )
    extra = shlex.split(args.args)
    variants: list[tuple[str, list[str]]] = []
    for given in args.variant:
        label, sep, more = given.partition("=")
        if not sep or not label:
            parser.error(f'--variant {given!r}: give LABEL="ARGS"')
        variants.append((label, shlex.split(more)))
    os.environ["FACT_REASONER_MODELS"] = str(args.models)  # the model store, whatever --cache-dir
    work = Path(tempfile.mkdtemp(prefix="fr-bench-llm-"))
    inputs: dict[str, Path] = {}
    if args.input is not None:
        inputs[args.input.stem] = args.input.resolve()
    else:
        for name in args.case:
            case = CASES[name]
            if isinstance(case, Path):
                inputs[name] = case
                continue
            records = dev_bios() if case == "dev-bios" else [case]
            inputs[name] = work / f"{name}.jsonl"
            inputs[name].write_text("".join(json.dumps(record) + "\n" for record in records))
    baseline_dir = work / "baseline"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(baseline_dir), args.baseline], cwd=ROOT, check=True)
    codes = [("baseline", baseline_dir, extra), ("current", ROOT, extra)]
    codes += [(label, ROOT, extra + more) for label, more in variants]
    print(f"{os.cpu_count()} CPU(s); baseline {args.baseline}; fact-reasoner {' '.join(extra)}", flush=True)
    figures: list[dict[str, Any]] = []
    kinds = ("first",) if args.fresh_only else ("first", "again")
    try:
        for case, input_file in inputs.items():
            walls: dict[tuple[str, str], list[float]] = {}
            for repeat in range(args.repeats):
                for label, code, arguments in codes:
                    cache = work / f"cache-{case}-{label}-{repeat}"
                    cache.mkdir()
                    (cache / "models").symlink_to(args.models)
                    runs = {"first": run_once(code, cache, input_file, arguments, work / "out")}
                    if "again" in kinds:
                        for sqlite in cache.glob("model_calls.sqlite*"):
                            sqlite.unlink()
                        runs["again"] = run_once(code, cache, input_file, arguments, work / "out")
                    for kind, result in runs.items():
                        walls.setdefault((label, kind), []).append(result["wall"])
                        figures.append({"case": case, "code": label, "kind": kind, "repeat": repeat, **result})
                        print(describe(f"{case} {label} {kind}", result), flush=True)
                    if args.json is not None:  # written as it goes: a long run keeps what it measured
                        args.json.write_text(json.dumps(figures, indent=1))
            for kind in kinds:
                before = statistics.median(walls[("baseline", kind)])
                for label, _, _ in codes[1:]:
                    after = statistics.median(walls[(label, kind)])
                    print(
                        f"{case}, {label}, {kind} run: {before / after:.1f}x ({before:.1f} s -> {after:.1f} s, median wall)"
                    )
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(baseline_dir)], cwd=ROOT)
        shutil.rmtree(work, ignore_errors=True)
    for kind in kinds:
        print(f"\n{kind} runs (medians over {args.repeats} repeat(s)):\n{markdown_table(figures, kind)}")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
