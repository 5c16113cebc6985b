"""The verdicts a small run prints in the terminal (``fact_reasoner.report.terminal`` and the
``assess`` command): each claim, its verdict and posterior, the passage that decided it, and
"no evidence" with what the graph left out and why."""

from __future__ import annotations

import json

from fact_reasoner.cli import main
from fact_reasoner.report.terminal import SHOW_AT_MOST, claim_lines, excerpt, verdict_counts_line
from fact_reasoner.screening.relations import unused_reason
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def _row() -> dict:
    return {
        "source_line": 3,
        "topic": "Marie Curie",
        "factuality_score": 0.5,
        "atoms": [
            {
                "id": "a0",
                "text": "Marie Curie was a physicist.",
                "probability": 0.87,
                "prediction": "S",
                "evidence": [
                    {"context": "c1", "relation": "contradiction", "probability": 0.6},
                    {"context": "c0", "relation": "entailment", "probability": 0.93},
                ],
            },
            {
                "id": "a1",
                "text": "Marie Curie discovered penicillin.",
                "probability": 0.5,
                "prediction": "NS",
                "evidence": [],
                "no_evidence": True,
                "unused_evidence": [
                    {
                        "context": "c2",
                        "relation": "entailment",
                        "probability": 0.88,
                        "reason": unused_reason("the passage never names Marie Curie", "--entailments same-subject"),
                    }
                ],
            },
        ],
        "ungrounded_atoms": [{"id": "a2", "text": "She was born in 1815.", "reason": "not in the response: '1815'"}],
    }


def test_each_claim_shows_its_verdict_and_the_passage_that_decided_it():
    texts = {
        "c0": "Marie Curie was a Polish and naturalised-French physicist and chemist who conducted research.",
        "c2": "Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming.",
    }
    lines = claim_lines(_row(), texts.get)
    assert lines[0] == "line 3 · Marie Curie · precision 0.50 (1 of 2 claim(s) S)"
    assert lines[1] == "  S    0.87  Marie Curie was a physicist."
    # an S claim is explained by its strongest entailment, not by the stronger-looking contradiction
    assert lines[2].strip() == 'entailed by c0 "Marie Curie was a Polish and naturalised-French physicist and…" (0.93)'
    assert lines[3] == "  NS ✗ 0.50  Marie Curie discovered penicillin."
    # the passage does not entail it: the judge says so, and the rule that set it aside is named
    # (it once read 'no evidence (not used: c2 "…" entails it 0.88, another subject)')
    assert lines[4].strip() == (
        'no evidence; the judge says c2 "Penicillin was discovered in 1928 by the Scottish physician…" '
        "entails it (0.88), not used: the passage never names Marie Curie (--entailments same-subject)"
    )
    assert lines[5] == "  --   not judged  She was born in 1815. [not in the response: '1815']"


def test_the_counts_line_separates_no_evidence_from_ns_on_evidence():
    claims = {"total": 5, "judged": 5, "supported": 2, "unsupported": 1, "no_evidence": 2}
    assert verdict_counts_line(claims) == "claims 5: S 2 · NS on evidence 1 · no evidence 2"
    assert excerpt("one two three", 2) == "one two…"


def test_a_small_run_prints_its_claims_and_a_quiet_or_large_one_does_not(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--input-file", str(EXAMPLE), "--output-dir", str(out), "--version", "2"]) == 0
    printed = capsys.readouterr()
    assert "line 1 · Marie Curie · precision" in printed.out
    assert "  NS ✗ 0.08  Marie Curie was born in Vienna." in printed.out
    assert "judge the records' own relations · graph FR2" in printed.err
    assert "claims 14: S 10 · NS on evidence 3 · no evidence 1" in printed.err
    assert (
        main(["--input-file", str(EXAMPLE), "--output-dir", str(out), "--version", "2", "--quiet", "--overwrite"]) == 0
    )
    assert capsys.readouterr().out == ""
    many = tmp_path / "many.jsonl"
    record = json.loads(EXAMPLE.read_text().splitlines()[1])
    many.write_text("".join(json.dumps(record | {"input": f"q{i}"}) + "\n" for i in range(SHOW_AT_MOST + 1)))
    assert main(["--input-file", str(many), "--output-dir", str(out), "--version", "2"]) == 0
    assert "· precision" not in capsys.readouterr().out
    assert main(["--input-file", str(many), "--output-dir", str(out), "--version", "2", "--show", "--overwrite"]) == 0
    assert capsys.readouterr().out.count("· precision") == SHOW_AT_MOST + 1


def test_a_baselines_claims_show_the_judges_verdict_and_the_passages_it_read(tmp_path, capsys):
    """A baseline builds no graph: its claims are explained by the judge's verdict and the
    passages it read (not "no evidence"), a claim whose judgement failed is listed with why, and
    the settings line names the pipeline instead of a graph."""
    out = tmp_path / "fs.jsonl"
    argv = ["--input-file", str(EXAMPLE), "--output-file", str(out), "--pipeline", "factscore"]
    assert main([*argv, "--pipeline-judge", "nli", "--nli", "precomputed"]) == 0
    printed = capsys.readouterr()
    assert "  S    0.97  Marie Curie was a physicist." in printed.out
    assert '             judged supported on c_a0_0 "Marie Sklodowska Curie (1867-1934) was a Polish' in printed.out
    assert "  NS ✗ 0.07  Marie Curie discovered penicillin." in printed.out
    assert '             judged unsupported on c_a7_0 "Penicillin was discovered in 1928' in printed.out
    # the record supplies no relation between "cycling holidays" and its passages
    assert "  --   failed      Marie Curie enjoyed cycling holidays. [no NLI verdict" in printed.out
    assert "no evidence" not in printed.out
    assert "judge the records' own relations · pipeline factscore, judged by nli, no graph" in printed.err


def _parts_add_up(line: str) -> bool:
    """``claims N: A a · B b · … (…)``: the numbers of the categories (before the ";" and outside
    the parentheses) add up to N."""
    import re

    head, _, categories = line.split(";")[0].partition(": ")
    outside = re.sub(r"\([^)]*\)", "", categories)
    return int(head.split()[1]) == sum(int(part.split()[-1]) for part in outside.split(" · "))


def test_the_claims_line_counts_every_category_once_and_adds_up():
    """Every category and flag: judged S / NS on evidence / no evidence; not judged: ungrounded
    (set aside), stating nothing, a baseline's failed judgement; and, among the judged, marked
    (an unresolved reference, --keep-ungrounded-atoms, --skip-uncheckable). The line once read
    "claims 20: S 13 · NS on evidence 3 · no evidence 4 · not judged 1": a breakdown of 20
    listing 21."""
    from fact_reasoner.scores import ClaimCounts, summarize_rows

    def atom(prediction, **marks):
        return {"prediction": prediction, "probability": 0.9 if prediction == "S" else 0.5, **marks}

    checked = {"ungrounded_atoms": 0, "unresolved_atoms": 0, "fragment_atoms": 0}
    rows = [
        {  # made and checked here: one atom set aside, one clause stating nothing, one unresolved
            "atoms": [atom("S"), atom("S", unresolved_reference="She"), atom("NS"), atom("NS", no_evidence=True)],
            "ungrounded_atoms": [{"id": "a4", "text": "x", "reason": "not in the response"}],
            "fragment_atoms": [{"id": "a5", "text": "y", "reason": "states nothing"}],
            "counters": checked,
        },
        {  # --keep-ungrounded-atoms and --skip-uncheckable: judged, marked
            "atoms": [
                atom("S", ungrounded_reason="not in the response", checkworthy=True),
                atom("NS", checkworthy=False),
            ],
            "counters": checked,
        },
        {  # a baseline: one claim whose judgement failed
            "atoms": [atom("S")],
            "failed_atoms": [{"id": "a1", "text": "z", "failure": "unreadable"}],
        },
    ]
    claims = summarize_rows(rows).as_dict()["claims"]
    assert claims == ClaimCounts.of_rows(rows).as_dict()
    line = verdict_counts_line(claims)
    assert line == (
        "claims 10: S 4 · NS on evidence 2 · no evidence 1 · not judged 3 (1 ungrounded, 1 stating nothing, "
        "1 whose judgement failed); of the 7 judged: 1 with an unresolved reference, 1 ungrounded, judged all "
        "the same (--keep-ungrounded-atoms), 1 uncheckable, left out of the scores (--skip-uncheckable)"
    )
    assert _parts_add_up(line)
    # atoms a record carries are not checked: only the judged categories
    given = summarize_rows([{"atoms": [atom("S"), atom("NS"), atom("NS", no_evidence=True)]}]).as_dict()["claims"]
    assert verdict_counts_line(given) == "claims 3: S 1 · NS on evidence 1 · no evidence 1"
    assert _parts_add_up(verdict_counts_line(given))


def test_the_panels_making_is_recomputed_from_the_judges_numbers():
    """The clause that says how a roles panel's figure is made (issue #60 item 3) computes it
    from each judge's distribution and role, for the label the panel gave — the evidence's
    ``judged`` where a later stage changed the relation — so the equation holds whatever number
    the row shows beside it; a panel of factors names whose factor it is; a row without the
    judges' distributions (written before they were kept) shows none."""
    from fact_reasoner.report.rows import panel_making

    judges = {
        "cross-encoder": {"relation": "entailment", "probability": 0.8, "role": "entailment",
                          "probabilities": {"entailment": 0.8, "neutral": 0.2, "contradiction": 0.0}},
        "specialist": {"relation": "neutral", "probability": 0.9, "role": "contradiction",
                       "probabilities": {"entailment": 0.0, "neutral": 0.9, "contradiction": 0.1}},
    }  # fmt: skip
    entailment = {"context": "c0", "relation": "entailment", "probability": 0.72, "judges": judges}
    assert panel_making(entailment) == (
        "the panel's P(entailment) 0.72 = (1 − c) × e = (1 − 0.10) × 0.80, with c = specialist's P(contradiction) "
        "0.10 and e = cross-encoder's P(entailment) / (P(entailment) + P(neutral)) = 0.80 / (0.80 + 0.20) = 0.80"
    )
    turned = {**entailment, "relation": "contradiction", "judged": "entailment", "probability": 0.8}
    assert panel_making(turned) == panel_making(entailment)  # the panel's own verdict, as it gave it
    contradiction = {**entailment, "relation": "contradiction", "probability": 0.1}
    assert (
        panel_making(contradiction) == "the panel's P(contradiction) 0.10 = c, c = specialist's P(contradiction) 0.10"
    )
    assert panel_making({**entailment, "judge": "cross-encoder"}) == (
        "each judge's verdict is a factor of its own, and this one is cross-encoder's"
    )
    old = {name: {"relation": v["relation"], "probability": v["probability"]} for name, v in judges.items()}
    assert panel_making({**entailment, "judges": old}) is None
