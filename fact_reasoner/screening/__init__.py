"""The relation screen: the stage between the NLI judge and the factor graph.

atomize → revise → retrieve → NLI → **screen** → graph → infer → score. The judge proposes a
relation for every (passage, claim) pair; the screen decides, relation by relation, whether the
graph uses it as the judge said, sets it aside, or — an entailment whose deciding sentence
states the opposite — turns it into a contradiction, and says why
(:func:`screen_relations`, :mod:`fact_reasoner.screening.stage`). Its rules:

- :mod:`~fact_reasoner.screening.checks` — the sentence screen (``--entailments sentence``,
  ``--contradictions sentence``): the passage sentence that decides the relation, read with an
  English parser (:mod:`~fact_reasoner.screening.parser`, :mod:`~fact_reasoner.screening.reading`)
  and checked for the claim's subject, numbers, names, polarity, direction and hedges;
- :mod:`~fact_reasoner.screening.words` — the word rules (``--entailments same-subject``,
  ``--contradictions same-attribute``), no parser.
"""

from .stage import RelationNote, Screening, screen_relations, uses_parser

__all__ = ["RelationNote", "Screening", "screen_relations", "uses_parser"]
