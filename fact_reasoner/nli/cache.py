"""The one NLI pair cache: each (premise, hypothesis) text pair is judged at most once.

:class:`CachedNLI` sits in front of any model backend (the factory puts it there). A pair is
answered, in order, from this process's memo, from the persistent
:class:`~fact_reasoner.cache.ModelCache` (when caching is on), or by the backend. The cache key
is ``cache_key("nli", identity, "nli-pair/v2", {premise, hypothesis})``: the backend's identity
names its kind, its weights' fingerprint and every option that changes a verdict, so another
model or prompt never reads these entries. FR1, FR2, FR3, the baselines and the RAG metrics
share it: FR1's pairs are a subset of FR2's, FR2's of FR3's.

Failed judgements are never stored (a rerun tries them again); identical pairs in one batch are
judged once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..schema import RelationType
from .base import NLIBackend, NLIJudgement, backend_identity, describe_judge

if TYPE_CHECKING:  # pragma: no cover
    from ..cache import ModelCache

PAIR_CACHE_VERSION = "nli-pair/v2"

__all__ = ["CachedNLI", "PAIR_CACHE_VERSION"]


class CachedNLI:
    """An NLI backend behind the pair cache (see the module docstring).

    Counters: ``pairs`` (asked of this wrapper), ``pair_cache_hits`` (distinct pairs answered
    without the backend), ``backend_pairs`` (distinct pairs sent to the backend) and
    ``backend_seconds``.
    """

    def __init__(self, backend: NLIBackend, cache: "ModelCache | None" = None, identity: str | None = None):
        self.backend = backend
        self.cache = cache
        self.identity = identity or backend_identity(backend)
        self.name = getattr(backend, "name", type(backend).__name__)
        self.description = describe_judge(backend)
        self._memo: dict[tuple[str, str], NLIJudgement] = {}
        self._lock = threading.Lock()
        self.requested = 0
        self.hits = 0
        self.backend_pairs = 0
        self.seconds = 0.0

    def _key(self, pair: tuple[str, str]) -> str:
        from ..cache import cache_key

        return cache_key("nli", self.identity, PAIR_CACHE_VERSION, {"premise": pair[0], "hypothesis": pair[1]})

    def _stored(self, pair: tuple[str, str]) -> NLIJudgement | None:
        if self.cache is None:
            return None
        hit = self.cache.get(self._key(pair))
        if hit is None:
            return None
        return _judgement(hit)

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        pairs = [tuple(p) for p in pairs]  # type: ignore[misc]
        answers: dict[tuple[str, str], NLIJudgement] = {}
        missing: list[tuple[str, str]] = []
        with self._lock:
            self.requested += len(pairs)
            for pair in dict.fromkeys(pairs):
                found = self._memo.get(pair) or self._stored(pair)
                if found is None:
                    missing.append(pair)
                else:
                    answers[pair] = self._memo.setdefault(pair, found)
            self.hits += len(answers)
        if missing:
            started = time.perf_counter()
            fresh = self.backend.judge(missing)
            elapsed = time.perf_counter() - started
            if len(fresh) != len(missing):
                raise RuntimeError(f"NLI backend {self.name} returned {len(fresh)} judgements for {len(missing)} pairs")
            with self._lock:
                self.seconds += elapsed
                self.backend_pairs += len(missing)
                for pair, judgement in zip(missing, fresh):
                    answers[pair] = judgement
                    if judgement.failed:
                        continue
                    self._memo[pair] = judgement
                    if self.cache is not None:
                        self.cache.put(
                            self._key(pair),
                            _stored_form(judgement),
                            backend="nli",
                            model=self.identity,
                            prompt_version=PAIR_CACHE_VERSION,
                            request={"premise": pair[0], "hypothesis": pair[1]},
                        )
        return [answers[pair] for pair in pairs]

    def stats(self) -> dict[str, Any]:
        inner = getattr(self.backend, "stats", None)
        counters = {
            f"backend_{key}": value
            for key, value in (inner() if callable(inner) else {}).items()
            if isinstance(value, (int, float))
        }
        return counters | {
            "pairs": self.requested,
            "pair_cache_hits": self.hits,
            "backend_pairs": self.backend_pairs,
            "backend_seconds": round(self.seconds, 6),
        }


def _stored_form(judgement: NLIJudgement) -> dict[str, Any]:
    """What the persistent cache keeps of a verdict: label, probability, the three
    probabilities and, for a panel's, each judge's (and how the panel combined them)."""
    stored: dict[str, Any] = {
        "label": judgement.label.value,
        "probability": judgement.probability,
        "probabilities": judgement.probabilities,
    }
    if judgement.judges is not None:
        stored["judges"] = {name: _stored_form(j) for name, j in judgement.judges.items()}
        stored["panel"] = judgement.panel
    return stored


def _judgement(hit: dict[str, Any]) -> NLIJudgement:
    """A verdict read back from the cache (:func:`_stored_form`)."""
    judges = hit.get("judges")
    return NLIJudgement(
        RelationType(hit["label"]),
        float(hit["probability"]),
        dict(hit.get("probabilities") or {}),
        judges={name: _judgement(j) for name, j in judges.items()} if judges else None,
        panel=hit.get("panel"),
    )
