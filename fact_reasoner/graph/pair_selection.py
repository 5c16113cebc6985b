"""Which NLI pairs to judge: every pair (``--nli-mode all``) or only those that can matter (``fast``).

FR2 judges n·m atom–context pairs and FR3 adds m(m−1) context–context pairs; with an LLM judge
that is what makes FR3 on a whole biography impractical. ``fast`` judges a subset. Everything
here is a pure function over the plan's atoms and contexts and a :class:`Similarities` (cosines
or lexical overlaps computed elsewhere), so the graph builder knows nothing about it.

What ``fast`` keeps, and why each rule is safe or where it is an approximation:

1. **Near-duplicate contexts are merged** before any pair is listed. Two contexts are
   near-duplicates when their *normalised word sequences* are identical
   (:func:`normalised_words`: Unicode NFKC, case folded, every run of characters that are not
   letters, digits or ``_`` treated as one separator). They differ only in case, punctuation,
   spacing or Unicode form, so an NLI judge has no reason to tell them apart; the first (plan
   order) is kept, the others are mapped onto it like exact duplicates
   (``GraphPlan.context_duplicates``) and listed in the output's ``merged_contexts``
   ``{kept id: [merged ids]}``. Contexts that differ by even one word (a date, a "not") are
   never merged.
2. **Atom–context pairs**: atom ``a`` is judged against context ``c`` when

   - ``own``: ``a`` retrieved ``c`` (``c`` is in ``a.contexts``, through the exact and near
     duplicate maps, an atom dropped as a duplicate lending its list to the atom kept);
   - ``unowned``: no atom lists ``c`` (e.g. contexts retrieved for the question, or a record
     whose atoms carry no context lists): such a context bears on every atom;
   - ``neighbour``: an atom within ``neighbour_window`` positions of ``a`` (plan order, i.e.
     the order of the response) retrieved ``c`` — neighbouring claims talk about the same
     thing, so their evidence is likely to bear on ``a``;
   - ``similar``: the similarity of ``a`` and ``c`` is at least the gate's threshold.

   Every other pair is skipped (``nli_pruned_similarity``). Skipping a pair is exactly the same
   as judging it neutral (a neutral relation is no factor), so the only risk is a skipped pair
   that the judge would have found non-neutral: a lost piece of evidence, never a new one.
3. **Context–context pairs (FR3)**: an unordered pair {ci, cj} is considered only when its
   similarity passes the same gate (else ``nli_pruned_context_similarity`` counts its two
   directions). It is judged first in one direction, with the *longer* context (in characters;
   plan order on ties) as premise, and the reverse direction is judged only where it can change
   the factor (:func:`reverse_needed`); ``nli_pruned_reverse`` counts the skipped ones.

**When can the reverse direction change the factor?** :func:`~fact_reasoner.graph.build.reconcile_context_pair`
keeps the direction with the higher probability, turns entailment both ways into equivalence
and drops a neutral winner. Given the forward judgement (label L, probability p):

- L = entailment: a reverse entailment turns the factor into an *equivalence* (a different
  table, ``[[p, 1−p], [1−p, p]]`` instead of ``[[p, p], [1−p, p]]``) whatever the
  probabilities: the reverse must be judged.
- the forward judgement failed (or the backend gave none): the reverse is the only evidence
  about the pair: it must be judged.
- L = contradiction: contradiction is symmetric (A contradicts B iff B contradicts A), so a
  consistent judge says contradiction again and the reverse could only replace p by its own
  probability; with the paper's tables the contradiction table ``[[p, p], [p, 1−p]]`` is
  symmetric in (X, Y), so the direction itself does not matter. Skipped. (An approximation: a
  judge that gives the reverse a higher probability changes the factor's strength; with the
  ``priors`` tables, the default, the rows for a false premise carry the target's prior, which
  differs between the two contexts only through their relevance.)
- L = neutral: the reverse matters only if it is an entailment or contradiction with a higher
  probability. A contradiction is excluded by symmetry as above. An entailment shorter ⊨ longer
  while longer ⊭ shorter needs the shorter text to carry everything the longer one says, which
  it rarely can: that is why the longer context is the first premise. Skipped (the
  approximation fast makes; ``experiments/results/nli_mode_fast.md`` measures what it costs).

``all`` returns the plan unchanged: the same pairs in the same order as before this module.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from ..schema import Atom, Context, Relation, RelationType
from .factor_graph import GraphPlan

__all__ = [
    "GATE_DEFAULT_THRESHOLDS",
    "NliMode",
    "PairSelection",
    "Similarities",
    "embedding_similarities",
    "lexical_similarities",
    "merge_near_duplicates",
    "normalised_words",
    "reverse_needed",
    "select_pairs",
]

NliMode = Literal["all", "fast"]
Gate = Literal["embedding", "lexical"]

#: the gate's threshold when ``--nli-gate-threshold`` is not given, per gate (measured on the
#: held-out biographies: experiments/results/nli_mode_fast.md)
GATE_DEFAULT_THRESHOLDS: dict[str, float] = {"embedding": 0.2, "lexical": 0.1}


@dataclass(frozen=True)
class Similarities:
    """Similarities of the plan's atoms and contexts, in plan order.

    ``atom_context[i, j]``: atom i and context j; ``context_context[i, j]``: contexts i and j
    (symmetric). Cosines of unit embeddings lie in [−1, 1]; lexical overlaps in [0, 1].
    """

    atom_context: np.ndarray
    context_context: np.ndarray


@dataclass(frozen=True)
class PairSelection:
    """The plan to judge first, the reverse context pairs to judge only where needed, and counts.

    ``deferred_reverse`` holds ``(forward pair, reverse pair)``: the reverse is judged when
    :func:`reverse_needed` says the forward judgement leaves the factor open. ``counts`` are the
    output's ``counters`` (``nli_pruned_*`` and what was kept, by reason); ``merged_contexts`` is
    ``{kept context id: [near-duplicate ids merged into it]}``.
    """

    plan: GraphPlan
    deferred_reverse: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    merged_contexts: dict[str, list[str]] = field(default_factory=dict)


def normalised_words(text: str) -> str:
    """The near-duplicate key of a text: NFKC, case folded, words (``\\w+`` runs) joined by one space.

    >>> normalised_words("Marie  Curie, born 1867.") == normalised_words("marie curie born 1867")
    True
    >>> normalised_words("born 1867") == normalised_words("born 1868")
    False
    """
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def merge_near_duplicates(contexts: Sequence[Context]) -> tuple[list[Context], dict[str, str]]:
    """Keep the first context of each :func:`normalised_words` key; return the kept ones and
    ``{merged id: kept id}``."""
    first: dict[str, str] = {}
    kept: list[Context] = []
    merged: dict[str, str] = {}
    for context in contexts:
        key = normalised_words(context.text)
        if key in first:
            merged[context.id] = first[key]
        else:
            first[key] = context.id
            kept.append(context)
    return kept, merged


def all_pairs_count(n_atoms: int, n_contexts: int, version: int) -> int:
    """What ``all`` judges after exact deduplication: n·m (FR2), n·m + m(m−1) (FR3)."""
    return n_atoms * n_contexts + (n_contexts * (n_contexts - 1) if version == 3 else 0)


def select_pairs(
    plan: GraphPlan,
    atoms: Sequence[Atom],
    similarities: Similarities | None,
    *,
    mode: NliMode,
    threshold: float,
    neighbour_window: int = 1,
) -> PairSelection:
    """The pairs ``mode`` judges (see the module's docstring for the rules).

    ``plan`` is :func:`~fact_reasoner.graph.build.plan_graph`'s plan; ``atoms`` the record's atoms
    before deduplication (their ``contexts`` lists say who retrieved what); ``similarities``
    are over ``plan.atoms`` × ``plan.contexts`` (before near-duplicate merging). ``all`` and FR1
    (which already judges each atom against its own contexts only) return the plan unchanged.
    """
    if mode == "all" or plan.version == 1:
        return PairSelection(plan)
    if similarities is None:
        raise ValueError("--nli-mode fast needs the similarities of the plan's atoms and contexts")
    n, m = len(plan.atoms), len(plan.contexts)
    if similarities.atom_context.shape != (n, m) or similarities.context_context.shape != (m, m):
        raise ValueError(
            f"similarities have shapes {similarities.atom_context.shape} and {similarities.context_context.shape}, "
            f"expected ({n}, {m}) and ({m}, {m})"
        )
    context_index = {c.id: j for j, c in enumerate(plan.contexts)}
    kept_contexts, merged = merge_near_duplicates(plan.contexts)
    # exact duplicates of a merged context now point at the context kept in its place
    duplicates = {d: merged.get(k, k) for d, k in plan.context_duplicates.items()} | merged
    owners = _owners(plan, atoms, duplicates, kept_contexts)

    counts: dict[str, int] = {
        "nli_pairs_all": all_pairs_count(n, m, plan.version),
        "nli_merged_contexts": len(merged),
        "nli_pruned_duplicate": all_pairs_count(n, m, plan.version)
        - all_pairs_count(n, len(kept_contexts), plan.version),
    }
    for kept_reason in ("own", "unowned", "neighbour", "similar"):
        counts[f"nli_kept_{kept_reason}"] = 0
    counts["nli_pruned_similarity"] = 0
    pairs: list[tuple[str, str]] = []
    for i, atom in enumerate(plan.atoms):
        for context in kept_contexts:
            j = context_index[context.id]
            reason = _atom_context_reason(
                i, owners[context.id], similarities.atom_context[i, j], threshold, neighbour_window
            )
            if reason is None:
                counts["nli_pruned_similarity"] += 1
            else:
                counts[f"nli_kept_{reason}"] += 1
                pairs.append((context.id, atom.id))

    deferred: list[tuple[tuple[str, str], tuple[str, str]]] = []
    if plan.version == 3:
        counts["nli_pruned_context_similarity"] = 0
        for a, ca in enumerate(kept_contexts):
            for cb in kept_contexts[a + 1 :]:
                if similarities.context_context[context_index[ca.id], context_index[cb.id]] < threshold:
                    counts["nli_pruned_context_similarity"] += 2
                    continue
                premise, hypothesis = (cb, ca) if len(cb.text) > len(ca.text) else (ca, cb)
                pairs.append((premise.id, hypothesis.id))
                deferred.append(((premise.id, hypothesis.id), (hypothesis.id, premise.id)))

    selected = replace(plan, contexts=tuple(kept_contexts), pairs=tuple(pairs), context_duplicates=duplicates)
    by_kept: dict[str, list[str]] = {}
    for dropped, kept in merged.items():
        by_kept.setdefault(kept, []).append(dropped)
    return PairSelection(selected, tuple(deferred), counts, by_kept)


def _owners(
    plan: GraphPlan, atoms: Sequence[Atom], duplicates: Mapping[str, str], kept_contexts: Sequence[Context]
) -> dict[str, set[int]]:
    """``{kept context id: plan indices of the atoms that retrieved it}``; a dropped duplicate
    atom's list counts for the atom kept in its place."""
    atom_position = {a.id: i for i, a in enumerate(plan.atoms)}
    owners: dict[str, set[int]] = {c.id: set() for c in kept_contexts}
    for atom in atoms:
        position = atom_position.get(plan.atom_duplicates.get(atom.id, atom.id))
        if position is None or atom.contexts is None:
            continue
        for cid in atom.contexts:
            cid = duplicates.get(cid, cid)
            if cid not in owners:
                raise ValueError(f"atom {atom.id!r} lists unknown context {cid!r}")
            owners[cid].add(position)
    return owners


def _atom_context_reason(
    atom: int, owners: set[int], similarity: float, threshold: float, window: int
) -> Literal["own", "unowned", "neighbour", "similar"] | None:
    """Why atom ``atom`` is judged against a context that the atoms ``owners`` retrieved (None: it is not)."""
    if atom in owners:
        return "own"
    if not owners:
        return "unowned"
    if any(abs(atom - owner) <= window for owner in owners):
        return "neighbour"
    if similarity >= threshold:
        return "similar"
    return None


def reverse_needed(forward: Relation | None) -> bool:
    """Whether the reverse of a context pair must be judged, given the forward judgement
    (None: the backend gave none). True for entailment (an equivalence is possible) and for a
    failed or missing judgement; False for neutral and contradiction (the module's docstring
    gives the reasoning)."""
    if forward is None or forward.failed:
        return True
    return forward.relation == RelationType.ENTAILMENT


def reverse_pairs_needed(
    relations: Iterable[Relation], deferred: Sequence[tuple[tuple[str, str], tuple[str, str]]]
) -> list[tuple[str, str]]:
    """The reverse pairs of ``deferred`` to judge, given the relations judged so far (first one per pair)."""
    judged: dict[tuple[str, str], Relation] = {}
    for relation in relations:
        judged.setdefault((relation.source, relation.target), relation)
    return [reverse for forward, reverse in deferred if reverse_needed(judged.get(forward))]


# -- similarities ------------------------------------------------------------------------------


def embedding_similarities(vectors_atoms: np.ndarray, vectors_contexts: np.ndarray) -> Similarities:
    """Cosines from unit embeddings (rows): ``A·Cᵀ`` and ``C·Cᵀ``."""
    a = np.asarray(vectors_atoms, dtype=float).reshape(len(vectors_atoms), -1)
    c = np.asarray(vectors_contexts, dtype=float).reshape(len(vectors_contexts), -1)
    if a.shape[0] and c.shape[0] and a.shape[1] != c.shape[1]:
        raise ValueError("atom and context embeddings have different dimensions")
    return Similarities(
        a @ c.T if a.size and c.size else np.zeros((len(a), len(c))), c @ c.T if c.size else np.zeros((len(c), len(c)))
    )


def lexical_similarities(atom_texts: Sequence[str], context_texts: Sequence[str]) -> Similarities:
    """Jaccard overlaps |W(x) ∩ W(y)| / |W(x) ∪ W(y)| of the sets of normalised words
    (:func:`normalised_words`); two empty texts have overlap 0."""
    atom_words = [set(normalised_words(t).split()) for t in atom_texts]
    context_words = [set(normalised_words(t).split()) for t in context_texts]

    def jaccard(x: set[str], y: set[str]) -> float:
        union = len(x | y)
        return len(x & y) / union if union else 0.0

    return Similarities(
        np.array([[jaccard(a, c) for c in context_words] for a in atom_words], dtype=float).reshape(
            len(atom_words), len(context_words)
        ),
        np.array([[jaccard(a, c) for c in context_words] for a in context_words], dtype=float).reshape(
            len(context_words), len(context_words)
        ),
    )
