"""``fact-reasoner report``: one self-contained HTML page from result JSONL files.

    fact-reasoner report runs/out/bios.*.jsonl --input-file bios_prepared.jsonl -o report.html

The page holds, with inline CSS and PNG plots as ``data:`` URIs (no network, no script):

- the summary table per assessor (and per rarity tier when rows carry ``cat``) with the
  paper's published Table 3 beside it (see :mod:`fact_reasoner.report.tables` for definitions);
- the reliability diagram, predicted vs gold precision and the posterior distributions
  (when rows carry gold labels and matplotlib is installed);
- for every response: its atoms, each with its gold label and one cell per assessor coloured
  by the posterior P(atom true) (red 0 → yellow 0.5 → green 1), ✓/✗ against gold, and the
  contexts that entail or contradict it, with the NLI probability;
- when a row carries ``correction`` (``fact-reasoner correct``): the corrected text beside the
  original, precision before → after, the per-sentence diff, the references and the changes;
- when a row carries ``contradicting_pairs`` (``--coherence``): the atoms of each pair marked in
  the atom table and the pairs listed with P(contradiction);
- when a row carries ``conformal`` (``--conformal``): each claim marked kept or ✂ dropped, and
  the filter's threshold and guarantee in words under the response's scores;
- with gold labels, the conformal filter's retention-against-α curve and its realised error
  over random calibration/test splits of the responses (:func:`~fact_reasoner.report.plots.plot_conformal`).

Context texts: result rows name contexts by id in ``atoms[].evidence``. The texts come from
the rows' own ``contexts`` field when present, else from ``--input-file`` (the input records the
results were made from, matched by ``record_key``, i.e. the same file and order as the run).
Without either, evidence shows ids only.

Every text from the files is HTML-escaped.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import RecordError
from ..scores import GoldAtoms
from ..settings.registry import Extra
from .plots import PLOTS
from .rows import group_rows, judge_of, judges_said, panel_making, read_rows, restrict_to_common
from .tables import (
    COLUMNS,
    PUBLISHED_GOLD_PRECISION,
    PUBLISHED_TABLE3,
    TableLine,
    format_cell,
    line_values,
    summary_table,
)

logger = logging.getLogger(__name__)

#: the plots' package, and this project's extra that installs it
PLOTS_EXTRA = Extra("matplotlib", "report")


def plots_missing() -> str | None:
    """Why a page with gold labels has no plots — matplotlib is not installed, and the command
    that installs it — or None when it can draw them. The page and the terminal say the same."""
    return f"plots need matplotlib: {PLOTS_EXTRA.install_hint()}" if PLOTS_EXTRA.missing() else None


SNIPPET_CHARS = 220


def esc(value: Any) -> str:
    """HTML-escaped text (quotes too, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def colour(p: float) -> str:
    """Background for a posterior: hue 0 (red) at P = 0, 60 (yellow) at 0.5, 120 (green) at 1."""
    p = min(max(float(p), 0.0), 1.0)
    return f"hsl({120 * p:.0f}, 70%, 80%)"


def _fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.{digits}f}"
    return "–" if value is None else str(value)


CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dde5; --bg:#fbfbfd; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1200px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 0 0 6px; }
.meta, .note { color: var(--muted); font-size: 12.5px; }
table { border-collapse: collapse; margin: 8px 0 12px; background: #fff; }
th, td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top; }
th { background: #eef1f6; font-weight: 600; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.plots figure { margin: 0; background: #fff; border: 1px solid var(--line); padding: 6px; }
.plots img { max-width: 100%; height: auto; display: block; }
section.record { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; margin: 14px 0; }
.badge { display: inline-block; min-width: 26px; text-align: center; border-radius: 4px; padding: 0 5px;
         font-weight: 600; font-size: 12px; }
.badge.S { background: #cdebd8; color: #14532d; } .badge.NS { background: #f8d3cc; color: #7f1d1d; }
.badge.none { background: #e5e7eb; color: #374151; }
td.p { text-align: center; white-space: nowrap; font-variant-numeric: tabular-nums; min-width: 74px; }
.ok { color: #166534; } .bad { color: #b91c1c; font-weight: 700; }
.atomtext { max-width: 520px; }
details > summary { cursor: pointer; color: #1f4e99; }
.evidence { margin: 4px 0 2px 0; padding-left: 0; list-style: none; font-size: 12.5px; }
.evidence li { margin: 2px 0; }
.disagree { color: #a34d00; font-weight: 600; }
.rel { display: inline-block; min-width: 92px; font-weight: 600; }
.rel.entailment { color: #166534; } .rel.contradiction { color: #b91c1c; } .rel.equivalence { color: #1f4e99; }
.ctx { font-size: 12.5px; } .ctx dt { font-weight: 600; margin-top: 6px; } .ctx dd { margin: 0 0 0 12px; }
.scale { display: inline-block; width: 180px; height: 12px; vertical-align: middle;
         background: linear-gradient(90deg, hsl(0,70%,80%), hsl(60,70%,80%), hsl(120,70%,80%)); border: 1px solid var(--line); }
.output { white-space: pre-wrap; background: #f6f7fa; padding: 6px 8px; border-radius: 4px; }
.correction { margin: 10px 0; } .sidebyside { display: flex; gap: 12px; }
.sidebyside > div { flex: 1; } .sidebyside h4 { margin: 0 0 4px; font-size: 13px; }
.status.failed { color: #b91c1c; font-weight: 600; } .status.corrected, .status.unchanged { color: #166534; font-weight: 600; }
tr.rewritten td { background: #fff7d6; } tr.removed td { background: #fde4df; text-decoration-color: #b91c1c; }
tr.removed td.original { text-decoration: line-through; }
tr.atom.contradicting td { background-image: linear-gradient(90deg, #fbd5d5 4px, transparent 4px); }
.contradiction-mark { color: #b91c1c; font-weight: 700; }
.dropped { color: #7c2d12; font-weight: 600; } td.p.dropped { opacity: 0.7; }
"""


class ContextTexts:
    """Context id → (title, text) per record, and one anchor per distinct text."""

    def __init__(self) -> None:
        self.by_record: dict[str, dict[str, dict[str, Any]]] = {}

    def add(self, record_key: str, contexts: Sequence[dict[str, Any]]) -> None:
        table = self.by_record.setdefault(record_key, {})
        for context in contexts:
            if isinstance(context, dict) and "id" in context:
                table.setdefault(str(context["id"]), {"title": context.get("title"), "text": context.get("text", "")})

    def get(self, record_key: str, context_id: str) -> dict[str, Any] | None:
        return self.by_record.get(record_key, {}).get(context_id)

    @classmethod
    def from_input(cls, path: Path, failures: list[RecordError] | None = None) -> "ContextTexts":
        """The context texts of the input records; a record that cannot be read is appended to
        ``failures`` (when given) and the others are read."""
        from ..io import NumberedRecord, read_records

        texts = cls()
        for item in read_records(path):
            if isinstance(item, NumberedRecord):
                texts.add(item.key, [c.model_dump() for c in item.record.contexts or []])
            elif failures is not None:
                failures.append(item)
        return texts


def _summary_html(lines: Sequence[TableLine]) -> str:
    head = "".join(f"<th>{esc(title)}</th>" for _, title, _ in COLUMNS)
    body = []
    for line in lines:
        cells = []
        for (_, _, field), value in zip(COLUMNS, line_values(line)):
            cells.append(f'<td class="{"" if field is None else "num"}">{esc(format_cell(value))}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _published_html() -> str:
    rows = []
    for model, table in PUBLISHED_TABLE3.items():
        for assessor, values in table.items():
            cells = "".join(f'<td class="num">{v:.2f}</td>' for v in values)
            rows.append(f"<tr><td>{esc(model)}</td><td>{esc(assessor)}</td>{cells}</tr>")
    return (
        '<p class="note">Published numbers (paper v2, Table 3): 157 FActScore ChatGPT biographies, gold '
        f"precision {PUBLISHED_GOLD_PRECISION:.2f}, NLI by the LLMs named — a different NLI model and "
        "dataset split from ours, shown for orientation only.</p>"
        "<table><thead><tr><th>NLI/LLM (published)</th><th>assessor</th><th>Pr</th><th>F1</th><th>F1@K</th>"
        f"<th>MAE</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _plots_html(groups: dict[str, list[dict[str, Any]]]) -> str:
    missing = plots_missing()
    if missing is not None:
        logger.warning("the page has no plots: %s", missing)  # the terminal says it too
        return f'<p class="note">{esc(missing[0].upper() + missing[1:])}.</p>'
    figures = []
    captions = {
        "reliability": "Reliability diagram: fraction of gold-S atoms per bin of predicted P",
        "precision_scatter": "Predicted vs gold factual precision, one point per response",
        "score_distributions": "Posterior P(atom true) by gold label",
        "conformal": "Conformal filter: retention of true claims and realised error against α, fitted on half "
        "the responses and measured on the other half (random splits; marginal guarantees — docs/conformal.md)",
    }
    for name, plot in PLOTS.items():
        data = base64.b64encode(plot(groups)).decode("ascii")
        figures.append(
            f'<figure><img alt="{esc(captions[name])}" src="data:image/png;base64,{data}">'
            f'<figcaption class="note">{esc(captions[name])}</figcaption></figure>'
        )
    return f'<div class="plots">{"".join(figures)}</div>'


def _row_precision(row: dict[str, Any]) -> tuple[float, float | None]:
    """The row's written factual precision, and its gold precision when atoms carry labels."""
    written = row.get("factuality_score")
    predicted = math.nan if written is None else float(written)
    gold = GoldAtoms.of(row)
    return predicted, gold.gold_precision if gold.truths else None


def _evidence_html(
    record_key: str,
    per_assessor: dict[str, Sequence[dict[str, Any]]],
    texts: ContextTexts,
    anchors: dict[str, str],
    limit: int,
    all_names: Sequence[str],
) -> str:
    """The contexts that entail or contradict one atom, merged over assessors.

    The same (context text, relation, probability) found by several assessors is listed once
    with the assessors that used it (NLI is shared, so FR2/FR3 mostly add contexts FR1 lacks)."""
    merged: dict[tuple[str, str, float], dict[str, Any]] = {}
    for name, evidence in per_assessor.items():
        for link in evidence:
            context_id = str(link.get("context"))
            relation = str(link.get("relation", ""))
            probability = float(link.get("probability", math.nan))
            info = texts.get(record_key, context_id)
            identity = str(info.get("text")) if info is not None else context_id
            entry = merged.setdefault(
                (identity, relation, round(probability, 4)),
                {"context": context_id, "relation": relation, "probability": probability, "info": info, "by": []},
            )
            entry["by"].append(name)
            if link.get("agreed") is False:  # a panel whose judges disagreed on this passage
                making = panel_making(link)  # and how the panel's figure is made of their verdicts
                entry["disagreement"] = judges_said(link.get("judges") or {}) + (f"; {making}" if making else "")
            if link.get("sentence"):  # the relation screen's deciding sentence
                entry["sentence"] = str(link["sentence"])
            if link.get("screen"):
                said = "the judge read an entailment, but " if link.get("judged") == "entailment" else ""
                entry["screen"] = said + str(link["screen"])
    if not merged:
        return '<span class="note">no context entails or contradicts it</span>'
    entries = sorted(merged.values(), key=lambda e: -e["probability"])
    items = []
    for entry in entries[:limit]:
        info = entry["info"]
        if info is not None:
            text = str(info.get("text") or "")
            snippet = text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rstrip() + "…"
            anchor = anchors.get(text)
            where = f'<a href="#{esc(anchor)}">{esc(entry["context"])}</a>' if anchor else esc(entry["context"])
            title = f" <i>{esc(info.get('title'))}</i>" if info.get("title") else ""
            # the sentence the relation screen found deciding, where it read one
            shown = f"<mark>{esc(entry['sentence'])}</mark>" if entry.get("sentence") else esc(snippet)
            body = f"{where}{title}: {shown}"
        else:
            body = esc(entry["context"])
            if entry.get("sentence"):  # the row carries the deciding sentence, even without the passages
                body += f": <mark>{esc(entry['sentence'])}</mark>"
        if entry.get("screen"):
            body += f' <span class="note">({esc(entry["screen"])})</span>'
        by = "all" if len(entry["by"]) == len(all_names) else ", ".join(entry["by"])
        disagreement = (
            f' <span class="disagree">judges disagree: {esc(entry["disagreement"])}</span>'
            if "disagreement" in entry
            else ""
        )
        items.append(
            f'<li><span class="rel {esc(entry["relation"])}">{esc(entry["relation"])} {esc(_fmt(entry["probability"], 2))}</span> '
            f'{body} <span class="note">[{esc(by)}]</span>{disagreement}</li>'
        )
    more = f'<li class="note">… and {len(entries) - limit} more</li>' if len(entries) > limit else ""
    return f'<ul class="evidence">{"".join(items)}{more}</ul>'


def _correction_html(rid: str, correction: dict[str, Any]) -> str:
    """The corrected text beside the original, the per-sentence diff, references and changes.
    Precision and length before → after only for a correction that was delivered (corrected or
    unchanged): a refused one shows the original's alone, the refused text's figures being no
    improvement anyone received."""
    status = str(correction.get("status"))
    before = correction.get("before") or {}
    after = correction.get("after") or {}
    if status in ("corrected", "unchanged"):
        scores = (
            f"Pr {esc(_fmt(before.get('factuality_score')))} → {esc(_fmt(after.get('factuality_score')))}"
            f" · {esc(before.get('chars'))} → {esc(after.get('chars'))} characters"
        )
    else:
        scores = (
            f"Pr {esc(_fmt(before.get('factuality_score')))} · {esc(before.get('chars'))} characters "
            "(the original: no corrected text was delivered)"
        )
    reason = f'<p class="status failed">{esc(correction.get("reason"))}</p>' if correction.get("reason") else ""
    if isinstance(correction.get("conformal"), dict):  # --conformal: what its guarantee covers of the text
        reason += f'<p class="note conformal">{esc(correction["conformal"].get("statement"))}</p>'
    if correction.get("method") == "extractive":
        refused = correction.get("refused_rewrite") or {}
        reason += (
            f'<p class="note extractive">the model\'s rewrite was refused ({esc(refused.get("reason"))}); '
            "the response's own supported sentences are kept instead</p>"
        )
    original = " ".join(str(s.get("original", "")) for s in correction.get("sentences") or [])
    corrected = correction.get("text")
    if corrected is None:
        rejected = correction.get("rejected_text")
        corrected_html = '<p class="note">no correction (refused)</p>' + (
            f'<p class="note">rejected rewrite:</p><div class="output rejected">{esc(rejected)}</div>'
            if rejected
            else ""
        )
    else:
        corrected_html = f'<div class="output corrected">{esc(corrected)}</div>'
    diff_rows = "".join(
        f'<tr class="{esc(s.get("action"))}"><td class="original">{esc(s.get("original"))}</td>'
        f'<td>{esc(s.get("action"))}</td><td class="corrected">{esc(s.get("corrected") or "")}</td></tr>'
        for s in correction.get("sentences") or []
    )
    references = "".join(
        f'<li value="{esc(r.get("n"))}"><b>{esc(r.get("context"))}</b>'
        f"{(' — ' + esc(r.get('title'))) if r.get('title') else ''}: {esc(r.get('snippet') or '')}</li>"
        for r in correction.get("references") or []
    )
    changes = "".join(
        f"<li><b>{esc(c.get('atom'))}</b> {esc(c.get('action'))}: {esc(c.get('text'))} "
        f'<span class="note">({esc(c.get("why"))})</span></li>'
        for c in correction.get("changes") or []
    )
    return (
        f'<div class="correction" id="{esc(rid)}-correction">'
        f'<div class="meta">correction: <span class="status {esc(status)}">{esc(status)}</span> · {scores}</div>{reason}'
        f'<div class="sidebyside"><div><h4>original</h4><div class="output original">{esc(original)}</div></div>'
        f"<div><h4>corrected</h4>{corrected_html}</div></div>"
        f'<details><summary>sentence by sentence</summary><table class="diff"><thead><tr><th>original</th>'
        f"<th>action</th><th>corrected</th></tr></thead><tbody>{diff_rows}</tbody></table></details>"
        + (
            f'<details><summary>references</summary><ol class="references">{references}</ol></details>'
            if references
            else ""
        )
        + (f'<details><summary>changes</summary><ul class="changes">{changes}</ul></details>' if changes else "")
        + "</div>"
    )


def _contradictions_html(rid: str, pairs: Sequence[dict[str, Any]]) -> str:
    """The contradicting atom pairs of a row (``--coherence``), each linked to its atoms."""
    rows = "".join(
        f'<tr class="contradiction"><td><a href="#{esc(rid)}-{esc(p.get("atom_a"))}">{esc(p.get("atom_a"))}</a> '
        f'{esc(p.get("text_a"))}</td><td><a href="#{esc(rid)}-{esc(p.get("atom_b"))}">{esc(p.get("atom_b"))}</a> '
        f'{esc(p.get("text_b"))}</td><td class="num">{esc(_fmt(p.get("p_contradiction"), 2))}</td></tr>'
        for p in pairs
    )
    return (
        f'<table class="contradictions"><thead><tr><th colspan="3">{len(pairs)} contradicting atom pair(s)</th></tr>'
        f"<tr><th>atom</th><th>contradicts atom</th><th>P(contradiction)</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _record_html(
    index: int, key: str, by_group: dict[str, dict[str, Any]], texts: ContextTexts, evidence_limit: int
) -> str:
    rid = f"r{index}"
    first = next(iter(by_group.values()))
    names = list(by_group)
    # one anchor per distinct context text, in the order of the input's contexts
    anchors: dict[str, str] = {}
    listed = []
    for context_id, info in texts.by_record.get(key, {}).items():
        text = str(info.get("text") or "")
        if text not in anchors:
            anchors[text] = f"{rid}-ctx{len(anchors)}"
            listed.append((anchors[text], context_id, info))
    scores = []
    for name, row in by_group.items():
        predicted, gold = _row_precision(row)
        f1_k, k = row.get("f1_k"), row.get("k")  # as written: the K this response was scored with
        at_k = f", F1@{esc(k)} {esc(_fmt(float(f1_k)))}" if f1_k is not None and k is not None else ""
        scores.append(f"{esc(name)} Pr {esc(_fmt(predicted))}{at_k}")
    _, gold = _row_precision(first)
    gold_text = f" · gold Pr {esc(_fmt(gold))}" if gold is not None else ""
    filters = "".join(
        f'<p class="note conformal">{esc(name)} conformal filter: kept {esc(row["conformal"].get("num_kept"))} of '
        f"{esc(row['conformal'].get('num_claims'))} claims"
        + (
            f" (posterior &gt; {esc(_fmt(row['conformal']['threshold'], 4))})"
            if row["conformal"].get("threshold") is not None
            else " (no threshold keeps any)"
        )
        + f". {esc(row['conformal'].get('statement'))}</p>"
        for name, row in by_group.items()
        if isinstance(row.get("conformal"), dict)
    )

    header = "".join(f"<th>{esc(n)}</th>" for n in names)
    correction = next((r["correction"] for r in by_group.values() if isinstance(r.get("correction"), dict)), None)
    listed_pairs: list[Any] = next(
        (r["contradicting_pairs"] for r in by_group.values() if isinstance(r.get("contradicting_pairs"), list)), []
    )
    pairs: list[dict[str, Any]] = [p for p in listed_pairs if isinstance(p, dict)]
    contradicted: dict[str, list[str]] = {}  # atom id → the atoms it contradicts
    for pair in pairs:
        a, b = str(pair.get("atom_a")), str(pair.get("atom_b"))
        contradicted.setdefault(a, []).append(b)
        contradicted.setdefault(b, []).append(a)
    rows_html = []
    atom_rows = {name: {a["id"]: a for a in row.get("atoms") or []} for name, row in by_group.items()}
    for atom in first.get("atoms") or []:
        label = atom.get("label")
        badge = f'<span class="badge {esc(label) if label in ("S", "NS") else "none"}">{esc(label or "?")}</span>'
        cells = []
        evidence: dict[str, Sequence[dict[str, Any]]] = {}
        for name in names:
            verdict = atom_rows[name].get(atom["id"])
            if verdict is None:
                cells.append('<td class="p">–</td>')
                continue
            p = float(verdict.get("probability", math.nan))
            prediction = verdict.get("prediction")
            mark = ""
            if label in ("S", "NS") and prediction in ("S", "NS"):
                mark = ' <span class="ok">✓</span>' if prediction == label else ' <span class="bad">✗</span>'
            filtered, title = "", ""
            if "kept" in verdict:  # --conformal: what the filter kept and dropped
                filtered = " kept" if verdict["kept"] else ' <span class="dropped">✂ dropped</span>'
                title = ", kept by the conformal filter" if verdict["kept"] else ", dropped by the conformal filter"
            cells.append(
                f'<td class="p{"" if verdict.get("kept", True) else " dropped"}" '
                f'style="background:{colour(p) if math.isfinite(p) else "#eee"}" '
                f'title="{esc(name)}: P = {esc(_fmt(p, 4))}, predicted {esc(prediction)}{esc(title)}">'
                f"{esc(_fmt(p, 2))} {esc(prediction or '')}{mark}{filtered}</td>"
            )
            evidence[name] = verdict.get("evidence") or []
        details = _evidence_html(key, evidence, texts, anchors, evidence_limit, names)
        others = contradicted.get(str(atom["id"]))
        mark = (
            f' <span class="contradiction-mark" title="contradicts {esc(", ".join(others))}">'
            f"⚡ contradicts {esc(', '.join(others))}</span>"
            if others
            else ""
        )
        rows_html.append(
            f'<tr class="atom{" contradicting" if others else ""}" id="{esc(rid)}-{esc(atom["id"])}"><td>{esc(atom["id"])}</td>'
            f'<td class="atomtext">{esc(atom.get("text"))}{mark}'
            f"<details><summary>evidence</summary>{details}</details></td>"
            f"<td>{badge}</td>{''.join(cells)}</tr>"
        )
    contexts_html = ""
    if listed:
        entries = "".join(
            f'<dt id="{esc(anchor)}">{esc(cid)}{(" — " + esc(info.get("title"))) if info.get("title") else ""}</dt>'
            f"<dd>{esc(info.get('text'))}</dd>"
            for anchor, cid, info in listed
        )
        contexts_html = (
            f'<details><summary>{len(listed)} distinct contexts</summary><dl class="ctx">{entries}</dl></details>'
        )
    return (
        f'<section class="record" id="{esc(rid)}">'
        f"<h3>{index + 1}. {esc(first.get('topic') or first.get('input') or key)}</h3>"
        f'<div class="meta">{" · ".join(scores)}{gold_text} · key {esc(key)}</div>{filters}'
        f"<details><summary>prompt and response</summary><p><b>Input:</b> {esc(first.get('input'))}</p>"
        f'<div class="output">{esc(first.get("output"))}</div></details>'
        f"{_correction_html(rid, correction) if correction is not None else ''}"
        f"{_contradictions_html(rid, pairs) if pairs else ''}"
        f"<table><thead><tr><th>atom</th><th>text</th><th>gold</th>{header}</tr></thead>"
        f"<tbody>{''.join(rows_html)}</tbody></table>{contexts_html}</section>"
    )


def _check_input_matches(input_file: Path, keys: Sequence[str], input_keys: set[str]) -> None:
    """``--input-file`` must be the input of these results: none of its records matching is an
    error (their context texts would silently be missing); some missing, a warning."""
    matched = sum(1 for key in keys if key in input_keys)
    if matched == 0:
        raise InputError(
            f"none of its records matches the {len(keys)} result(s) (another input, or records edited "
            "since the run); give --input-file the file the results came from",
            path=input_file,
        )
    if matched < len(keys):
        logger.warning(
            "--input-file %s: %d of %d result(s) have no record there (their context texts are not shown)",
            input_file,
            len(keys) - matched,
            len(keys),
        )


def build_report(
    results: Sequence[Path],
    input_file: Path | None = None,
    title: str = "FactReasoner report",
    max_records: int | None = None,
    evidence_limit: int = 8,
    failures: list[RecordError] | None = None,
) -> str:
    """The HTML text of the report (see the module docstring). With a ``failures`` list, a line
    of a results file or of ``input_file`` that cannot be read is appended there (``file:line:
    problem``) and the page is made of the others, saying how many were left out; without one,
    a bad results line raises :class:`~fact_reasoner.errors.InputError`."""
    named = read_rows(results, failures)
    groups = group_rows(named)
    texts = ContextTexts.from_input(input_file, failures) if input_file is not None else ContextTexts()
    input_keys = set(texts.by_record)
    keys: list[str] = []
    by_key: dict[str, dict[str, dict[str, Any]]] = {}
    for label, rows in groups.items():
        for row in rows:
            key = str(row.get("record_key"))
            if key not in by_key:
                by_key[key] = {}
                keys.append(key)
            by_key[key][label] = row
            if isinstance(row.get("contexts"), list):
                texts.add(key, row["contexts"])
    if input_file is not None:
        _check_input_matches(input_file, keys, input_keys)
    common, left_out = restrict_to_common(groups)
    lines = summary_table(common)
    has_gold = any(line.summary.num_gold_atoms for line in lines)
    overall = [line for line in lines if line.tier == "all"]
    tiers = [line for line in lines if line.tier != "all"]
    shown = keys if max_records is None else keys[:max_records]

    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<div class="meta">{len(keys)} responses · assessors: {esc(_assessors_with_judges(groups))} · files: '
        f"{esc(', '.join(str(p) for p in results))} · generated {esc(_dt.datetime.now().strftime('%Y-%m-%d %H:%M'))}</div>",
    ]
    if failures:
        parts.append(
            f'<p class="note">{len(failures)} line(s) of these files could not be read and are left out: '
            f"{esc('; '.join(str(f) for f in failures[:5]))}{' …' if len(failures) > 5 else ''}</p>"
        )
    parts += [
        "<h2>Summary</h2>",
    ]
    if has_gold:
        parts += [
            '<p class="note">claims: every atom judged; gold atoms: those with a gold S/NS label, over which '
            "F1 (S), acc, bal acc, Brier and ECE are computed; "
            "Pr: mean factual precision; F1 (S): atom-level F1 with S as the positive class; "
            "acc: atom accuracy; F1@K: mean of the responses' F1@K, each with the K it was scored with (column K); MAE: mean |Pr − gold Pr|; "
            "Brier: mean (P − y)²; ECE: expected calibration error over 10 equal-width bins.</p>",
            _summary_html(overall),
        ]
        if left_out:
            parts.append(
                f'<p class="note">{left_out} response(s) not finished by every assessor are left out '
                "of the tables and plots (they are listed below).</p>"
            )
        if tiers:
            parts += ["<h3>By rarity tier</h3>", _summary_html(tiers)]
        parts += [
            "<h3>Published numbers, for comparison</h3>",
            _published_html(),
            "<h2>Plots</h2>",
            _plots_html(common),
        ]
    else:
        parts.append('<p class="note">No gold labels in these results: only per-response scores are shown.</p>')
    parts += [
        "<h2>Responses</h2>",
        '<p class="note">Cells show P(atom true) and the prediction; colour <span class="scale"></span> '
        "from 0 (red) through 0.5 (yellow) to 1 (green); ✓/✗ against the gold label. Open “evidence” for the "
        "contexts that entail or contradict an atom (NLI relation and probability).</p>",
    ]
    if len(shown) < len(keys):
        parts.append(f'<p class="note">Showing the first {len(shown)} of {len(keys)} responses (--max-records).</p>')
    parts += [_record_html(i, key, by_key[key], texts, evidence_limit) for i, key in enumerate(shown)]
    parts.append("</body></html>")
    return "".join(parts)


def _assessors_with_judges(groups: dict[str, list[dict[str, Any]]]) -> str:
    """``FR2 (judge: cross-encoder), FR3 (judge: align)``: each run's label and its NLI judge."""
    parts = []
    for label, rows in groups.items():
        judge = judge_of(rows[0]) if rows else None
        parts.append(label if judge is None or "judge=" in label else f"{label} (judge: {judge})")
    return ", ".join(parts)
