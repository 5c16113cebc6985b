"""This project's faithfulness inside ragas vs ragas's own LLM-judged faithfulness, on the shared
HaluBench dev sample (``../shared/data/rag/halubench_dev.csv``: PASS = faithful, FAIL =
hallucinated), for docs/integrations.md.

1. ``fact-reasoner ragas --metrics faithfulness --atomizer sentence`` on the rows (the command);
2. ``ragas.evaluate(…, metrics=[FRFaithfulness(atomizer="sentence", config={"use_cache": False})])`` on the same rows: every
   score must equal the command's (the equality check), seconds per sample;
3. ragas's ``Faithfulness`` (an LLM judge) on a subsample, with the embedded local model
   (:class:`~fact_reasoner.llm.local.LocalLLM`: the in-process llama.cpp server's OpenAI-style
   endpoint on 127.0.0.1) through langchain-openai's ``ChatOpenAI``, one sample at a time;
   optionally (``--deepeval``) DeepEval's ``FaithfulnessMetric`` with the same endpoint.

For each: ROC AUC of the score for PASS vs FAIL (= AUC of 1 − score for hallucination
detection), seconds per sample (wall clock, this machine), and how many samples got NaN (or an
error). Run in the integrations' environment (scripts/setup_integrations_env.sh):

    .venv-integrations/bin/python -m experiments.integrations_halubench --subsample 30 \\
        --out experiments/results/integrations_halubench_2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "rag" / "halubench_dev.csv"


def read_rows(path: Path, limit: int | None) -> list[dict[str, Any]]:
    import pandas as pd

    table = pd.read_csv(path)
    rows = table.to_dict("records")
    return rows[:limit] if limit else rows


def subsample(rows: list[dict[str, Any]], size: int, seed: int) -> list[int]:
    """Positions of ``size`` rows, PASS and FAIL in the proportions of ``rows`` (seeded)."""
    rng = random.Random(seed)
    chosen: list[int] = []
    for label in ("PASS", "FAIL"):
        positions = [i for i, row in enumerate(rows) if row["label"] == label]
        share = round(size * len(positions) / len(rows))
        chosen += rng.sample(positions, min(share, len(positions)))
    return sorted(chosen)


def summary(scores: list[float], labels: list[str], seconds: float) -> dict[str, Any]:
    from fact_reasoner import measures

    kept = [(s, label) for s, label in zip(scores, labels) if not math.isnan(s)]
    auc = measures.auroc([label == "PASS" for _, label in kept], [s for s, _ in kept]) if kept else math.nan
    return {
        "samples": len(scores),
        "nan": len(scores) - len(kept),
        "auc_pass_vs_fail": auc,
        "seconds_per_sample": seconds / len(scores) if scores else math.nan,
    }


def run_command(rows: list[dict[str, Any]], workdir: Path) -> tuple[list[float], float]:
    """The command's faithfulness of every row (NaN where it wrote none) and its wall time: the
    rows as a JSONL file (line i + 1 is row i), the context as the one retrieved context."""
    source = workdir / "halubench.jsonl"
    with open(source, "w", encoding="utf-8") as handle:
        for r in rows:
            sample = {"question": r["question"], "response": str(r["answer"]), "retrieved_contexts": [r["context"]]}
            handle.write(json.dumps(sample) + "\n")
    output = workdir / "halubench.ragas.jsonl"
    argv = [sys.executable, "-m", "fact_reasoner", "ragas", "--input-file", str(source), "--metrics", "faithfulness"]
    # --no-cache: every NLI judgement computed, none read from an earlier run's cache (honest seconds)
    argv += ["--atomizer", "sentence", "--no-cache", "--output", str(output), "--overwrite", "--quiet"]
    start = time.perf_counter()
    subprocess.run(argv, check=False, cwd=ROOT)
    seconds = time.perf_counter() - start
    written = {}
    for line in output.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        score = row["metrics"]["faithfulness"]["score"]
        written[row["source_line"]] = math.nan if score is None else score
    if len(written) != len(rows):
        print(f"note: the command wrote {len(written)} of {len(rows)} rows", file=sys.stderr)
    return [written.get(i + 1, math.nan) for i in range(len(rows))], seconds


def ragas_samples(rows: list[dict[str, Any]]) -> Any:
    from ragas import EvaluationDataset

    return EvaluationDataset.from_list(
        [
            {"user_input": r["question"], "response": str(r["answer"]), "retrieved_contexts": [r["context"]]}
            for r in rows
        ]
    )


def run_ours(rows: list[dict[str, Any]]) -> tuple[list[float], float]:
    from ragas import evaluate

    from fact_reasoner.integrations.ragas import FRFaithfulness

    start = time.perf_counter()
    result = evaluate(
        ragas_samples(rows),
        metrics=[FRFaithfulness(atomizer="sentence", config={"use_cache": False})],
        show_progress=False,
    )
    seconds = time.perf_counter() - start
    return [float(v) for v in result.to_pandas()["fr_faithfulness"]], seconds


def local_endpoint(threads: int | None) -> tuple[Any, str]:
    from fact_reasoner.llm.local import LocalLLM

    llm = LocalLLM(cache_dir=Path(tempfile.mkdtemp()), threads=threads, keep_prefix_states=False)
    return llm, llm.listening_address + "/v1"


def run_ragas_llm(
    rows: list[dict[str, Any]], base_url: str, model: str, timeout: int
) -> tuple[list[float], float, list[str]]:
    """ragas's ``Faithfulness`` judged by the local model: one ``evaluate`` over the rows, one
    sample at a time (``max_workers=1``: the server's cores are shared by its requests), a failed
    call retried once. Returns the scores, the seconds and the exceptions ragas logged (it writes
    NaN for each)."""
    import logging

    from langchain_openai import ChatOpenAI
    from ragas import evaluate
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness
    from ragas.run_config import RunConfig

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("Exception raised in Job"):
                self.messages.append(record.getMessage()[:300])

    collect = Collect()
    logging.getLogger("ragas").addHandler(collect)
    chat = ChatOpenAI(model=model, base_url=base_url, api_key="not-needed", temperature=0, max_tokens=1024)
    metric = Faithfulness(llm=LangchainLLMWrapper(chat))
    start = time.perf_counter()
    result = evaluate(
        ragas_samples(rows),
        metrics=[metric],
        run_config=RunConfig(timeout=timeout, max_retries=1, max_workers=1),
        show_progress=False,
    )
    seconds = time.perf_counter() - start
    logging.getLogger("ragas").removeHandler(collect)
    return [float(v) for v in result.to_pandas()["faithfulness"]], seconds, collect.messages


def run_deepeval_llm(rows: list[dict[str, Any]], base_url: str, model: str) -> tuple[list[float], float, list[str]]:
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    judge = LocalModel(model=model, base_url=base_url, api_key="not-needed", temperature=0)
    scores, errors = [], []
    start = time.perf_counter()
    for row in rows:
        metric = FaithfulnessMetric(model=judge, async_mode=False, include_reason=False)
        case = LLMTestCase(input=row["question"], actual_output=str(row["answer"]), retrieval_context=[row["context"]])
        try:
            scores.append(float(metric.measure(case)))
        except Exception as error:  # the judge's reply could not be used: no score
            scores.append(math.nan)
            errors.append(f"{type(error).__name__}: {str(error)[:120]}")
    return scores, time.perf_counter() - start, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, help="only the first N rows for our metric (default: all)")
    parser.add_argument("--subsample", type=int, default=30, help="rows for the LLM-judged metric (default 30)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, help="the local model's threads (default: every core)")
    parser.add_argument("--timeout", type=int, default=600, help="ragas's per-sample timeout for the LLM judge")
    parser.add_argument("--deepeval", action="store_true", help="also DeepEval's FaithfulnessMetric on the subsample")
    parser.add_argument("--skip-llm", action="store_true", help="only our metric and the command")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")

    rows = read_rows(args.data, args.limit)
    labels = [row["label"] for row in rows]
    report: dict[str, Any] = {"data": str(args.data), "rows": len(rows), "cores": os.cpu_count(), "argv": sys.argv}
    with tempfile.TemporaryDirectory() as workdir:
        command_scores, command_seconds = run_command(rows, Path(workdir))
    ours, ours_seconds = run_ours(rows)
    same = [(a == b) or (math.isnan(a) and math.isnan(b)) for a, b in zip(command_scores, ours)]
    report["equality"] = {"rows": len(rows), "identical": sum(same), "differ": [i for i, s in enumerate(same) if not s]}
    report["command_all"] = summary(command_scores, labels, command_seconds)
    report["ours_all"] = summary(ours, labels, ours_seconds)
    chosen = subsample(rows, args.subsample, args.seed)
    report["subsample"] = chosen
    sub_rows, sub_labels = [rows[i] for i in chosen], [labels[i] for i in chosen]
    # our metric on the subsample alone, with a fresh scorer: its seconds per sample
    from fact_reasoner.integrations.scoring import _SCORERS

    _SCORERS.clear()  # a fresh scorer: no NLI judgement reused from the run above
    ours_sub, ours_sub_seconds = run_ours(sub_rows)
    report["ours_subsample"] = summary(ours_sub, sub_labels, ours_sub_seconds)
    report["ours_subsample"]["matches_run_over_all_rows"] = all(
        a == ours[i] or (math.isnan(a) and math.isnan(ours[i])) for a, i in zip(ours_sub, chosen)
    )
    print(json.dumps(report, indent=1), flush=True)
    if not args.skip_llm:
        llm, base_url = local_endpoint(args.threads)
        report["judge_model"] = llm.model
        scores, seconds, errors = run_ragas_llm(sub_rows, base_url, llm.model, args.timeout)
        report["ragas_llm_subsample"] = summary(scores, sub_labels, seconds) | {
            "scores": scores,
            "nan_questions": errors,
        }
        print(json.dumps(report["ragas_llm_subsample"], indent=1), flush=True)
        if args.deepeval:
            scores, seconds, errors = run_deepeval_llm(sub_rows, base_url, llm.model)
            report["deepeval_llm_subsample"] = summary(scores, sub_labels, seconds) | {
                "scores": scores,
                "errors": errors,
            }
        llm.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "subsample"}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
