"""Faithfulness GRANULAR vs HOLISTIC (the specification's ``mode``, ``../shared/docs/DESIGN.md``
§7), on the specification's three examples and on the shared HaluBench dev sample
(``../shared/data/rag/halubench_dev.csv``: PASS = faithful, FAIL = hallucinated), for
docs/rag-metrics.md.

For each NLI judge named (``--nli``, default the shipped cross-encoder and ``align``), each
sample is scored

- ``granular``: per claim, claims one per sentence (``--atomizer sentence``), the mean of the
  verdicts' weights (what ``fact-reasoner ragas --metrics faithfulness`` writes);
- ``holistic``: ``Faithfulness(mode="HOLISTIC")``, the response judged as a whole against each
  context (read in pieces when the judge reads fewer tokens: ``reading_pieces``), one verdict,
  one weight;
- ``holistic_by_sentence`` (for the comparison, computed from the granular verdicts): the same
  conjunction over the response's sentences, each judged alone — what a holistic verdict would be
  if the judge read one sentence at a time.

On HaluBench it reports, per judge and way: ROC AUC of the score for PASS vs FAIL, the mean score
of PASS and of FAIL rows, how many rows were read in more than one piece, seconds per sample.
Run from the repository root (the package's own environment, no extra besides ``nli`` and
``metrics``):

    python -m experiments.faithfulness_modes --out experiments/results/faithfulness_modes_2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "rag" / "halubench_dev.csv"

#: the specification's three examples (§7), written over two passages about the Eiffel Tower:
#: three supported claims → 1.0; one supported + one without evidence → 0.5 (strict 0.0); one
#: contradicted → 0.0 (the scores are the GRANULAR ones)
CONTEXTS = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "Construction of the Eiffel Tower began in 1887 and was completed in 1889.",
]
SPEC_EXAMPLES = {
    "three supported claims": "The Eiffel Tower is in Paris. The Eiffel Tower is made of wrought iron. "
    "The Eiffel Tower was completed in 1889.",
    "one supported + one without evidence": "The Eiffel Tower is in Paris. The Eiffel Tower is painted gold.",
    "one contradicted": "The Eiffel Tower is in Berlin.",
}
QUESTION = "Tell me about the Eiffel Tower."


def by_sentence(granular: Any, weighted: bool = True, strict: bool = False) -> tuple[str, float]:
    """The holistic verdict and score of the granular result's sentence verdicts (their
    conjunction, :func:`~fact_reasoner.metrics.faithfulness.holistic_verdict`)."""
    from fact_reasoner.metrics.faithfulness import SUPPORTED_VERDICTS, Verdict, holistic_verdict, resolve_verdict_scores
    from fact_reasoner.metrics.results import clamp01

    verdict = holistic_verdict([Verdict(d.verdict) for d in granular.details])
    if weighted:
        return verdict.value, clamp01(resolve_verdict_scores(strict, None)[verdict])
    return verdict.value, float(verdict in SUPPORTED_VERDICTS)


def context_for(nli: str) -> Any:
    from fact_reasoner.metrics import MetricContext
    from fact_reasoner.settings.config import PipelineConfig

    return MetricContext(PipelineConfig(nli=nli, use_cache=False), atomizer="sentence")


def spec_examples(nli: str) -> dict[str, Any]:
    """Each example's scores (granular, holistic, by sentence; plain and strict) and verdicts."""
    from fact_reasoner.metrics import Faithfulness, RagSample

    context = context_for(nli)
    out = {}
    for name, response in SPEC_EXAMPLES.items():
        sample = RagSample(question=QUESTION, response=response, retrieved_contexts=CONTEXTS)
        entry: dict[str, Any] = {"response": response}
        for strict in (False, True):
            tag = "strict" if strict else "plain"
            granular = Faithfulness(strict_mode=strict).score(sample, context)
            holistic = Faithfulness(strict_mode=strict, mode="HOLISTIC").score(sample, context)
            entry[tag] = {
                "granular": granular.score,
                "holistic": holistic.score,
                "holistic_by_sentence": by_sentence(granular, strict=strict)[1],
            }
            if not strict:
                entry["granular_verdicts"] = [d.verdict for d in granular.details]
                entry["holistic_verdict"] = holistic.verdict  # type: ignore[attr-defined]
                entry["holistic_probability"] = holistic.probability  # type: ignore[attr-defined]
                entry["holistic_by_sentence_verdict"] = by_sentence(granular)[0]
        out[name] = entry
    return out


def halubench(nli: str, limit: int | None) -> dict[str, Any]:
    """AUC (PASS vs FAIL), mean scores and seconds of each way on the HaluBench rows."""
    import pandas as pd

    from fact_reasoner import measures
    from fact_reasoner.metrics import Faithfulness, RagSample

    rows = pd.read_csv(DATA).to_dict("records")[:limit]
    labels = [row["label"] == "PASS" for row in rows]
    scores: dict[str, list[float]] = {"granular": [], "holistic": [], "holistic_by_sentence": []}
    seconds = {"granular": 0.0, "holistic": 0.0}
    pieces = []
    # one context per way: a pair both ways judge (a one-sentence answer) is judged in each, so
    # that the seconds are each way's own
    contexts = {way: context_for(nli) for way in seconds}
    for row in rows:
        sample = RagSample(question=row["question"], response=str(row["answer"]), retrieved_contexts=[row["context"]])
        start = time.perf_counter()
        granular = Faithfulness().score(sample, contexts["granular"])
        seconds["granular"] += time.perf_counter() - start
        start = time.perf_counter()
        holistic = Faithfulness(mode="HOLISTIC").score(sample, contexts["holistic"])
        seconds["holistic"] += time.perf_counter() - start
        scores["granular"].append(granular.score)
        scores["holistic"].append(holistic.score)
        scores["holistic_by_sentence"].append(by_sentence(granular)[1] if granular.details else math.nan)
        pieces.append(getattr(holistic, "pieces", 1))
    out: dict[str, Any] = {"rows": len(rows), "read_in_pieces": sum(p > 1 for p in pieces), "ways": {}}
    for way, values in scores.items():
        kept = [(s, y) for s, y in zip(values, labels) if not math.isnan(s)]
        out["ways"][way] = {
            "nan": len(values) - len(kept),
            "auc_pass_vs_fail": measures.auroc([y for _, y in kept], [s for s, _ in kept]),
            "mean_pass": sum(s for s, y in kept if y) / max(1, sum(y for _, y in kept)),
            "mean_fail": sum(s for s, y in kept if not y) / max(1, sum(not y for _, y in kept)),
            "seconds_per_sample": seconds.get(way, seconds["granular"]) / len(rows),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nli", nargs="+", default=["cross-encoder", "align"], help="the NLI judges to compare")
    parser.add_argument("--limit", type=int, help="the first N HaluBench rows only")
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"data": str(DATA), "cores": os.cpu_count(), "argv": sys.argv, "judges": {}}
    for nli in args.nli:
        results["judges"][nli] = {"spec_examples": spec_examples(nli), "halubench": halubench(nli, args.limit)}
        print(json.dumps({nli: results["judges"][nli]}, indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
