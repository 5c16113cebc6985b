"""Targeted training pairs for the behavioural capabilities (issue #34), from the suite's
``train`` part only — never its held-out part.

    .venv-dev/bin/python -m experiments.nli_training.targeted --out runs/nli/targeted.json \
        [--people 600] [--samples 3] [--exclude-topics-from runs/nli/indomain.json]

What it makes (each row an ``Example``: premise, hypothesis, label, ``source`` =
``targeted_<capability>``, ``synthetic`` true):

1. **Templates over invented people**: the ``train`` templates of
   ``experiments/behaviour_suite.json`` plus :data:`EXTRA_TEMPLATES` (more wordings of the
   same capabilities, written here), filled with ``--people`` invented people (names, places,
   years, occupations and works drawn from the lists below) and the countries of
   :data:`COUNTRIES`, ``--samples`` times with different substitutes.
2. **The FActScore dev passages of the training topics** (``behaviour.passage_items`` of the
   ``train`` part, with several seeds), and from the same passages: role swaps of sentences that
   name two people, other-sentence neutrals (a claim about the person from a distant sentence of
   the same passages against a window that does not state it), someone else's lead against this
   person's description, and negated premises. ``--exclude-topics-from`` leaves out topics
   (the in-domain validation topics of ``indomain.py``, so that their bags stay unseen).

Labels come from the capability: entailment, neutral or contradiction; a role swap is
``not_entailment`` (neutral or contradiction, trained with the set loss).

``validation``: the suite's ``train`` part over its own hand-written people (template items
only) — never trained on (the invented names share no first or last name with them), used to
choose checkpoints. The held-out part is used for nothing here: :func:`check_not_heldout`
refuses any row that names a held-out person or repeats a held-out pair or template premise, so
the generator cannot emit one (``tests/experiments/test_targeted.py``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from experiments import behaviour
from experiments.behaviour import CAPABILITIES, NOT_ENTAILED, Item
from experiments.nli_training import forms
from experiments.nli_training.data import content_words
from experiments.nli_training.mix import normalise
from experiments.nli_training.sources import Example

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_FACTSCORE = ROOT.parent / "shared" / "data" / "factscore_bios_dev"

FIRST_F = (
    "Agnes Beatrix Clara Dalia Edith Fatima Gloria Hanna Irene Julia Kaori Lena Mariam Nadia Olga Priya Rosa Sofia "
    "Tamar Ursula Vera Wilma Xenia Yara Zofia Aiko Bronwen Carmen Dagny Esther Flora Gudrun Helena Isabel Jana "
    "Kirsten Lidia Mei Noor Paula Renata Saskia Thandiwe Valentina Wren Yasmin Zainab Anouk Birgit Chiara"
).split()
FIRST_M = (
    "Anders Bruno Casimir Diego Emil Farid Gustav Henrik Ivan Jonas Kofi Lars Mateo Nikolai Omar Pedro Quentin "
    "Rashid Stefan Tariq Ulrich Viktor Wilhelm Yusuf Zoltan Arjun Bernard Cyril Dario Elias Felix Georg Hugo Idris "
    "Jakob Kenji Leon Marco Nils Oren Piotr Samuel Tobias Umar Vasco Yannick Zeno Aurelio Benedikt Cosmin"
).split()
SURNAMES = (
    "Abernathy Bergström Castellano Dufresne Eriksen Falkenrath Grünwald Halvorsen Iwasaki Jankowski Kowalczyk "
    "Lindahl Moravec Nakashima Oyelaran Petrovic Quaranta Rasmussen Szabo Takeda Uribe Varga Wexler Yilmaz "
    "Zielinski Balogun Carvalho Delacroix Esposito Fontaine Gallagher Horvath Ibarra Jovanovic Kastner Lemaire "
    "Novak Pereira Rinaldi Sandoval Thorsen Ulloa Vasquez Whitlock Yamada Zanetti Amadi Brennan Cortez Dimitrov "
    "Ekström Ferreira Haddad Jensen Kovacs Lindgren Marchetti Nordin Olawale Pacheco Rousseau Santoro Tanaka Ueda "
    "Weber Youssef Zapata Andersen Bianchi Dubois Engel Fischer Gruber Hoffmann Laurent Moreau Nilsen Ortega Rossi"
).split()
PLACES = (
    "Leeds|Porto|Lyon|Kraków|Dresden|Adelaide|Hamburg|Sapporo|Durban|Seville|Glasgow|Minneapolis|Toulouse|"
    "Gothenburg|Pune|Antwerp|Bremen|Brno|Bordeaux|Cardiff|Curitiba|Dakar|Edinburgh|Genoa|Granada|Hanover|"
    "Heidelberg|Izmir|Jaipur|Kaohsiung|Kumasi|Lille|Lisbon|Mombasa|Nagoya|Naples|Oaxaca|Oulu|Parma|Quito|Recife|"
    "Riga|Salzburg|Tampere|Trieste|Turin|Utrecht|Vilnius|Winnipeg|Yokohama|Zaragoza|Galway|Halifax|Ibadan|"
    "Leipzig|Nuremberg|Osaka|Cluj|Debrecen|Malaga|Chennai|Da Nang|Fez|Arequipa|Rosario|Tartu|Aarhus"
).split("|")
OCCUPATIONS = (
    "painter|sculptor|novelist|poet|journalist|chemist|physicist|botanist|geologist|astronomer|mathematician|"
    "engineer|architect|surgeon|nurse|economist|historian|lawyer|judge|diplomat|composer|pianist|violinist|"
    "singer|actor|film director|photographer|cartographer|teacher|librarian|explorer|pilot|footballer|cyclist|"
    "swimmer|inventor|biologist|zoologist|linguist|philosopher|sociologist|typographer|economist|chess player"
).split("|")
ADJECTIVES = "Quiet Iron Glass Last Silver Hidden Northern Broken Golden Distant Crimson Winter Salt Paper".split()
NOUNS = "River Orchard Harbour Ferry Garden Lantern Mountain Tower Letter Season Island Choir Compass".split()
#: (verb, base, noun, passive, object pattern) of an invented person's best-known work
WORKS = (
    ("founded", "found", "founder", "was founded", "the {surname} Institute"),
    ("founded", "found", "founder", "was founded", "the {place} Chamber Orchestra"),
    ("designed", "design", "designer", "was designed", "the {place} Bridge"),
    ("designed", "design", "designer", "was designed", "the {place} Central Station"),
    ("discovered", "discover", "discoverer", "was discovered", "the comet {surname}-{number}"),
    ("discovered", "discover", "discoverer", "was discovered", "the {place} hoard"),
    ("wrote", "write", "author", "was written", "the novel {title}"),
    ("wrote", "write", "author", "was written", "{title}"),
    ("composed", "compose", "composer", "was composed", "the opera {title}"),
    ("invented", "invent", "inventor", "was invented", "the {surname} valve"),
    ("directed", "direct", "director", "was directed", "the film {title}"),
    ("painted", "paint", "painter", "was painted", "{title}"),
    ("built", "build", "builder", "was built", "the {place} lighthouse"),
    ("created", "create", "creator", "was created", "the {title} festival"),
    ("developed", "develop", "developer", "was developed", "the {surname} test"),
)
#: countries, capitals and another large city (none of the held-out part's countries)
COUNTRIES = [
    {"country": c, "capital": k, "other_city": o}
    for c, k, o in (
        ("Japan", "Tokyo", "Osaka"),
        ("France", "Paris", "Marseille"),
        ("Kenya", "Nairobi", "Mombasa"),
        ("Egypt", "Cairo", "Alexandria"),
        ("Germany", "Berlin", "Hamburg"),
        ("India", "New Delhi", "Mumbai"),
        ("Argentina", "Buenos Aires", "Rosario"),
        ("Vietnam", "Hanoi", "Da Nang"),
        ("Peru", "Lima", "Cusco"),
        ("Norway", "Oslo", "Trondheim"),
        ("Chile", "Santiago", "Concepción"),
        ("Ghana", "Accra", "Kumasi"),
        ("Italy", "Rome", "Milan"),
        ("Spain", "Madrid", "Barcelona"),
        ("Portugal", "Lisbon", "Porto"),
        ("Poland", "Warsaw", "Gdańsk"),
        ("Sweden", "Stockholm", "Malmö"),
        ("Finland", "Helsinki", "Tampere"),
        ("Greece", "Athens", "Thessaloniki"),
        ("Hungary", "Budapest", "Debrecen"),
        ("Romania", "Bucharest", "Cluj-Napoca"),
        ("Ireland", "Dublin", "Galway"),
        ("Mexico", "Mexico City", "Guadalajara"),
        ("Colombia", "Bogotá", "Medellín"),
        ("Ecuador", "Quito", "Guayaquil"),
        ("Bolivia", "Sucre", "Santa Cruz"),
        ("South Korea", "Seoul", "Busan"),
        ("Indonesia", "Jakarta", "Surabaya"),
        ("Thailand", "Bangkok", "Chiang Mai"),
        ("Philippines", "Manila", "Davao"),
        ("Senegal", "Dakar", "Thiès"),
        ("Ethiopia", "Addis Ababa", "Dire Dawa"),
        ("Austria", "Vienna", "Graz"),
        ("Netherlands", "Amsterdam", "Rotterdam"),
        ("Belgium", "Brussels", "Antwerp"),
        ("Czech Republic", "Prague", "Brno"),
        ("Denmark", "Copenhagen", "Aarhus"),
        ("Iceland", "Reykjavík", "Akureyri"),
        ("Cuba", "Havana", "Santiago de Cuba"),
        ("Uruguay", "Montevideo", "Salto"),
    )
]

#: more wordings of the capabilities, for training only (the suite's train templates are used too)
EXTRA_TEMPLATES: list[dict[str, Any]] = [
    {
        "capability": "word_for_word",
        "variant": "verbatim sentence",
        "premise": "{name} was {a_nationality} {occupation}. {Pron} was born in {born_place}. {Pron} died in {died_year}.",
        "hypothesis": "{name} died in {died_year}.",
    },
    {
        "capability": "word_for_word",
        "variant": "verbatim sentence",
        "premise": "Career. In {work_year}, {name} {work_verb} {work_object}. The work made {poss} name.",
        "hypothesis": "In {work_year}, {name} {work_verb} {work_object}.",
    },
    {
        "capability": "paraphrase",
        "variant": "nominalisation",
        "premise": "{name} is the {work_noun} of {work_object}.",
        "hypothesis": "{name} {work_verb} {work_object}.",
    },
    {
        "capability": "paraphrase",
        "variant": "active to passive",
        "premise": "{Work_object} {work_passive} by {name}.",
        "hypothesis": "{name} {work_verb} {work_object}.",
    },
    {
        "capability": "paraphrase",
        "variant": "synonym",
        "premise": "{name} (born {born_year}) is {a_nationality} {occupation}.",
        "hypothesis": "{name} was born in {born_year}.",
    },
    {
        "capability": "paraphrase",
        "variant": "synonym",
        "premise": "{name} was a {nationality}-born {occupation}.",
        "hypothesis": "{name} was {a_occupation}.",
    },
    {
        "capability": "paraphrase",
        "variant": "inversion",
        "kind": "country",
        "premise": "{capital}, the capital of {country}, lies on a river.",
        "hypothesis": "The capital of {country} is {capital}.",
    },
    {
        "capability": "part",
        "variant": "dates in brackets",
        "premise": "{name} ({born_year} – {died_year}) was {a_occupation} from {born_place}.",
        "hypothesis": "{name} died in {died_year}.",
    },
    {
        "capability": "part",
        "variant": "dates in brackets",
        "premise": "{name} ({born_year}–{died_year}), {a_nationality} {occupation}, {work_verb} {work_object}.",
        "hypothesis": "{name} was born in {born_year}.",
    },
    {
        "capability": "part",
        "variant": "lived from",
        "premise": "{name} lived from {born_year} to {died_year} and worked as {a_occupation}.",
        "hypothesis": "{name} died in {died_year}.",
    },
    {
        "capability": "part",
        "variant": "conjunction",
        "premise": "{name} {work_verb} {work_object} and later moved to {other_place}.",
        "hypothesis": "{name} moved to {other_place}.",
    },
    {
        "capability": "role_swap",
        "variant": "agent and patient swapped",
        "kind": "duo",
        "premise": "{a} sued {b} over a contract in {year}.",
        "hypothesis": "{b} sued {a} over a contract.",
    },
    {
        "capability": "role_swap",
        "variant": "agent and patient swapped",
        "kind": "duo",
        "premise": "{a} coached {b} for the {year} season in {place}.",
        "hypothesis": "{b} coached {a} for the {year} season in {place}.",
    },
    {
        "capability": "role_swap",
        "variant": "agent and patient swapped",
        "kind": "duo",
        "premise": "{a} sold the {place} studio to {b} in {year}.",
        "hypothesis": "{b} sold the {place} studio to {a}.",
    },
    {
        "capability": "role_swap",
        "variant": "someone else did it",
        "premise": "{name} is credited as the {work_noun} of {work_object}.",
        "hypothesis": "{other_name} {work_verb} {work_object}.",
    },
    {
        "capability": "role_swap",
        "variant": "relative did it",
        "kind": "duo",
        "premise": "{a}'s son, {b}, moved to {place} in {year}.",
        "hypothesis": "{a} moved to {place} in {year}.",
    },
    {
        "capability": "role_swap",
        "variant": "someone else did it",
        "premise": "{name} and {other_name} met in {other_place}, where {name} {work_verb} {work_object}.",
        "hypothesis": "{other_name} {work_verb} {work_object}.",
    },
    {
        "capability": "substitution",
        "variant": "year",
        "premise": "{name} ({born_year}–{died_year}) was {a_occupation}.",
        "hypothesis": "{name} was born in {other_year}.",
    },
    {
        "capability": "substitution",
        "variant": "number",
        "premise": "{name} wrote {count} books about {born_place}.",
        "hypothesis": "{name} wrote {other_count} books about {born_place}.",
    },
    {
        "capability": "substitution",
        "variant": "place",
        "premise": "{name} died at {poss} home in {died_place}.",
        "hypothesis": "{name} died in {other_place}.",
    },
    {
        "capability": "substitution",
        "variant": "name",
        "premise": "{name} married {relative} in {born_place}.",
        "hypothesis": "{name}'s spouse was {other_relative}.",
    },
    {
        "capability": "negation",
        "variant": "negated premise",
        "premise": "{name} was not {a_occupation}.",
        "hypothesis": "{name} was {a_occupation}.",
    },
    {
        "capability": "negation",
        "variant": "negated premise",
        "premise": "{name} never {work_verb} {work_object}.",
        "hypothesis": "{name} {work_verb} {work_object}.",
    },
    {
        "capability": "negation",
        "variant": "negated claim",
        "premise": "{name} died in {died_place}.",
        "hypothesis": "{name} did not die in {died_place}.",
    },
    {
        "capability": "other_attribute",
        "variant": "death place vs birth place",
        "premise": "{name} died in {died_place}.",
        "hypothesis": "{name} was born in {born_place}.",
    },
    {
        "capability": "other_attribute",
        "variant": "work vs nationality",
        "premise": "{name} {work_verb} {work_object} early in {poss} career.",
        "hypothesis": "{name} was {a_nationality} {occupation}.",
    },
    {
        "capability": "other_attribute",
        "variant": "death vs birth",
        "premise": "{name} died in {died_place} at the end of {died_year}.",
        "hypothesis": "{name} was born in {born_year}.",
    },
    {
        "capability": "other_attribute",
        "variant": "marriage vs work",
        "premise": "{name} married {relative} in {other_place}.",
        "hypothesis": "{name} {work_verb} {work_object}.",
    },
    {
        "capability": "other_attribute",
        "variant": "dates vs place",
        "premise": "{name} ({born_year}–{died_year}) was {a_occupation}.",
        "hypothesis": "{name} was born in {born_place}.",
    },
    {
        "capability": "someone_else",
        "variant": "same value, relative",
        "premise": "{name}'s sister was born in {born_place} in {born_year}.",
        "hypothesis": "{name} was born in {born_place}.",
    },
    {
        "capability": "someone_else",
        "variant": "same value, other person",
        "premise": "Like {name}, {other_name} {work_verb} {work_object}.",
        "hypothesis": "{name} was born in {born_year}.",
    },
    {
        "capability": "someone_else",
        "variant": "same value, other person",
        "premise": "{other_name} {work_verb} {work_object} in {work_year}.",
        "hypothesis": "{name} {work_verb} {work_object}.",
    },
    {
        "capability": "hedged",
        "variant": "reportedly",
        "premise": "{name} reportedly {work_verb} {work_object}, but this has never been confirmed.",
        "hypothesis": "{name} {work_verb} {work_object}.",
    },
    {
        "capability": "hedged",
        "variant": "perhaps",
        "premise": "{name} was perhaps born in {born_year}.",
        "hypothesis": "{name} was born in {born_year}.",
    },
    {
        "capability": "hedged",
        "variant": "legend",
        "premise": "Legend has it that {name} was born in {born_place}.",
        "hypothesis": "{name} was born in {born_place}.",
    },
]
#: claims that praise or generalise (what FActScore's unsupported atoms often are): against a
#: premise that does not state them they are neutral, however well the subject matches
GENERIC_CLAIMS = (
    "{name} was widely admired.",
    "{name} supported several charities.",
    "{name} was commercially successful.",
    "{name} received many awards.",
    "{name} was known for {poss} generosity.",
    "{name} had a lasting influence on {poss} field.",
    "{Pron} is a respected philanthropist.",
    "{Pron} perfected {poss} style.",
    "{Pron} was popular with critics.",
    "{Pron} started {poss} career at a young age.",
    "{Pron} has a large following.",
    "{name} is considered one of the best in {poss} profession.",
)
_GENERIC_PREMISES = (
    "{name} was born in {born_place} in {born_year}. {Pron} worked as {a_occupation}.",
    "{name} {work_verb} {work_object} in {work_year}.",
    "{name} ({born_year}–{died_year}) was {a_nationality} {occupation}.",
    "{name} moved to {other_place} and married {relative}.",
)
EXTRA_TEMPLATES += [
    {
        "capability": "other_attribute",
        "variant": "generic claim not stated",
        "premise": _GENERIC_PREMISES[index % len(_GENERIC_PREMISES)],
        "hypothesis": claim,
    }
    for index, claim in enumerate(GENERIC_CLAIMS)
]
#: words that would make a generic claim stated after all (a passage window with one of them
#: makes no generic-claim row)
_GENERIC_CUES = re.compile(
    r"award|prize|honou?r|charit|philanthrop|success|influen|admir|respect|popular|critic|acclaim|generos|"
    r"follow|best|young|early|style|career",
    re.I,
)

for _index, _template in enumerate(EXTRA_TEMPLATES):
    _template["id"] = f"extra-{_index}"


def label_of(capability: str) -> str:
    """The training label of a capability's items (a role swap: not entailment, by set loss)."""
    expected = CAPABILITIES[capability].expected
    return "not_entailment" if expected == NOT_ENTAILED else expected[0]


def invented_people(n: int, rng: random.Random, excluded_words: set[str]) -> list[dict[str, Any]]:
    """``n`` invented people with facts: no first or last name in ``excluded_words``."""
    first_f = [w for w in FIRST_F if w not in excluded_words]
    first_m = [w for w in FIRST_M if w not in excluded_words]
    surnames = [w for w in SURNAMES if w not in excluded_words]
    nationalities = [group[0] for group in behaviour.NATIONALITY_GROUPS]
    people, names = [], set()
    while len(people) < n:
        female = rng.random() < 0.5
        surname = rng.choice(surnames)
        name = f"{rng.choice(first_f if female else first_m)} {surname}"
        if name in names:
            continue
        names.add(name)
        born = rng.randint(1600, 1995)
        occupation, occupation2 = rng.sample(OCCUPATIONS, 2)
        person: dict[str, Any] = {
            "name": name,
            "short": surname,
            "gender": "f" if female else "m",
            "born_year": born,
            "born_place": rng.choice(PLACES),
            "nationality": rng.choice(nationalities),
            "occupation": occupation,
            "occupation2": occupation2,
        }
        if born < 1990 and rng.random() < 0.7:
            person["died_year"] = min(born + rng.randint(30, 95), 2023)
            person["died_place"] = rng.choice(PLACES)
        if rng.random() < 0.85:
            verb, base, noun, passive, pattern = rng.choice(WORKS)
            title = f"The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
            work = pattern.format(surname=surname, place=rng.choice(PLACES), title=title, number=rng.randint(2, 99))
            person["work"] = {
                "verb": verb,
                "base": base,
                "object": work,
                "noun": noun,
                "passive": passive,
                "year": min(born + rng.randint(20, 60), 2023),
            }
        people.append(person)
    return people


# --------------------------------------------------------------------------- passages


_PERSON_NAME = re.compile(r"\b([A-Z][a-zà-ÿ]+(?: [A-Z][a-zà-ÿ]+){1,2})\b")
_NOT_A_PERSON = set(
    "The University Club Cup League Award Awards Film Festival Academy National United States New Prize "
    "Championship Open Games Olympic Party Council House Street Records School College Company Group Theatre "
    "Television Church Show Series Kingdom City North South East West American British Football Team World "
    "Grand Prix Tour Museum Hall Orchestra Band Studios Pictures Bank Court Parliament Ministry Department "
    "January February March April May June July August September October November December Royal Society "
    "Institute Hospital Island Islands River Lake Mountain Park Station Road Avenue Saint San Los Las De Le La "
    "Nations Union Empire Republic Army Navy Force Air Times Post Journal Magazine Channel Radio Broadcasting".split()
)


def _other_person(sentence: str, own: set[str]) -> str | None:
    """A two- or three-word capitalised name in ``sentence`` that looks like a person's (no word
    of :data:`_NOT_A_PERSON`, none of ``own``), not at the sentence's start."""
    for match in _PERSON_NAME.finditer(sentence):
        words = match.group(1).split()
        if match.start() == 0 or any(w in _NOT_A_PERSON or w in own for w in words):
            continue
        return match.group(1)
    return None


def passage_rows(
    factscore_dir: Path, seeds: Sequence[int], excluded_topics: set[str], suite: dict[str, Any]
) -> list[Item]:
    """The ``train`` part's passage items with several seeds, and the passage generators that
    only training uses (see the module docstring); topics in ``excluded_topics`` left out."""
    items: list[Item] = []
    for seed in seeds:
        items += [
            i
            for i in behaviour.passage_items("train", factscore_dir, suite=suite, seed=seed)
            if i.source.removeprefix("passage:") not in excluded_topics
        ]
    held = set(suite["factscore_heldout_topics"])
    passages = json.loads((factscore_dir / "topic_passages_dev.json").read_text(encoding="utf-8"))
    topics = sorted(t for t in passages if t not in held and t not in excluded_topics)
    people = behaviour.factscore_people(factscore_dir, topics)
    rng = random.Random(f"targeted-passages:{seeds[0] if seeds else 0}")

    def add(capability: str, variant: str, premise: str, hypothesis: str, topic: str) -> None:
        items.append(Item(capability, f"passage: {variant}", premise, hypothesis, "train", f"passage:{topic}"))

    for index, person in enumerate(people):
        others = people[index + 1 :] + people[:index]
        own = set(person.name.split())
        sentences = person.sentences
        about = [
            i for i, s in enumerate(sentences) if behaviour.subject_prefix(person, s) and behaviour.is_clean_sentence(s)
        ]
        for i in about:
            sentence = sentences[i]
            prefix = behaviour.subject_prefix(person, sentence) or person.short
            window = " ".join(sentences[max(0, i - 1) : i + 2])
            other = _other_person(sentence[len(prefix) :], own)
            if other:
                swapped = other + sentence[len(prefix) :].replace(other, prefix, 1)
                add("role_swap", "two people swapped", window, swapped, person.topic)
            match = re.match(rf"{re.escape(prefix)} (is|was) (?!not\b|never\b|also\b)", sentence)
            if match:
                negated = sentence[: match.end(1)] + " not" + sentence[match.end(1) :]
                add("negation", "negated premise", window.replace(sentence, negated), sentence, person.topic)
        # a claim from a distant sentence of the same passages, against a window that shares little
        for i in rng.sample(about, min(4, len(about))):
            far = [j for j in about if abs(j - i) >= 4]
            if not far:
                continue
            j = rng.choice(far)
            window = " ".join(sentences[max(0, i - 1) : i + 2])
            claim_words = content_words(sentences[j]) - {w.lower() for w in own}
            shared = len(claim_words & content_words(window)) / max(len(claim_words), 1)
            if shared < 0.34:
                add("other_attribute", "another sentence of the passages", window, sentences[j], person.topic)
        # a generic claim (praise, a generalisation) against a window that states nothing like it
        for i in rng.sample(about, min(2, len(about))):
            window = " ".join(sentences[max(0, i - 1) : i + 2])
            if not _GENERIC_CUES.search(window):
                female = bool(re.search(r"\b(she|her)\b", window, re.I))
                fields = {
                    "name": person.name,
                    "Pron": "She" if female else "He",
                    "poss": "her" if female else "his",
                }
                claim = rng.choice(GENERIC_CLAIMS).format(**fields)
                add("other_attribute", "generic claim not stated", window, claim, person.topic)
        # someone else's lead against this person's own description
        if person.predicate and person.nationality:
            claim = (
                f"{person.name} "
                + person.predicate.replace("{article_nationality}", behaviour.with_article(person.nationality))
                + "."
            )
            stranger = next((o for o in others if o.lead and o.nationality == person.nationality), None)
            if stranger and stranger.lead:
                add("someone_else", "another person's lead", stranger.lead, claim, person.topic)
    return items


# --------------------------------------------------------------------------- guard and output


class HeldOutLeak(ValueError):
    """A training row that touches the held-out part of the behavioural suite."""


def heldout_guard(suite: dict[str, Any], factscore_dir: Path | None) -> tuple[re.Pattern, set[str], set[str]]:
    """What :func:`check_not_heldout` refuses: held-out names (people, relatives, topics, the
    hand-written people's surnames), held-out pairs, held-out template premises."""
    names = behaviour.heldout_names(suite) | {p["short"] for p in suite["parts"]["heldout"]["people"]}
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    pairs = {
        normalise(i.premise) + "\x00" + normalise(i.hypothesis)
        for i in behaviour.suite_items("heldout", factscore_dir, suite=suite)
    }
    premises = {t["premise"] for t in suite["parts"]["heldout"]["templates"]}
    return pattern, pairs, premises


def check_not_heldout(
    items: Iterable[Item], templates: Iterable[dict[str, Any]], guard: tuple[re.Pattern, set[str], set[str]]
) -> None:
    """Raise :class:`HeldOutLeak` if a template is a held-out one or an item names a held-out
    person or repeats a held-out pair."""
    pattern, pairs, premises = guard
    for template in templates:
        if template["premise"] in premises:
            raise HeldOutLeak(f"template {template['id']} has a held-out premise: {template['premise']!r}")
    for item in items:
        found = pattern.search(item.premise + " \x00 " + item.hypothesis)
        if found:
            raise HeldOutLeak(f"a training pair names {found.group(0)!r}, a held-out person: {item}")
        if normalise(item.premise) + "\x00" + normalise(item.hypothesis) in pairs:
            raise HeldOutLeak(f"a training pair is a held-out pair: {item}")


def as_example(item: Item) -> Example:
    return Example(
        item.premise,
        item.hypothesis,
        label_of(item.capability),
        f"targeted_{item.capability}",
        group=f"targeted:{item.source}",
        synthetic=True,
    )


def generate(
    *,
    factscore_dir: Path | None,
    people: int = 600,
    samples: int = 3,
    seed: int = 13,
    excluded_topics: set[str] | None = None,
    suite: dict[str, Any] | None = None,
    form_samples: int = 2,
) -> dict[str, Any]:
    """``train`` rows (targeted pairs), ``validation`` rows (the suite's train part over its own
    hand-written people), and a summary by capability and variant."""
    suite = suite or behaviour.load_suite()
    rng = random.Random(seed)
    train_part = suite["parts"]["train"]
    # invented names share no word with the people the suite names (validation and held out)
    named = behaviour.heldout_names(suite) | {p["name"] for p in train_part["people"]} | set(train_part["relatives"])
    excluded_words = {w for n in named for w in n.split()}
    invented = invented_people(people, rng, excluded_words)
    relatives = [p["name"] for p in invented_people(60, random.Random(seed + 1), excluded_words)]
    templates = [*train_part["templates"], *EXTRA_TEMPLATES]
    pools = {"places": PLACES, "relatives": relatives}
    items = behaviour.template_items(
        "train", people=invented, countries=COUNTRIES, pools=pools, templates=templates, seed=seed, samples=samples
    )
    guard = heldout_guard(suite, factscore_dir)
    dropped = 0
    if factscore_dir is not None:
        # a training topic's passage may mention a held-out person (the Mandela Rhodes Foundation):
        # such rows are left out
        rows = passage_rows(factscore_dir, [seed + k for k in range(samples)], excluded_topics or set(), suite)
        kept = [i for i in rows if not guard[0].search(i.premise + " \x00 " + i.hypothesis)]
        dropped = len(rows) - len(kept)
        items += kept
    validation = behaviour.template_items("train", suite=suite, seed=seed)
    check_not_heldout(items + validation, templates, guard)
    validation_keys = {(v.premise, v.hypothesis) for v in validation}
    items = [i for i in behaviour.unique_items(items) if (i.premise, i.hypothesis) not in validation_keys]
    examples = [as_example(i) for i in items]
    summary = Counter(f"{i.capability} / {i.variant}" for i in items)
    if form_samples:
        # many wordings of the same facts, each negative balanced by positives of its form
        form_rows = forms.generate_rows(invented, PLACES, relatives, seed=seed, samples=form_samples)
        form_items = [
            Item(r.capability, f"forms: {r.variant}", r.premise, r.hypothesis, "train", "forms") for r in form_rows
        ]
        check_not_heldout([i for i in form_items], [], guard)
        seen = {(e.premise, e.hypothesis) for e in examples} | validation_keys
        for row in form_rows:
            if (row.premise, row.hypothesis) in seen:
                continue
            seen.add((row.premise, row.hypothesis))
            examples.append(
                Example(
                    row.premise,
                    row.hypothesis,
                    row.label,
                    f"targeted_{row.capability}",
                    group="targeted:forms",
                    synthetic=True,
                )
            )
            summary[f"{row.capability} / forms: {row.variant}"] += 1
    return {
        "train": [e.as_dict() for e in examples],
        "validation": [as_example(i).as_dict() | {"capability": i.capability} for i in validation],
        "summary": dict(sorted(summary.items())),
        "config": {
            "people": people,
            "samples": samples,
            "form_samples": form_samples,
            "seed": seed,
            "excluded_topics": sorted(excluded_topics or []),
        },
        "dropped_naming_heldout_people": dropped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="write the rows here (JSON)")
    parser.add_argument("--factscore-dir", type=Path, default=DEFAULT_FACTSCORE, help="the FActScore dev passages")
    parser.add_argument("--no-passages", action="store_true", help="template rows only")
    parser.add_argument("--people", type=int, default=600, help="invented people (default: %(default)s)")
    parser.add_argument("--samples", type=int, default=3, help="fillings of each template (default: %(default)s)")
    parser.add_argument(
        "--form-samples",
        type=int,
        default=2,
        help="fillings of forms.py's wordings per person, 0 for none (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--exclude-topics-from", type=Path, help="indomain.py's output: its validation topics make no rows"
    )
    args = parser.parse_args()
    excluded: set[str] = set()
    if args.exclude_topics_from:
        excluded = set(json.loads(args.exclude_topics_from.read_text())["validation_topics"])
    result = generate(
        factscore_dir=None if args.no_passages else args.factscore_dir,
        people=args.people,
        samples=args.samples,
        seed=args.seed,
        excluded_topics=excluded,
        form_samples=args.form_samples,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False))
    labels = Counter(r["label"] for r in result["train"])
    print(f"{len(result['train'])} training rows {dict(labels)}; {len(result['validation'])} validation rows")
    for key, count in result["summary"].items():
        print(f"  {count:6d}  {key}")


if __name__ == "__main__":
    main()
