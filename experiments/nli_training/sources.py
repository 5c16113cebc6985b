"""One loader per training set in ``../shared/data/nli_train`` (and the older ``../shared/data/nli``).

Every loader returns :class:`Example` rows. A label is what the set's annotation can honestly
claim about the pair:

- ``entailment``, ``neutral``, ``contradiction`` — the three-way label;
- ``not_entailment`` — the pair is *not* entailed, but the set cannot tell neutral from
  contradiction (RTE-style 2-way sets, FEVER "not entailed" that mixes REFUTES and NEI, WiCE
  "partially/not supported", FActScore NS atoms). Training scores such a row with
  ``-log(p_neutral + p_contradiction)``, so the model is never told that "not entailed"
  means "neutral".

``split`` is ``train`` or the name of a held-out set that is reported on and never trained on
(``mnli_mismatched``, ``snli_test``, ``fever_dev``, ``wice_dev``); the FActScore held-out
atoms are built by ``data.factscore_heldout`` from the held-out topics. ``group`` keeps related
rows (the same claim, the same premise) on one side of any split. ``synthetic`` marks rows
whose label comes from a construction rule rather than an annotator.

Why the mappings (per set, in the loaders' docstrings) — the short version: a label is kept
three-way only where annotators chose among the three; "refutes" is contradiction only when
the evidence is the gold evidence for the claim.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import itertools
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from experiments.nli_training.data import best_window, content_words, split_sentences

THREE_WAY = ("entailment", "neutral", "contradiction")
TARGETS = THREE_WAY + ("not_entailment",)

csv.field_size_limit(1 << 26)


@dataclass
class Example:
    premise: str
    hypothesis: str
    label: str  # one of TARGETS
    source: str  # the set (and sub-part) it came from, e.g. "fever_rte_dev"
    group: str = ""  # rows of one group stay on one side of every split
    split: str = "train"
    synthetic: bool = False

    def __post_init__(self) -> None:
        if self.label not in TARGETS:
            raise ValueError(f"{self.source}: unknown label {self.label!r}")

    def as_dict(self) -> dict:
        return asdict(self)


# --------------------------------------------------------------------------- text helpers

_FEVER_TOKENS = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LSB-": "[",
    "-RSB-": "]",
    "-LCB-": "{",
    "-RCB-": "}",
    "-COLON-": ":",
    "``": '"',
    "''": '"',
}
_SPACE_BEFORE = re.compile(r"\s+([.,;:!?%)\]}'])")
_SPACE_AFTER = re.compile(r"([(\[{$])\s+")
_HTML = re.compile(r"<[^>]+>")
_MPE_ID = re.compile(r"\d+jpg\d")
_CITATION = re.compile(r"\s*\[<\|(?:multi_)?cit\|>[^\]]*\]|\s*<\|(?:multi_)?cit\|>")


def detokenize(text: str) -> str:
    """FEVER / PTB-style tokens back to plain text: ``-LRB-`` → ``(``, no space before commas."""
    out = re.sub(r"-(?:LRB|RRB|LSB|RSB|LCB|RCB|COLON)-", lambda m: f" {_FEVER_TOKENS[m.group(0)]} ", text)
    out = " ".join(_FEVER_TOKENS.get(w, w) for w in out.split())
    out = _SPACE_BEFORE.sub(r"\1", out)
    out = _SPACE_AFTER.sub(r"\1", out)
    out = re.sub(r" n't\b", "n't", out)
    out = re.sub(r" '(s|re|ve|ll|d|m)\b", r"'\1", out)
    return out.strip()


def clean(text: str) -> str:
    return " ".join(str(text).split())


def window(text_or_sentences: str | list[str], hypothesis: str, max_words: int) -> str:
    """The consecutive sentences (≤ max_words) that share most content words with the hypothesis."""
    sentences = split_sentences(text_or_sentences) if isinstance(text_or_sentences, str) else list(text_or_sentences)
    text, _ = best_window([s for s in sentences if s.strip()], hypothesis, max_words)
    return text


def overlap(premise: str, hypothesis: str) -> float:
    hyp = content_words(hypothesis)
    return len(hyp & content_words(premise)) / max(len(hyp), 1)


def stable_fraction(key: str, salt: str) -> float:
    """A number in [0, 1) fixed by the key (and the salt): splits that do not depend on row order."""
    digest = hashlib.sha256(f"{salt}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _csv_rows(path: Path, delimiter: str = ",") -> Iterator[dict]:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        yield from csv.DictReader(
            handle, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
        )


def _jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _three_way(label: str) -> str | None:
    label = label.strip().lower()
    return label if label in THREE_WAY else None


# --------------------------------------------------------------------------- MNLI-style 3-way


def lingnli(root: Path) -> list[Example]:
    """LingNLI (all protocols, train and val files): crowd-written MNLI-style pairs, 3-way as given."""
    out = []
    for path in sorted((root / "lingnli").glob("*/*.jsonl")):
        for r in _jsonl(path):
            label = _three_way(r.get("label", ""))
            if label:
                out.append(
                    Example(
                        clean(r["premise"]),
                        clean(r["hypothesis"]),
                        label,
                        "lingnli",
                        group=f"lingnli:{r.get('promptID', r['premise'])}",
                    )
                )
    return out


def snli(root: Path) -> list[Example]:
    """SNLI dev trains; SNLI test is held out whole (``snli_test``). Text is e-SNLI's tokenised form."""
    folder = root / "esnli_snli_devtest"
    out = []
    for part in ("dev", "test"):
        premises = (folder / f"s1.{part}").read_text(encoding="utf-8").splitlines()
        hypotheses = (folder / f"s2.{part}").read_text(encoding="utf-8").splitlines()
        labels = (folder / f"labels.{part}").read_text(encoding="utf-8").splitlines()
        for p, h, raw in zip(premises, hypotheses, labels):
            label = _three_way(raw)
            if label:
                out.append(
                    Example(
                        detokenize(p),
                        detokenize(h),
                        label,
                        f"snli_{part}",
                        group=f"snli:{detokenize(p)}",
                        split="snli_test" if part == "test" else "train",
                    )
                )
    return out


def mpe(root: Path) -> list[Example]:
    """MPE: four Flickr captions as the premise (the image ids glued into the text are removed)."""
    out = []
    for part in ("train", "dev"):
        for r in _csv_rows(root / "mpe" / f"{part}.csv"):
            label = _three_way(r["label"])
            premise = clean(_MPE_ID.sub(" ", r["premise"]))
            if label and premise:
                # the captions are separate sentences: end each one
                premise = re.sub(r"(?<=[a-z])\s+(?=[A-Z])", ". ", premise)
                out.append(Example(premise + ".", clean(r["hypothesis"]), label, "mpe", group=f"mpe:{premise}"))
    return out


# --------------------------------------------------------------------------- 2-way NLI


def _binary(label: str) -> str | None:
    label = label.strip().lower()
    if label in ("entailment", "0"):
        return "entailment"
    if label in ("not_entailment", "1", "neutral"):
        return "not_entailment"
    return None


# --------------------------------------------------------------------------- CSV / TSV sets


@dataclass(frozen=True)
class CsvPart:
    """One file of a CSV set, or a range of its rows: its name in the set's folder (``.tsv``:
    tab-separated), the ``source`` its rows get, whether their labels come from a rule
    (``synthetic``), the ``split`` they belong to (``train`` or a held-out set), and ``rows``
    (the file's data rows to read, counted before any row is skipped; None: all)."""

    name: str
    source: str
    synthetic: bool = False
    split: str = "train"
    rows: slice | None = None


def _clean_html(text: str) -> str:
    return detokenize(_HTML.sub("", text))


@dataclass(frozen=True)
class CsvSet:
    """A set whose CSV / TSV rows are one pair each: which files, how the label reads
    (:func:`_three_way` or :func:`_binary`), which ``columns`` hold premise, hypothesis and
    label, and how the text is cleaned. Rows of one premise (``group_by="hypothesis"``: one
    hypothesis) share the group ``<group_prefix>:<text>``."""

    folder: str
    parts: tuple[CsvPart, ...]
    read_label: Callable[[str], str | None]
    group_prefix: str
    columns: tuple[str, str, str] = ("premise", "hypothesis", "label")
    group_by: Literal["premise", "hypothesis"] = "premise"
    text: Callable[[str], str] = clean

    def load(self, root: Path) -> list[Example]:
        premise_column, hypothesis_column, label_column = self.columns
        out = []
        for part in self.parts:
            delimiter = "\t" if part.name.endswith(".tsv") else ","
            rows: Iterable[dict] = _csv_rows(root / self.folder / part.name, delimiter=delimiter)
            if part.rows is not None:
                rows = itertools.islice(rows, part.rows.start, part.rows.stop)
            for r in rows:
                label = self.read_label(r[label_column])
                if not label:
                    continue
                premise, hypothesis = self.text(r[premise_column]), self.text(r[hypothesis_column])
                grouped = premise if self.group_by == "premise" else hypothesis
                group = f"{self.group_prefix}:{grouped}"
                out.append(
                    Example(
                        premise, hypothesis, label, part.source, group=group, split=part.split, synthetic=part.synthetic
                    )
                )
        return out


def _parts(source: str, *names: str) -> tuple[CsvPart, ...]:
    """Files whose rows all get the same ``source``."""
    return tuple(CsvPart(name, source) for name in names)


MNLI_MATCHED_ROWS = 9815  # dev.csv = dev_matched (9,815 rows) then dev_mismatched (9,832)

#: The sets that :class:`CsvSet` reads (why each label maps as it does: the comments).
CSV_SETS = {
    # MNLI dev: matched rows are training data; every mismatched row is held out (``mnli_mismatched``).
    "mnli_dev": CsvSet(
        "mnli_dev",
        (
            CsvPart("dev.csv", "mnli_matched", rows=slice(0, MNLI_MATCHED_ROWS)),
            CsvPart("dev.csv", "mnli_mismatched", split="mnli_mismatched", rows=slice(MNLI_MATCHED_ROWS, None)),
        ),
        _three_way,
        "mnli",
    ),
    # Counterfactually-augmented SNLI (train, dev, test files): human-revised minimal pairs, 3-way.
    "cad_snli": CsvSet(
        "cad_snli",
        _parts("cad_snli", "train.tsv", "dev.tsv", "test.tsv"),
        _three_way,
        "cad",
        columns=("sentence1", "sentence2", "gold_label"),
    ),
    # ConjNLI: the human-verified dev set, and the adversarial training pairs that the authors
    # made by rule (conjunct deletion/replacement) — those are marked synthetic.
    "conjnli": CsvSet(
        "conjnli",
        (CsvPart("conj_dev.tsv", "conjnli_dev"), CsvPart("adversarial_train_15k.tsv", "conjnli_adversarial", True)),
        _three_way,
        "conj",
        columns=("Premise", "Hypothesis", "Label"),
    ),
    # JOCI, as packaged 3-way from a 5-point likelihood (0–1 contradiction, 5 entailment).
    # Likely/unlikely is not entailment/contradiction, so the default mix gives it no weight.
    "joci": CsvSet("joci", _parts("joci", "train.csv", "dev.csv"), _three_way, "joci"),
    "commitment_bank": CsvSet("commitment_bank", _parts("commitment_bank", "train.csv", "dev.csv"), _three_way, "cb"),
    "fracas": CsvSet("fracas", _parts("fracas", "train.csv"), _three_way, "fracas"),
    # Add-One RTE: adjective–noun composition, 2-way (the ``<b><u>`` marks are removed).
    "add_one_rte": CsvSet(
        "add_one_rte", _parts("add_one_rte", "train.csv", "dev.csv"), _binary, "a1", text=_clean_html
    ),
    # SciTail dev: 2-way (its 'neutral' was renamed not_entailment by the packager); grouped by
    # hypothesis, as in the set each hypothesis comes with several premises.
    "scitail": CsvSet("scitail_dev", _parts("scitail", "dev.csv"), _binary, "scitail", group_by="hypothesis"),
    # GLUE RTE train + dev: 0 = entailment, 1 = not entailment.
    "rte": CsvSet(
        "rte", _parts("rte", "train.tsv", "dev.tsv"), _binary, "rte", columns=("sentence1", "sentence2", "label")
    ),
    # MED (monotonicity): entailment / non-entailment; its 'neutral' is only 'not entailed'.
    "med": CsvSet("med", _parts("med", "MED.tsv"), _binary, "med", columns=("sentence1", "sentence2", "gold_label")),
}


# --------------------------------------------------------------------------- claims vs Wikipedia


def fever_rte_dev(root: Path, held_fraction: float = 0.2) -> list[Example]:
    """FEVER shared-task dev, gold evidence: SUPPORTS → entailment, REFUTES → contradiction.

    (NEI was dropped by the packager, so "not_entailment" here is REFUTES against gold evidence.)
    A fixed ``held_fraction`` of the claims (by a hash of the claim) is held out as ``fever_dev``.
    """
    folder = root / "fever_rte_dev"
    premises = (folder / "dev.raw.input0").read_text(encoding="utf-8").splitlines()
    claims = (folder / "dev.raw.input1").read_text(encoding="utf-8").splitlines()
    labels = (folder / "dev.label").read_text(encoding="utf-8").splitlines()
    out = []
    for p, h, raw in zip(premises, claims, labels):
        label = {"entailment": "entailment", "not_entailment": "contradiction"}.get(raw.strip())
        if not label:
            continue
        claim = clean(h)
        held = stable_fraction(claim.lower(), "fever_dev") < held_fraction
        out.append(
            Example(
                detokenize(p),
                claim,
                label,
                "fever_rte_dev",
                group=f"fever:{claim.lower()}",
                split="fever_dev" if held else "train",
            )
        )
    return out


def docnli_binary_fever(root: Path) -> list[Example]:
    """FEVER binary NLI (DocNLI's dev/test): entailment vs not (REFUTES *and* NEI → not_entailment).

    Premises are title-prefixed Wikipedia sentences ("Title . sentence"), kept as "Title. sentence".
    """
    out = []
    for part in ("dev", "test"):
        with open(root / "docnli_binary_fever" / f"{part}.txt", encoding="utf-8") as handle:
            for line in handle:
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 3:
                    continue
                label = _binary(fields[0])
                if label:
                    claim = clean(fields[2])
                    out.append(
                        Example(detokenize(fields[1]), claim, label, "docnli_fever", group=f"fever:{claim.lower()}")
                    )
    return out


def fever_nli_ggkorn(root: Path, neutral_per_file: int = 2500, seed: int = 13) -> list[Example]:
    """FEVER train-derived claims with gold evidence: SUPPORTS → e, REFUTES → c.

    Its NOT ENOUGH INFO claims come without evidence; each of ``neutral_per_file`` of them is
    paired with the gold evidence of another claim about the same subject (the claim sharing
    most content words with it) — a *synthetic* neutral: FEVER's annotators found no Wikipedia
    evidence for an NEI claim, so a same-subject sentence does not settle it.
    """
    rng = random.Random(seed)
    out = []
    for name in ("eval_data_vanilla.csv", "test_data_vanilla.csv"):
        with_evidence: list[tuple[str, str]] = []
        nei: list[str] = []
        for r in _csv_rows(root / "fever_nli_ggkorn" / name):
            claim = clean(r["claim"])
            try:
                sentences = ast.literal_eval(r["evidence"]) if r["evidence"].strip() else []
            except (ValueError, SyntaxError):
                continue
            evidence = detokenize(" ".join(sentences))
            if r["label"] == "0" or not evidence:
                nei.append(claim)
                continue
            label = {"1": "entailment", "2": "contradiction"}.get(r["label"])
            if label:
                out.append(Example(evidence, claim, label, "fever_ggkorn", group=f"fever:{claim.lower()}"))
                with_evidence.append((claim, evidence))
        # index evidence by content word, to find a same-subject passage for each NEI claim
        by_word: dict[str, list[int]] = {}
        for i, (claim, _) in enumerate(with_evidence):
            for word in content_words(claim):
                by_word.setdefault(word, []).append(i)
        rng.shuffle(nei)
        made = 0
        for claim in nei:
            if made >= neutral_per_file:
                break
            words = content_words(claim)
            scores: dict[int, int] = {}
            for word in words:
                if len(by_word.get(word, ())) > 200:  # too common to mark a subject
                    continue
                for i in by_word.get(word, ()):
                    scores[i] = scores.get(i, 0) + 1
            if not scores:
                continue
            best = max(scores, key=lambda i: (scores[i], -i))
            if scores[best] < 2 or with_evidence[best][0].lower() == claim.lower():
                continue
            out.append(
                Example(
                    with_evidence[best][1],
                    claim,
                    "neutral",
                    "fever_ggkorn_nei",
                    group=f"fever:{claim.lower()}",
                    synthetic=True,
                )
            )
            made += 1
    return out


def climate_fever(root: Path) -> list[Example]:
    """Climate-FEVER claim–evidence pairs, 3-way as annotated per evidence sentence."""
    mapping = {"SUPPORTS": "entailment", "REFUTES": "contradiction", "NOT_ENOUGH_INFO": "neutral"}
    out = []
    for r in _jsonl(root / "climate_fever" / "climate-fever.jsonl"):
        claim = clean(r["claim"])
        for e in r["evidences"]:
            label = mapping.get(e["evidence_label"])
            if label:
                premise = f"{e['article']}: {clean(e['evidence'])}" if e.get("article") else clean(e["evidence"])
                out.append(Example(premise, claim, label, "climate_fever", group=f"climate:{r['claim_id']}"))
    return out


def fool_me_twice(root: Path, seed: int = 13) -> list[Example]:
    """Fool Me Twice: adversarial claims vs their gold Wikipedia evidence (SUPPORTS → e, REFUTES → c).

    Plus one synthetic ``not_entailment`` row per claim: the claim against a sentence the
    game's retriever found on the same page that is not gold evidence (it rarely proves the
    claim; it could refute it, hence not "neutral").
    """
    rng = random.Random(seed)
    out = []
    for part in ("dev", "test"):
        for r in _jsonl(root / "fool_me_twice" / f"{part}.jsonl"):
            claim = clean(r["text"])
            page = r.get("wikipedia_page") or ""
            gold = [clean(e["text"]) for e in r.get("gold_evidence") or [] if e.get("text")]
            label = {"SUPPORTS": "entailment", "REFUTES": "contradiction"}.get(r["label"])
            if not gold or not label:
                continue
            prefix = f"{page}: " if page else ""
            out.append(Example(prefix + " ".join(gold), claim, label, "fool_me_twice", group=f"fm2:{r['id']}"))
            others = [
                clean(e["text"])
                for e in r.get("retrieved_evidence") or []
                if e.get("text") and clean(e["text"]) not in gold and len(e["text"].split()) >= 6
            ]
            if others:
                out.append(
                    Example(
                        prefix + rng.choice(others),
                        claim,
                        "not_entailment",
                        "fool_me_twice_retrieved",
                        group=f"fm2:{r['id']}",
                        synthetic=True,
                    )
                )
    return out


def sufficient_facts(root: Path) -> list[Example]:
    """SufficientFacts (FEVER, HoVer, VitaminC): evidence with a part removed by annotators.

    ``NOT ENOUGH`` after removal → neutral (real, annotated neutrals on Wikipedia evidence);
    ``ENOUGH`` → the original label (SUPPORTS → e, REFUTES → c). The original, complete
    evidence (``text_orig``) is added once per claim with the original label.
    """
    before = {"SUPPORTS": "entailment", "SUPPORTED": "entailment", "REFUTES": "contradiction"}
    out = []
    seen_orig: set[str] = set()
    for name in ("fever", "hover", "vitaminc"):
        for r in _jsonl(root / "sufficient_facts" / f"{name}_sufficient_facts.jsonl"):
            claim = clean(r["claim"])
            original = before.get(r["label_before"])
            if not original:
                continue
            premise = " ".join(f"{t}: {clean(s)}" if t else clean(s) for t, s in r["evidence"])
            label = "neutral" if r["label_after"].startswith("NOT ENOUGH") else original
            group = f"fever:{claim.lower()}"
            out.append(Example(detokenize(premise), claim, label, f"sufficient_facts_{name}", group=group))
            if claim not in seen_orig and r.get("text_orig"):
                seen_orig.add(claim)
                text = re.sub(r"\[\[([^\]]+)\]\]", r"\1:", _HTML.sub("", r["text_orig"]))
                out.append(Example(detokenize(text), claim, original, f"sufficient_facts_{name}", group=group))
    return out


def wice(root: Path, max_words: int, held_fraction: float = 0.5) -> list[Example]:
    """WiCE dev (Wikipedia claims vs the web pages they cite).

    Half of the claims (fixed by a hash) are held out as ``wice_dev`` with the *whole* cited
    page as premise (the engine judges it in windows): supported vs not. The other half trains:
    supported → entailment against its annotated supporting sentences; partially supported →
    not_entailment against the sentences that support the other part (a hard negative); not
    supported → not_entailment against the best window ("not backed"; WiCE seldom means
    "contradicted").
    """
    out = []
    for r in _jsonl(root / "wice" / "dev.jsonl"):
        claim = clean(r["claim"])
        group = f"wice:{claim.lower()}"
        label = "entailment" if r["label"] == "supported" else "not_entailment"
        evidence = [clean(s) for s in r["evidence"] if not s.startswith("(meta data)") and s.strip()]
        if stable_fraction(claim.lower(), "wice_dev") < held_fraction:
            out.append(Example(" ".join(evidence), claim, label, "wice_dev", group=group, split="wice_dev"))
            continue
        if r["label"] in ("supported", "partially_supported") and r["supporting_sentences"]:
            indices = sorted(set(r["supporting_sentences"][0]))
            premise = " ".join(clean(r["evidence"][i]) for i in indices if i < len(r["evidence"]))
            if len(premise.split()) > max_words:
                if label == "entailment":
                    continue  # cutting it may drop what supports the claim
                premise = " ".join(premise.split()[:max_words])
        else:
            premise = window(evidence, claim, max_words)
        if premise:
            out.append(Example(premise, claim, label, "wice", group=group))
    return out


# --------------------------------------------------------------------------- science / health


def healthver(root: Path, max_words: int) -> list[Example]:
    mapping = {"supports": "entailment", "refutes": "contradiction", "neutral": "neutral"}
    out = []
    for part in ("dev", "test"):
        for r in _csv_rows(root / "healthver" / f"healthver_{part}.csv"):
            label = mapping.get(r["label"].strip().lower())
            if not label:
                continue
            premise, claim = clean(r["evidence"]), clean(r["claim"])
            if len(premise.split()) > max_words and label != "neutral":
                continue  # the part that decides may fall outside a window
            out.append(
                Example(
                    window(premise, claim, max_words), claim, label, "healthver", group=f"healthver:{claim.lower()}"
                )
            )
    return out


def covidfact(root: Path, max_words: int) -> list[Example]:
    """COVID-Fact: SUPPORTED → e, REFUTED → c (the refuted claims are automatic counter-claims)."""
    out = []
    for r in _jsonl(root / "covidfact" / "COVIDFACT_dataset.jsonl"):
        label = {"SUPPORTED": "entailment", "REFUTED": "contradiction"}.get(r["label"])
        sentences = [clean(s) for s in r.get("evidence") or [] if s.strip()]
        if not label or not sentences:
            continue
        claim = clean(r["claim"])
        premise = " ".join(sentences)
        if len(premise.split()) > max_words:
            premise = window(sentences, claim, max_words)
        out.append(Example(premise, claim, label, "covidfact", group=f"covidfact:{claim.lower()}"))
    return out


def citation_integrity(root: Path, max_words: int) -> list[Example]:
    """Citation-Integrity: citing sentence vs the cited abstract's rationale sentences.

    SUPPORT → e, REFUTE → c; a claim with no evidence in its cited abstract → neutral, premise
    = the abstract window sharing most words with it.
    """
    folder = root / "citation_integrity"
    corpus = {str(r["doc_id"]): r["abstract"] for r in _jsonl(folder / "corpus.jsonl")}
    out = []
    for part in ("train", "dev", "test"):
        for r in _jsonl(folder / f"claims_{part}.jsonl"):
            claim = clean(_CITATION.sub("", r["claim"]))
            if len(claim.split()) < 4:
                continue
            group = f"citint:{part}:{r['id']}"
            if not r["evidence"]:
                for doc in r.get("cited_doc_ids") or []:
                    abstract = corpus.get(str(doc))
                    if abstract:
                        out.append(
                            Example(
                                window([clean(s) for s in abstract], claim, max_words),
                                claim,
                                "neutral",
                                "citation_integrity",
                                group=group,
                            )
                        )
                continue
            for doc, rationales in r["evidence"].items():
                abstract = corpus.get(str(doc))
                if not abstract:
                    continue
                for rationale in rationales:
                    label = {"SUPPORT": "entailment", "REFUTE": "contradiction"}.get(rationale["label"])
                    sentences = [clean(abstract[i]) for i in rationale["sentences"] if i < len(abstract)]
                    if label and sentences:
                        premise = " ".join(sentences)
                        if len(premise.split()) <= max_words:
                            out.append(Example(premise, claim, label, "citation_integrity", group=group))
    return out


# --------------------------------------------------------------------------- summaries vs documents


def summedits(root: Path, max_words: int) -> list[Example]:
    """SummEdits: a summary vs its document. Consistent → entailment, but only where the whole
    document fits in ``max_words`` (a window may drop what the summary relies on); inconsistent
    → not_entailment against the best window (an edit that breaks the whole document breaks every
    part of it)."""
    out = []
    for path in sorted((root / "summedits").glob("summedits_*.json")):
        for r in json.loads(path.read_text(encoding="utf-8")):
            doc, summary = clean(r["doc"]), clean(r["summary"])
            label = "entailment" if str(r["label"]) == "1" else "not_entailment"
            if label == "entailment" and len(doc.split()) > max_words:
                continue
            premise = doc if len(doc.split()) <= max_words else window(doc, summary, max_words)
            out.append(Example(premise, summary, label, "summedits", group=f"summedits:{r['id'].split('_')[0]}"))
    return out


def qags(root: Path, max_words: int, min_overlap: float = 0.7) -> list[Example]:
    """QAGS: summary sentences judged supported or not by the article (majority of 3 votes).

    Not supported → not_entailment against the best window; supported → entailment against
    the best window only when that window holds ≥ ``min_overlap`` of the sentence's words.
    """
    out = []
    for name in ("mturk_cnndm.jsonl", "mturk_xsum.jsonl"):
        for i, r in enumerate(_jsonl(root / "qags" / name)):
            article = clean(r["article"])
            for s in r["summary_sentences"]:
                votes = [x["response"] for x in s["responses"]]
                yes = sum(v == "yes" for v in votes)
                sentence = clean(s["sentence"])
                premise = window(article, sentence, max_words)
                if yes * 2 > len(votes):
                    if overlap(premise, sentence) < min_overlap:
                        continue
                    label = "entailment"
                else:
                    label = "not_entailment"
                out.append(Example(premise, sentence, label, "qags", group=f"qags:{name}:{i}"))
    return out


# --------------------------------------------------------------------------- ../shared/data/nli


def vitaminc_sample(nli_dir: Path) -> list[Example]:
    mapping = {"supports": "entailment", "refutes": "contradiction", "not enough info": "neutral"}
    return [
        Example(
            clean(r["evidence"]),
            clean(r["claim"]),
            mapping[r["label"]],
            "vitaminc",
            group=f"vitaminc:{r['id'].split('_')[0]}",
        )
        for r in _jsonl(nli_dir / "vitaminc_sample.jsonl")
    ]


def factreasoner_pairs(nli_dir: Path) -> list[Example]:
    return [
        Example(clean(r["premise"]), clean(r["hypothesis"]), r["gold"], "fr_pairs", group=f"fr:{clean(r['premise'])}")
        for r in _jsonl(nli_dir / "factreasoner_nli_pairs.jsonl")
    ]


def factcheck_stance(nli_dir: Path, max_words: int) -> list[Example]:
    """Factcheck-Bench: completely-support → e, refute → c, irrelevant → neutral, partially-support
    → not_entailment (part of the claim is not backed)."""
    mapping = {
        "completely-support": "entailment",
        "partially-support": "not_entailment",
        "refute": "contradiction",
        "irrelevant": "neutral",
    }
    out = []
    for r in _jsonl(nli_dir / "factcheck_stance.jsonl"):
        claim = clean(r["claim"])
        premise = window(r["evidence"], claim, max_words)
        if premise:
            out.append(Example(premise, claim, mapping[r["stance"]], "factcheck", group=f"factcheck:{claim.lower()}"))
    return out


# --------------------------------------------------------------------------- document-level grounding


def factcg(root: Path) -> list[Example]:
    """FactCG's CG2C grounding pairs (``nli_train/factcg``): a claim against a whole document.

    ``orig_label`` 1 → entailment, 0 → not_entailment (the negative is the claim with one needed
    relation missing from the document: not backed, seldom contradicted). The premise is the
    whole document, not a window: the label is about the document, and a window of a supported
    claim's document may leave out a hop it needs. CG2C_musique rows with an empty document
    (all its positives) are skipped; its 1,042 rows with a document are hard negatives. Not in
    :data:`LOADERS`: the CPU mix predates these rows; the GPU bundle (``bundle.py``) takes them
    as their own stream, at a window long enough for the documents.
    """
    out = []
    for name, source in (
        ("CG2C_doc.json", "factcg_doc"),
        ("CG2C_musique_minhop3_rbt_mnli_failed.json", "factcg_musique"),
    ):
        for r in _jsonl(root / "factcg" / name):
            document = clean(r["text_a"])
            claims = [clean(c) for c in r["text_b"] if clean(c)]
            if not document or not claims:
                continue
            label = "entailment" if int(r["orig_label"]) == 1 else "not_entailment"
            for claim in claims:
                out.append(Example(document, claim, label, source, group=f"factcg:{claim.lower()}"))
    return out


# --------------------------------------------------------------------------- registry

#: name → (loader, needs max_words). The mix (``mix.py``) decides how many rows of each it takes.
LOADERS = {
    "lingnli": (lingnli, False),
    "mnli_dev": (CSV_SETS["mnli_dev"].load, False),
    "snli": (snli, False),
    "cad_snli": (CSV_SETS["cad_snli"].load, False),
    "conjnli": (CSV_SETS["conjnli"].load, False),
    "mpe": (mpe, False),
    "joci": (CSV_SETS["joci"].load, False),
    "commitment_bank": (CSV_SETS["commitment_bank"].load, False),
    "fracas": (CSV_SETS["fracas"].load, False),
    "add_one_rte": (CSV_SETS["add_one_rte"].load, False),
    "scitail": (CSV_SETS["scitail"].load, False),
    "rte": (CSV_SETS["rte"].load, False),
    "med": (CSV_SETS["med"].load, False),
    "fever_rte_dev": (fever_rte_dev, False),
    "docnli_binary_fever": (docnli_binary_fever, False),
    "fever_nli_ggkorn": (fever_nli_ggkorn, False),
    "climate_fever": (climate_fever, False),
    "fool_me_twice": (fool_me_twice, False),
    "sufficient_facts": (sufficient_facts, False),
    "wice": (wice, True),
    "healthver": (healthver, True),
    "covidfact": (covidfact, True),
    "citation_integrity": (citation_integrity, True),
    "summedits": (summedits, True),
    "qags": (qags, True),
}

NLI_DIR_LOADERS = {
    "vitaminc_sample": (vitaminc_sample, False),
    "factreasoner_pairs": (factreasoner_pairs, False),
    "factcheck_stance": (factcheck_stance, True),
}


def load(name: str, data_dir: Path, max_words: int) -> list[Example]:
    """Every row of one set, by its name in :data:`LOADERS` or :data:`NLI_DIR_LOADERS`."""
    if name in LOADERS:
        loader, windowed = LOADERS[name]
        root = data_dir / "nli_train"
    elif name in NLI_DIR_LOADERS:
        loader, windowed = NLI_DIR_LOADERS[name]
        root = data_dir / "nli"
    else:
        raise KeyError(f"no loader named {name!r}")
    return loader(root, max_words) if windowed else loader(root)


def iter_all(data_dir: Path, max_words: int, names: Iterable[str] | None = None) -> Iterator[tuple[str, list[Example]]]:
    for name in names or list(LOADERS) + list(NLI_DIR_LOADERS):
        yield name, load(name, data_dir, max_words)


# --------------------------------------------------------------------------- FActScore atoms


def factscore_train(
    data_dir: Path,
    train_topics: set[str],
    max_words: int,
    min_overlap: float = 0.5,
    negatives_per_atom: int = 2,
) -> list[Example]:
    """Human FActScore atoms of the *training* topics (all three generators) against Wikipedia.

    - S → entailment against the window (≤ ``max_words``) of the atom's passages that shares
      most content words with it; ChatGPT atoms have their own BM25 passages, the other
      generators' atoms use the topic's passages. Kept when that window holds ≥ ``min_overlap``
      of the atom's content words (else the supporting text is probably not in the passages).
    - NS → not_entailment against the best window of up to ``negatives_per_atom`` passages:
      an NS atom is not supported by the article, so no part of it entails the atom. The same
      overlap filter applies, so the overlap alone does not give the label away.
    """
    from experiments.nli_training.data import factscore_atoms, factscore_chatgpt_passages

    own = factscore_chatgpt_passages(data_dir)
    topic_passages = json.loads((data_dir / "factscore_bios_dev" / "topic_passages_dev.json").read_text())
    out = []
    for atom in factscore_atoms(data_dir):
        if atom.topic not in train_topics:
            continue
        passages = own.get((atom.topic, atom.atom)) if atom.model == "ChatGPT" else None
        passages = passages or topic_passages.get(atom.topic, [])
        windows = []
        for p in passages:
            text, score = best_window(split_sentences(p["text"]), atom.atom, max_words)
            if text and score >= min_overlap:
                windows.append((score, text))
        windows.sort(key=lambda w: -w[0])
        group = f"factscore:{atom.topic}"
        source = f"factscore_{atom.model}"
        if atom.label == "S" and windows:
            out.append(Example(windows[0][1], atom.atom, "entailment", source, group=group))
        elif atom.label == "NS":
            for _, text in windows[:negatives_per_atom]:
                out.append(Example(text, atom.atom, "not_entailment", source, group=group))
    return out
