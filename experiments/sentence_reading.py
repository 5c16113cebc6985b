"""Entailment read from single sentences of every passage, measured before the judge reads so.

    .venv-dev/bin/python -m experiments.sentence_reading --records runs/bios_dev33.jsonl \\
        --reading sentence --out runs/e50/dev33.sentence.jsonl --cache-dir .cache/fr [--top 3]

The cross-encoder's ``--nli-sentences all`` reads a passage sentence by sentence only when the
whole passage fits one window (``CrossEncoderNLI.sentence_units``); a Wikipedia passage of the
FActScore biographies rarely does (10 of the 285 distinct passages of the 33 development
biographies). This script reads every passage so, outside the judge, to measure what such a
reading would give: for each FR2 pair (every atom against every passage of its record) the
judge's own verdict (the default reading, from the pair cache) is combined with the entailment of
the passage's *units* under ``--reading``:

- ``sentence``: each sentence, one that opens with a pronoun joined to the sentence before it
  (the cross-encoder's rule for short passages);
- ``title``: each sentence, a pronoun that opens it ("He", "She", "They"; "His", "Her",
  "Their") replaced by the passage's title ("Edmund Hillary", "Edmund Hillary's");
- ``adjacent``: each pair of consecutive sentences.

A unit counts for entailment only: its contradiction mass counts as neutral, so contradictions
stay the judge's. The pair's probabilities are then ``e = max(e_judge, max_u e_u)``,
``c = c_judge``, ``n = min(n_judge, min_u n_u)``, renormalised — the judge's own rule for
windows (:func:`~fact_reasoner.nli.cross_encoder.combine_windows`). ``--top N`` keeps only the N
units of a passage that share most content words with the atom (the cost of the reading bounded
as ``max_windows`` bounds windows).

The output is the records with these ``relations``; FR2 then reads them with
``--nli precomputed --filter-supplied-relations`` (the graph's rules apply as to a judge's
output), e.g. through :mod:`experiments.error_table`. ``OUT.timing.json`` holds the units
scored and the seconds they took.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

READINGS = ("sentence", "title", "adjacent")
_SUBJECT_PRONOUN = re.compile(r"^(He|She|They)\b")
_POSSESSIVE_PRONOUN = re.compile(r"^(His|Her|Their)\b")


def sentences_of(text: str) -> list[str]:
    """The passage's sentences, split as the cross-encoder splits them."""
    from fact_reasoner.text.sentences import sentence_spans

    return [text[a:b].strip() for a, b in sentence_spans(text) if text[a:b].strip()]


def reading_units(text: str, title: str | None, reading: str) -> list[str]:
    """The units a passage is read by under ``reading`` (the module docstring); a passage of one
    sentence is its own unit."""
    # the cross-encoder's own list of words that refer back (one rule for short and long passages)
    from fact_reasoner.nli.cross_encoder import _PRONOUN_OPENERS

    sentences = sentences_of(text)
    if len(sentences) <= 1:
        return [text.strip()] if text.strip() else []
    if reading == "sentence":
        units = []
        for k, sentence in enumerate(sentences):
            opens = sentence.split(maxsplit=1)[0].lower()
            units.append(f"{sentences[k - 1]} {sentence}" if k and opens in _PRONOUN_OPENERS else sentence)
        return units
    if reading == "title":
        if not title:
            return sentences
        return [
            _POSSESSIVE_PRONOUN.sub(f"{title}'s", _SUBJECT_PRONOUN.sub(title, sentence), count=1)
            for sentence in sentences
        ]
    if reading == "adjacent":
        return [f"{a} {b}" for a, b in zip(sentences, sentences[1:])]
    raise ValueError(f"unknown reading {reading!r}: one of {', '.join(READINGS)}")


def top_units(units: Sequence[str], hypothesis: str, n: int | None) -> list[str]:
    """The ``n`` units sharing most content words with the hypothesis (all when ``n`` is None),
    in passage order."""
    if n is None or len(units) <= n:
        return list(units)
    from fact_reasoner.nli.alignment_features import content_stems

    wanted = content_stems(hypothesis)
    ranked = sorted(range(len(units)), key=lambda i: (-len(wanted & content_stems(units[i])), i))
    return [units[i] for i in sorted(ranked[:n])]


def entailment_only(probabilities: dict[str, float]) -> dict[str, float]:
    """A unit's probabilities with its contradiction mass moved to neutral."""
    return {
        "entailment": probabilities["entailment"],
        "neutral": probabilities["neutral"] + probabilities["contradiction"],
        "contradiction": 0.0,
    }


def combine(judge: dict[str, float], units: Sequence[dict[str, float]]) -> dict[str, float]:
    """The judge's probabilities of a pair combined with its units' entailment-only ones, by the
    judge's rule for windows."""
    from fact_reasoner.nli.cross_encoder import combine_windows

    return combine_windows([judge, *(entailment_only(u) for u in units)])


def unit_probabilities(backend: Any, items: Sequence[tuple[str, str]]) -> list[dict[str, float]]:
    """``softmax(z / T)`` of (unit, hypothesis) items by the cross-encoder, as label dicts (its
    own conversion, so that a unit reads exactly as one of its windows)."""
    return backend._probabilities(list(items))


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def judge_record(
    record: dict[str, Any], cached: Any, backend: Any, reading: str, top: int | None
) -> tuple[list[dict[str, Any]], int, float, int]:
    """The record's FR2 relations under the reading, the units scored, their seconds and the
    pairs whose entailment the reading raised."""
    from fact_reasoner.graph.build import plan_graph
    from fact_reasoner.nli.base import NLIJudgement
    from fact_reasoner.schema import InputRecord

    parsed = InputRecord.model_validate(record)
    plan = plan_graph(parsed.atoms or [], parsed.contexts or [], 2)
    texts = plan.texts
    pairs = list(plan.pairs)
    judged = cached.judge([(texts[p], texts[h]) for p, h in pairs])
    units = {c.id: reading_units(c.text, c.title, reading) for c in plan.contexts}
    items: list[tuple[str, str]] = []
    owner: list[int] = []
    for index, (premise, hypothesis) in enumerate(pairs):
        for unit in top_units(units[premise], texts[hypothesis], top):
            items.append((unit, texts[hypothesis]))
            owner.append(index)
    started = time.perf_counter()
    scored = unit_probabilities(backend, items)
    seconds = time.perf_counter() - started
    per_pair: list[list[dict[str, float]]] = [[] for _ in pairs]
    for index, probabilities in zip(owner, scored):
        per_pair[index].append(probabilities)
    relations, raised = [], 0
    for (premise, hypothesis), judgement, unit_probs in zip(pairs, judged, per_pair):
        base = judgement.probabilities or {"entailment": 0.0, "neutral": 1.0, "contradiction": 0.0}
        combined = NLIJudgement.from_probabilities(combine(base, unit_probs))
        raised += int(
            combined.label.value == "entailment" and combined.probabilities["entailment"] > base["entailment"]
        )
        relations.append(
            {
                "source": premise,
                "target": hypothesis,
                "relation": combined.label.value,
                "probability": combined.probability,
                "probabilities": combined.probabilities,
            }
        )
    return relations, len(items), seconds, raised


def examples_table(records: Sequence[dict[str, Any]], model: str | None = None) -> str:
    """A Markdown table of every (passage, atom) pair of small records as each reading judges it:
    the cross-encoder with ``--nli-sentences`` off, contradictions and all, and the unit readings
    on top of the default; each cell the label's initial and P(entailment) (no cache: judged now)."""
    from fact_reasoner.nli.base import NLIJudgement
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

    judges = {name: CrossEncoderNLI(model, sentences=name) for name in ("off", "contradictions", "all")}
    header = ["atom (gold)", *(f"`{name}`" for name in judges), *(f"+ {r}" for r in READINGS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def cell(probabilities: dict[str, float]) -> str:
        judgement = NLIJudgement.from_probabilities(probabilities)
        return f"{judgement.label.value[0].upper()} {probabilities['entailment']:.2f}"

    for record in records:
        for context in record["contexts"]:
            lines.append(f"| *{context.get('title')}: “{context['text'][:90]}…”* |" + " |" * (len(header) - 1))
            for atom in record["atoms"]:
                pair = [(context["text"], atom["text"])]
                verdicts = {name: judge.judge(pair)[0].probabilities for name, judge in judges.items()}
                base = judges["contradictions"]
                readings = [
                    combine(
                        verdicts["contradictions"],
                        unit_probabilities(
                            base, [(u, atom["text"]) for u in reading_units(context["text"], context.get("title"), r)]
                        ),
                    )
                    for r in READINGS
                ]
                cells = [cell(p) for p in [*verdicts.values(), *readings]]
                lines.append(f"| {atom['text']} ({atom.get('label')}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def sample_pairs(records: Sequence[dict[str, Any]], n: int, seed: int = 0) -> list[tuple[str, str, str | None]]:
    """A seeded sample of ``n`` FR2 pairs of the records: (passage text, atom text, passage title)."""
    import random

    from fact_reasoner.graph.build import plan_graph
    from fact_reasoner.schema import InputRecord

    pairs = []
    for record in records:
        parsed = InputRecord.model_validate(record)
        plan = plan_graph(parsed.atoms or [], parsed.contexts or [], 2)
        titles = {c.id: c.title for c in plan.contexts}
        pairs += [(plan.texts[p], plan.texts[h], titles[p]) for p, h in plan.pairs]
    return random.Random(seed).sample(pairs, min(n, len(pairs)))


def speed(
    pairs: Sequence[tuple[str, str, str | None]], rounds: int = 3, model: str | None = None, threads: int | None = None
) -> dict[str, Any]:
    """Pairs judged per second, no cache, by the cross-encoder under each ``--nli-sentences`` and
    by the default plus each unit reading (all units, or the 3 sharing most words): the median of
    ``rounds`` rounds, the settings interleaved in each round so that a busy machine slows them
    alike; and each one's speed as a share of the default's (``contradictions``)."""
    import statistics

    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

    judges = {
        name: CrossEncoderNLI(model, sentences=name, threads=threads) for name in ("off", "contradictions", "all")
    }
    plain = [(premise, hypothesis) for premise, hypothesis, _ in pairs]

    def units_items(reading: str, top: int | None) -> list[tuple[str, str]]:
        return [
            (unit, hypothesis)
            for premise, hypothesis, title in pairs
            for unit in top_units(reading_units(premise, title, reading), hypothesis, top)
        ]

    settings: dict[str, Any] = {f"--nli-sentences {name}": (judge, None) for name, judge in judges.items()}
    for reading, top in (("sentence", None), ("sentence", 3), ("adjacent", None)):
        label = f"contradictions + {reading}" + (f" (top {top})" if top else "")
        settings[label] = (judges["contradictions"], (reading, top))
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(rounds):
        for name, (judge, reading) in settings.items():
            started = time.perf_counter()
            judge.judge(plain)
            if reading is not None:
                unit_probabilities(judge, units_items(*reading))
            seconds[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    base = median["--nli-sentences contradictions"]
    return {
        "pairs": len(pairs),
        "rounds": rounds,
        "pairs_per_second": {name: round(len(pairs) / s, 1) for name, s in median.items()},
        "share_of_default": {name: round(base / s, 3) for name, s in median.items()},
    }


def stricter(record: dict[str, Any], cached: Any, min_entailment: float) -> dict[str, Any]:
    """A record written by this script with the entailments its reading raised kept only when
    their probability reaches ``min_entailment``; below it the pair has the judge's own verdict
    again (from the pair cache). What a reading gives when its entailments must be confident."""
    texts = {a["id"]: a["text"] for a in record.get("atoms") or []} | {
        c["id"]: c["text"] for c in record.get("contexts") or []
    }
    relations = record["relations"]
    judged = cached.judge([(texts[r["source"]], texts[r["target"]]) for r in relations])
    kept = []
    for relation, judgement in zip(relations, judged):
        raised = relation["relation"] == "entailment" and judgement.label.value != "entailment"
        if raised and relation["probability"] < min_entailment:
            relation = relation | {
                "relation": judgement.label.value,
                "probability": judgement.probability,
                "probabilities": judgement.probabilities,
            }
        kept.append(relation)
    return record | {"relations": kept}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=Path, required=True, help="prepared records (atoms, contexts)")
    p.add_argument("--reading", choices=READINGS, help="the reading to write (required unless --examples)")
    p.add_argument(
        "--examples", action="store_true", help="print a table of every pair of the (small) records under each reading"
    )
    p.add_argument("--top", type=int, help="only the N units of a passage sharing most words with the atom")
    p.add_argument("--out", type=Path, help="the records with the reading's relations (JSONL)")
    p.add_argument(
        "--min-unit-entailment",
        type=float,
        metavar="P",
        help="read --records as this script's output and keep the entailments its reading raised only when ≥ P",
    )
    p.add_argument("--speed", type=int, metavar="N", help="print pairs/s of each setting on N sampled pairs")
    p.add_argument("--rounds", type=int, default=3, help="with --speed: rounds (the median is kept)")
    p.add_argument("--cache-dir", type=Path, help="the pair cache holding the judge's verdicts")
    p.add_argument("--nli-model", help="the cross-encoder (default: the shipped one)")
    p.add_argument("--threads", type=int)
    args = p.parse_args(argv)
    if args.examples:
        print(examples_table(read_records(args.records), args.nli_model))
        return 0
    if args.speed:
        pairs = sample_pairs(read_records(args.records), args.speed)
        print(json.dumps(speed(pairs, args.rounds, args.nli_model, args.threads), indent=1))
        return 0
    if args.out is None or (args.reading is None and args.min_unit_entailment is None):
        p.error("--reading (or --min-unit-entailment) and --out are needed (or --examples, --speed)")

    from fact_reasoner.settings.config import PipelineConfig
    from fact_reasoner.stages import Stages

    options: dict[str, Any] = {"version": 2, "nli": "cross-encoder", "nli_model": args.nli_model}
    if args.cache_dir is not None:
        options["cache_dir"] = args.cache_dir
    if args.threads is not None:
        options["threads"] = args.threads
    cached: Any = Stages(PipelineConfig(**options)).nli()  # the CachedNLI wrapper (its counters, its model)
    if args.min_unit_entailment is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        strict = [stricter(r, cached, args.min_unit_entailment) for r in read_records(args.records)]
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in strict), encoding="utf-8")
        return 0
    backend = cached.backend
    records = read_records(args.records)
    units = raised = 0
    seconds = 0.0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for number, record in enumerate(records, 1):
            relations, n, s, r = judge_record(record, cached, backend, args.reading, args.top)
            units, seconds, raised = units + n, seconds + s, raised + r
            out.write(json.dumps(record | {"relations": relations}, ensure_ascii=False) + "\n")
            print(f"{number}/{len(records)} {record.get('topic')}: {n} units in {s:.1f} s", file=sys.stderr)
    timing = {
        "reading": args.reading,
        "top": args.top,
        "records": len(records),
        "units_scored": units,
        "unit_seconds": round(seconds, 2),
        "judge_pairs_from_cache": cached.hits,
        "judge_pairs_judged_now": cached.backend_pairs,
        "judge_seconds_now": round(cached.seconds, 2),
        "pairs_raised_to_entailment": raised,
    }
    Path(f"{args.out}.timing.json").write_text(json.dumps(timing, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(timing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
