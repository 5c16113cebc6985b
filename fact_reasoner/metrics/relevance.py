"""Answer relevance: does the response answer the question that was asked?

``method="generate"`` (ragas): the LLM writes ``num_questions`` questions the response would
answer, and says whether the response is noncommittal; the score is the mean cosine
similarity (MiniLM embeddings) between those questions and the real one, clamped to [0, 1],
and 0 for a noncommittal response. ``method="rubric"``: the LLM rates directly from 1 to 5
how well the response answers the question; score = (rating − 1) / 4. With
``fallback=True`` a failed question generation falls back to the rubric (the result says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .base import Metric
from .context import MetricContext
from .llm_json import JudgeError, ask_json
from .results import ClaimDetail, MetricResult, clamp01
from .sample import RagSample

_GENERATE_PROMPT = """Write {n} different questions that the ANSWER below answers directly, each a single
short question. Also say whether the ANSWER is noncommittal (evasive, vague, "I don't know").
Reply as JSON: {{"questions": ["...", ...], "noncommittal": true|false}}.

ANSWER: {answer}"""

_RUBRIC_PROMPT = """How well does the ANSWER respond to the QUESTION? Rate from 1 (irrelevant or evasive)
to 5 (directly and completely answers it). Reply as JSON: {{"rating": int, "reason": "one sentence"}}.

QUESTION: {question}
ANSWER: {answer}"""

_RUBRIC_SCHEMA = {
    "type": "object",
    "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 5}, "reason": {"type": "string"}},
    "required": ["rating", "reason"],
}


def _generate_schema(n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "questions": {"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n},
            "noncommittal": {"type": "boolean"},
        },
        "required": ["questions", "noncommittal"],
    }


def question_similarity(embedder, question: str, generated: list[str]) -> list[float]:
    """cos(embedding(question), embedding(g)) for each generated question g."""
    vectors = embedder.encode([question, *generated])
    q = vectors[0]
    norms = np.linalg.norm(vectors[1:], axis=1) * np.linalg.norm(q)
    return [float(v) for v in (vectors[1:] @ q) / np.where(norms > 0, norms, 1.0)]


@dataclass
class AnswerRelevance(Metric):
    """How directly the response answers the question (see module docs)."""

    name = "answer_relevance"
    method: Literal["generate", "rubric"] = "generate"
    num_questions: int = 3
    fallback: bool = True

    def needs(self) -> frozenset[str]:
        return frozenset({"llm"} if self.method == "rubric" else {"llm", "embedder"})

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("question", "response")
        if missing:
            return MetricResult.nan(self.name, missing)
        if self.method == "rubric":
            return self._rubric(sample, context, note=None)
        try:
            answer = ask_json(
                context.llm(),
                _GENERATE_PROMPT.format(n=self.num_questions, answer=sample.response),
                _generate_schema(self.num_questions),
                "metrics-answer-relevance/v1",
                max_tokens=60 * self.num_questions,
            )
            generated = [q.strip() for q in answer["questions"] if isinstance(q, str) and q.strip()]
            if not generated:
                raise JudgeError("the model wrote no questions")
        except JudgeError as error:
            if not self.fallback:
                return MetricResult.failure(self.name, f"question generation failed: {error}")
            return self._rubric(sample, context, note=f"question generation failed ({error}); rubric used")
        similarities = question_similarity(context.embedder, sample.question or "", generated)
        noncommittal = bool(answer.get("noncommittal"))
        score = 0.0 if noncommittal else clamp01(float(np.mean(similarities)))
        details = [
            ClaimDetail(
                claim=q, verdict="GENERATED_QUESTION", probability=s, reason=f"cosine {s:.3f} with the question"
            )
            for q, s in zip(generated, similarities)
        ]
        return MetricResult(
            name=self.name,
            score=score,
            details=details,
            method="generate",
            noncommittal=noncommittal,
            reason="the answer is noncommittal" if noncommittal else None,
        )

    def _rubric(self, sample: RagSample, context: MetricContext, note: str | None) -> MetricResult:
        try:
            answer = ask_json(
                context.llm(),
                _RUBRIC_PROMPT.format(question=sample.question, answer=sample.response),
                _RUBRIC_SCHEMA,
                "metrics-answer-relevance-rubric/v1",
                max_tokens=120,
            )
            rating = int(answer["rating"])
        except (JudgeError, ValueError, TypeError) as error:
            return MetricResult.failure(self.name, f"rubric failed: {error}" + (f"; {note}" if note else ""))
        rating = min(5, max(1, rating))
        reason = str(answer.get("reason", "")).strip()
        return MetricResult(
            name=self.name,
            score=(rating - 1) / 4.0,
            method="rubric",
            rating=rating,
            reason="; ".join(r for r in (note, reason) if r) or None,
        )


__all__ = ["AnswerRelevance", "question_similarity"]
