"""The int8 cross-encoders that ship in the package (version 3; the contradiction specialist
where this checkout has it) and real-looking pairs to judge with them: passages of one to
several sentences, of many lengths, with claims they entail, contradict or leave open."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

MODELS_DIR = Path(__file__).resolve().parents[2] / "fact_reasoner" / "models"

#: the shipped int8 graphs (run one item at a time: ``items_per_run: 1``) in this checkout
INT8_MODELS = [
    folder
    for folder in (MODELS_DIR / "nli-minilm-l6", MODELS_DIR / "nli-minilm-l6-contradictions")
    if (folder / "model.onnx").is_file()
    and json.loads((folder / "config.json").read_text()).get("fact_reasoner", {}).get("items_per_run") == 1
]

PASSAGES = [
    "Marie Curie (born 7 November 1867 in Warsaw) was a Polish and naturalised-French physicist and chemist "
    "who conducted pioneering research on radioactivity. She was the first woman to win a Nobel Prize.",
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, designed by the engineering company of Gustave "
    "Eiffel and completed in 1889. It is 330 metres tall.",
    "Pluto is a dwarf planet in the Kuiper belt. It was discovered by Clyde Tombaugh in 1930 and was long "
    "considered the ninth planet; since 2006 it is no longer considered a planet.",
    "Edmund Hillary was a New Zealand mountaineer. With Tenzing Norgay he made the first confirmed ascent of "
    "Mount Everest in 1953. He died in Auckland in 2008.",
    "Albert Einstein was a German-born theoretical physicist who developed the theory of relativity. He became "
    "an American citizen in 1940. Einstein played the violin from childhood throughout his life. He died in "
    "Princeton in 1955.",
    "Bats are not blind.",
    "The Great Wall of China is a series of fortifications built across the historical northern borders of "
    "ancient Chinese states. Contrary to a popular belief, it is not visible to the naked eye from the Moon. "
    "Its total length, with all its branches, is about 21,000 kilometres, and parts of it date from the 7th "
    "century BC, while the best-known sections were built by the Ming dynasty between the 14th and the 17th "
    "centuries to protect against raids by the nomadic groups of the Eurasian Steppe.",
    "Mount Everest is Earth's highest mountain above sea level, in the Mahalangur Himal range of the "
    "Himalayas. The China-Nepal border runs across its summit point.",
]
CLAIMS = [
    ["Marie Curie was born in Warsaw.", "Marie Curie was born in Paris.", "Marie Curie played basketball."],
    ["The Eiffel Tower was completed in 1889.", "The Eiffel Tower is in Berlin.", "The Eiffel Tower is 330 m tall."],
    ["Pluto is considered a planet.", "Pluto was discovered in 1930.", "Pluto has rings."],
    ["Edmund Hillary died in 2008.", "Edmund Hillary never climbed Everest.", "Edmund Hillary was a farmer."],
    ["Albert Einstein played the violin.", "Einstein died in Berlin.", "Einstein became an American citizen."],
    ["Bats are blind.", "Bats can see."],
    ["The Great Wall of China is visible to the naked eye from the Moon.", "The Great Wall is 21,000 km long."],
    ["No mountain on Earth rises higher above sea level than Mount Everest.", "Everest is in the Alps."],
]
#: (premise, hypothesis) pairs: each passage with each of its claims
PAIRS = [(passage, claim) for passage, claims in zip(PASSAGES, CLAIMS) for claim in claims]


def real_items(folder: Path) -> Iterator[dict[str, np.ndarray]]:
    """One run's inputs per pair of :data:`PAIRS`, tokenised by ``folder``'s tokenizer and cut at
    its window length (as one window: what a one-item run of the backend feeds the graph)."""
    from tokenizers import Tokenizer

    config = json.loads((folder / "config.json").read_text())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(config["fact_reasoner"]["max_length"]))
    for encoding in tokenizer.encode_batch(PAIRS):
        ids = np.array([encoding.ids], dtype=np.int64)
        yield {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.array([encoding.type_ids])}
