"""The verdicts of a small run as the terminal shows them: each claim, its verdict, its
posterior and the passage that decided it.

A user who ran the quick start should see which claims were judged how without opening the
JSONL file — a wrong verdict they can check by eye is the first thing they look for. So after a
run of up to :data:`SHOW_AT_MOST` records (or always with ``--show``; never with ``--quiet``)
the command prints, per record::

    line 1 · Marie Curie · precision 0.67 (2 of 3 claims S)
      S    0.87  Marie Curie was a physicist.
                 entailed by c_a0_0 "Marie Curie was a Polish and naturalised-French…" (0.93)
      NS ✗ 0.50  Marie Curie discovered penicillin.
                 no evidence; the judge says c_a2_0 "Penicillin was discovered in 1928 by the Scottish
                 physician Alexander Fleming." entails it (0.88), not used: the sentence names Alexander
                 Fleming, not Marie Curie (--entailments sentence)

The passage shown is the factor that pushed the verdict its way: for S the strongest
entailment, for NS the strongest contradiction — quoted by the sentence the relation screen
found deciding where it read one, else by its first words; an entailment the screen turned into
a contradiction says what the judge said and what the sentence says against the claim; a claim
with no factor says "no evidence",
with the judge's relations the graph left out, worded as the judge's reading, and the rule that
set each aside (the row's ``unused_evidence`` reason, as the HTML page shows it). With
``--conformal`` each claim is marked ``kept`` or ``drop`` and the heading is followed by what the
filter kept and its guarantee in words (:func:`conformal_line`). A baseline's claim
(``--pipeline factscore`` …: no graph) shows the judge's verdict and the passages it read.
Pure functions of the written rows and the contexts' texts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .rows import JUDGE_VERBS, judges_said, panel_making

__all__ = ["SHOW_AT_MOST", "claim_lines", "conformal_line", "excerpt", "settings_line", "verdict_counts_line"]

#: a run of at most this many records shows its claims (``--show`` for more)
SHOW_AT_MOST = 20
_RELATION_VERB = {"entailment": "entailed by", "contradiction": "contradicted by", "equivalence": "equivalent to"}
_A_RELATION = {"entailment": "an entailment", "contradiction": "a contradiction"}


def excerpt(text: str, words: int = 9) -> str:
    """The first ``words`` words of ``text`` (an ellipsis when cut), on one line."""
    parts = " ".join(str(text).split()).split(" ")
    return " ".join(parts[:words]) + ("…" if len(parts) > words else "")


def _passage(context_id: str, texts: Callable[[str], str | None], sentence: str | None = None) -> str:
    """A context as the terminal names it: its id and the sentence the screen found deciding
    (up to 16 words), else the passage's first words."""
    if sentence:
        return f'{context_id} "{excerpt(sentence, 16)}"'
    text = texts(context_id)
    return f'{context_id} "{excerpt(text)}"' if text else context_id


def _deciding(atom: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The factor that pushed the atom's verdict its way (the strongest one otherwise)."""
    evidence = list(atom.get("evidence") or [])
    if not evidence:
        return None
    wanted = "entailment" if atom.get("prediction") == "S" else "contradiction"
    return max(evidence, key=lambda e: (e.get("relation") == wanted, e.get("probability", 0.0)))


def judges_line(evidence: Mapping[str, Any] | None) -> str | None:
    """Where a panel's judges disagreed on a passage: ``judges disagree on c0: cross-encoder:
    entails 0.88 · specialist: neutral 0.94``, then how the panel's figure is made of their
    verdicts (:func:`~fact_reasoner.report.rows.panel_making`) (None where they agreed or no
    panel judged)."""
    if not evidence or evidence.get("agreed") is not False:
        return None
    making = panel_making(evidence)
    said = judges_said(evidence.get("judges") or {})
    return f"judges disagree on {evidence.get('context')}: {said}" + (f"; {making}" if making else "")


def _first_disagreement(atom: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A claim with no factor: the strongest of the judges' readings the graph left out on
    which the panel's judges disagreed (None if none)."""
    return next((u for u in atom.get("unused_evidence") or [] if u.get("agreed") is False), None)


def _set_aside(unused: Mapping[str, Any], texts: Callable[[str], str | None]) -> str:
    """A relation the graph left out, worded as the judge's reading and the rule's decision (as
    the page words it; the row's ``reason`` as written): ``the judge says c1 "…" entails it
    (0.88), not used: the passage never names Marie Curie …``. Never "c1 entails it": the graph did
    not find so."""
    says = JUDGE_VERBS.get(str(unused.get("relation")), str(unused.get("relation")))
    where = _passage(str(unused.get("context")), texts, unused.get("sentence"))
    return f"the judge says {where} {says} it ({unused.get('probability', 0):.2f}), not used: {unused.get('reason', 'left out')}"


def claim_lines(row: Mapping[str, Any], texts: Callable[[str], str | None]) -> list[str]:
    """The lines of one output row: a heading, then each claim with its verdict, posterior and
    the passage that decided it (``texts`` maps a context id to its text, or None)."""
    atoms = list(row.get("atoms") or [])
    score = row.get("factuality_score")
    supported = sum(a.get("prediction") == "S" for a in atoms)
    about = row.get("topic") or excerpt(row.get("input") or "", 8) or "record"
    if score is None:
        verdict = "no precision" + (" (an abstention)" if row.get("abstained") else "")
    else:
        verdict = f"precision {score:.2f} ({supported} of {len(atoms)} claim(s) S)"
    lines = [f"line {row.get('source_line', '?')} · {about} · {verdict}"]
    conformal = row.get("conformal") if isinstance(row.get("conformal"), Mapping) else None
    if conformal is not None:
        lines.append("  " + conformal_line(conformal))
    indent = " " * (13 + (5 if conformal is not None else 0))
    for atom in atoms:
        prediction = atom.get("prediction", "?")
        mark = "S   " if prediction == "S" else "NS ✗"
        filtered = "" if conformal is None else ("kept " if atom.get("kept") else "drop ")
        lines.append(f"  {mark} {atom.get('probability', float('nan')):.2f}  {filtered}{atom.get('text', '')}")
        deciding = _deciding(atom)
        if "judgement" in atom:  # a baseline's verdict: no graph, the judge read these passages
            seen = [_passage(str(c), texts) for c in atom.get("evidence_ids") or []]
            detail = f"judged {atom['judgement']}" + (f" on {', '.join(seen[:2])}" if seen else ", no evidence")
            if len(seen) > 2:
                detail += f" and {len(seen) - 2} more"
            if atom.get("failure"):
                detail += f": {atom['failure']}"
        elif deciding is not None:
            verb = _RELATION_VERB.get(str(deciding.get("relation")), str(deciding.get("relation")))
            where = _passage(str(deciding.get("context")), texts, deciding.get("sentence"))
            detail = f"{verb} {where} ({deciding.get('probability', 0):.2f})"
            if deciding.get("judged"):
                detail += (
                    f": the judge read {_A_RELATION.get(str(deciding['judged']), 'it')}, but {deciding.get('screen')}"
                )
            elif deciding.get("screen"):
                detail += f": {deciding['screen']}"
        else:
            detail = "; ".join(
                ["no evidence", *(_set_aside(u, texts) for u in list(atom.get("unused_evidence") or [])[:2])]
            )
        marks = [f"{key.replace('_', ' ')}: {atom[key]}" for key in ("unresolved_reference",) if atom.get(key)]
        lines.append(indent + detail + (f" [{'; '.join(marks)}]" if marks else ""))
        disagreement = judges_line(deciding if deciding is not None else _first_disagreement(atom))
        if disagreement:
            lines.append(indent + disagreement)
    for left_out in [*(row.get("ungrounded_atoms") or []), *(row.get("fragment_atoms") or [])]:
        lines.append(f"  --   not judged  {left_out.get('text', '')} [{left_out.get('reason', 'not judged')}]")
    for failed in row.get("failed_atoms") or []:  # a baseline's claim whose judgement failed
        lines.append(f"  --   failed      {failed.get('text', '')} [{failed.get('failure', 'no judgement')}]")
    return lines


def conformal_line(conformal: Mapping[str, Any]) -> str:
    """A row's conformal filter in one line (``--conformal``): what it kept, above which
    posterior, and the guarantee in words::

        conformal filter: kept 5 of 36 claim(s) (posterior > 0.9952; the others marked drop). For answers …
    """
    threshold = conformal.get("threshold")
    above = "none: no threshold keeps any" if threshold is None else f"posterior > {float(threshold):.4f}"
    return (
        f"conformal filter: kept {conformal.get('num_kept', 0)} of {conformal.get('num_claims', 0)} claim(s) "
        f"({above}; the others marked drop). {conformal.get('statement', '')}"
    ).rstrip()


def verdict_counts_line(claims: Mapping[str, Any]) -> str:
    """Every claim of a run in one line whose parts add up to its total (``claims``: the
    summary's :class:`~fact_reasoner.scores.ClaimCounts` as a dict)::

        claims 21: S 13 · NS on evidence 3 · no evidence 4 · not judged 1 (1 ungrounded, 0 stating
        nothing); of the 20 judged: 4 with an unresolved reference

    The judged categories always; "not judged" when the atoms were made and checked here, or
    some claim was not judged (a baseline's failed judgement); after ";", what some of the judged
    claims also are (not a category: they are counted above)."""
    parts = [
        f"S {claims.get('supported', 0)}",
        f"NS on evidence {claims.get('unsupported', 0)}",
        f"no evidence {claims.get('no_evidence', 0)}",
    ]
    if claims.get("checked") or claims.get("not_judged"):
        why = (
            [f"{claims.get('ungrounded', 0)} ungrounded", f"{claims.get('stating_nothing', 0)} stating nothing"]
            if claims.get("checked")
            else []
        )
        if claims.get("failed"):
            why.append(f"{claims['failed']} whose judgement failed")
        parts.append(f"not judged {claims.get('not_judged', 0)} ({', '.join(why)})")
    line = f"claims {claims.get('total', 0)}: " + " · ".join(parts)
    marked = [
        f"{claims[key]} {what}"
        for key, what in (
            ("unresolved", "with an unresolved reference"),
            ("ungrounded_kept", "ungrounded, judged all the same (--keep-ungrounded-atoms)"),
            ("uncheckable", "uncheckable, left out of the scores (--skip-uncheckable)"),
        )
        if claims.get(key)
    ]
    if marked:
        line += f"; of the {claims.get('judged', 0)} judged: " + ", ".join(marked)
    return line


def settings_line(rows: Sequence[Mapping[str, Any]], judge: str | None = None) -> str | None:
    """The judge (``judge``, e.g. the model and its version, else the rows' ``nli`` setting) and
    the graph the rows were made with (from the first row's ``settings``); for a baseline's
    rows, which build no graph, the pipeline and how it judges instead."""
    settings = next((row.get("settings") for row in rows if row.get("settings")), None)
    if not settings:
        return None
    models = settings.get("models") or {}
    graph = settings.get("graph") or {}
    if judge is None:
        judge = str(models.get("nli", "?")) + (f" ({models['nli_model']})" if models.get("nli_model") else "")
    pipeline = settings.get("pipeline") or {}
    if pipeline.get("name", "factreasoner") != "factreasoner":
        how = f", judged by {pipeline['judge']}" if pipeline.get("judge") else ""
        return f"judge {judge} · pipeline {pipeline['name']}{how}, no graph"
    shown = [f"FR{graph.get('version', '?')}"]
    for key, label in (
        ("factor_tables", "tables"),
        ("context_prior", "context prior"),
        ("min_relation_probability", "relation floor"),
        ("contradictions", "contradictions"),
        ("entailments", "entailments"),
    ):
        if key in graph:
            shown.append(f"{label} {graph[key]}")
    return f"judge {judge} · graph " + ", ".join(shown)
