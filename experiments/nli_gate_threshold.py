"""How the similarity gate's threshold of ``--nli-mode fast`` trades pairs for evidence.

For every FR2 atom–context pair that fast would leave to the gate (no own, unowned or
neighbouring context), the NLI backend's judgement (from the cache of an ``all`` run when it
is there) and the gate's similarity are listed; for each threshold the table gives the pairs
the gate keeps and the non-neutral judgements (evidence) it loses.

    python -m experiments.nli_gate_threshold runs/bios_heldout.jsonl --nli cross-encoder \\
        --cache-dir /tmp/cache_all --gate embedding
"""

from __future__ import annotations

import argparse

import numpy as np

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.graph.build import plan_graph
from fact_reasoner.graph.pair_selection import embedding_similarities, lexical_similarities, select_pairs
from fact_reasoner.io import read_records
from fact_reasoner.schema import InputRecord

THRESHOLDS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 1.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input")
    parser.add_argument("--nli", default="cross-encoder")
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--gate", choices=("embedding", "lexical"), default="embedding")
    parser.add_argument("--min-probability", type=float, default=0.5, help="a judgement counts as evidence above this")
    args = parser.parse_args()
    assessor = FactReasoner(PipelineConfig(version=2, nli=args.nli, cache_dir=args.cache_dir))
    similarity, label, probability = [], [], []
    total_pairs = 0
    for numbered in read_records(args.input):
        record = InputRecord.model_validate(numbered.record) if isinstance(numbered.record, dict) else numbered.record
        atoms, contexts = list(record.atoms or []), list(record.contexts or [])
        plan = plan_graph(atoms, contexts, 2)
        total_pairs += len(plan.pairs)
        a_texts, c_texts = [a.text for a in plan.atoms], [c.text for c in plan.contexts]
        if args.gate == "embedding":
            embedder = assessor.stages.embedder()
            sims = embedding_similarities(embedder.encode(a_texts), embedder.encode(c_texts))
        else:
            sims = lexical_similarities(a_texts, c_texts)
        # threshold above every cosine: the pairs fast keeps without the gate
        kept = set(select_pairs(plan, atoms, sims, mode="fast", threshold=2.0).plan.pairs)
        gated = [(c.id, a.id, i, j) for i, a in enumerate(plan.atoms) for j, c in enumerate(plan.contexts)]
        gated = [g for g in gated if (g[0], g[1]) not in kept]
        texts = plan.texts
        judgements = assessor.stages.nli().judge([(texts[c], texts[a]) for c, a, _, _ in gated])
        for (_, _, i, j), judgement in zip(gated, judgements):
            similarity.append(sims.atom_context[i, j])
            label.append(judgement.label.value)
            probability.append(judgement.probability)
    sim, lab, prob = np.array(similarity), np.array(label), np.array(probability)
    evidence = (lab != "neutral") & (prob > args.min_probability)
    print(f"FR2 pairs (all): {total_pairs}; left to the gate: {len(sim)}; evidence among them: {int(evidence.sum())}")
    print("| threshold | gated pairs kept | evidence kept | evidence lost |")
    print("| --- | --- | --- | --- |")
    for t in THRESHOLDS:
        keep = sim >= t
        print(f"| {t:g} | {int(keep.sum())} | {int((keep & evidence).sum())} | {int((~keep & evidence).sum())} |")


if __name__ == "__main__":
    main()
