"""The published prompts of two grounding LLMs, as prompt versions of the LLM judge
(``--nli llm --nli-prompt-version minicheck|granite-guardian``, usually with ``--backend openai
--base-url …`` naming the server that runs the model): the prompt each model was trained on, and
its yes/no answer's probability as the support ``s``. Both are two-way checkers: a pair gets
``P(entailment) = s``, ``P(neutral) = 1 − s`` and no contradiction
(:func:`~fact_reasoner.nli.base.two_way`).

- ``minicheck`` — **Bespoke-MiniCheck-7B** (Liyan06/MiniCheck, ``minicheck/utils.py`` and
  ``inference.py``'s ``LLMCheck``): its system prompt and ``Document: …\\nClaim: …``; one token is
  generated and ``s = Σ exp(logprob)`` over the first position's top 5 tokens that read "yes"
  (case-insensitive; the reference compares the decoded token, here also stripped of the space a
  server may put before it). Not normalised against "no", as there; a first position whose top
  tokens have neither "yes" nor "no" is no answer (the reference would read it as s = 0): the
  pair is asked again by sampling, and fails if no sample answers. Its documents are chunked
  only beyond 32,000 tokens (``32768 − 300``), which no passage here reaches; a claim of several
  sentences is judged whole (the reference takes the least supported sentence; atoms are single
  claims).
- ``granite-guardian`` — **Granite Guardian 3.3** with its ``groundedness`` criterion, thinking
  off: the passage is the document, the claim the assistant's text, and the model answers
  ``<score> yes </score>`` when the text is *ungrounded*. ``s = P(no) / (P(yes) + P(no))`` at the
  answer's position (the token after ``<score>``), from its top log-probabilities. The model's
  chat template builds the judge prompt from the criterion and the documents, so how they are sent
  depends on the server (:data:`GUARDIAN_SERVERS`): vLLM and llama.cpp's ``llama-server``
  (``--jinja``, and ``--no-prefill-assistant`` so that the final assistant message is judged,
  not continued) take them as the chat template's arguments (``chat_template_kwargs``:
  ``guardian_config``, ``documents``, ``think``); Ollama's ``ibm/granite3.3-guardian`` template
  reads the criterion from the system message and each document from a ``document`` role.

Without log-probabilities (a server that sends none), ``s`` is the share of sampled answers that
say "supported" (:func:`support_from_text`).
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal

from ..llm.base import Choice

__all__ = [
    "GROUNDING_VERSIONS",
    "GUARDIAN_SERVERS",
    "MINICHECK_SYSTEM",
    "grounding_messages",
    "support_from_logprobs",
    "support_from_text",
]

#: the prompt versions of the LLM judge that ask a grounding model (the others: ``v1``, ``v2``)
GROUNDING_VERSIONS = ("minicheck", "granite-guardian")
#: how a server is sent Granite Guardian's criterion and documents
GUARDIAN_SERVERS = ("vllm", "llama.cpp", "ollama")
GuardianServer = Literal["vllm", "llama.cpp", "ollama"]

#: Bespoke-MiniCheck-7B's system prompt (MiniCheck's ``SYSTEM_PROMPT``)
MINICHECK_SYSTEM = (
    "Determine whether the provided claim is consistent with the corresponding document. Consistency in "
    "this context implies that all information presented in the claim is substantiated by the document. "
    "If not, it should be considered inconsistent. Please assess the claim's consistency with the document "
    'by responding with either "Yes" or "No".'
)
#: its user message (MiniCheck's ``USER_PROMPT``, ``[DOCUMENT]`` and ``[CLAIM]`` filled in)
MINICHECK_USER = "Document: {document}\nClaim: {claim}"
#: the tokens each version generates: MiniCheck one (as its reference), Guardian its score tags
MAX_TOKENS = {"minicheck": 1, "granite-guardian": 16}
#: the top log-probabilities asked for (MiniCheck's reference asks vLLM for 5)
TOP_LOGPROBS = {"minicheck": 5, "granite-guardian": 20}
GUARDIAN_CRITERION = "groundedness"

_SCORE = re.compile(r"<score>\s*(yes|no)\s*</score>", re.IGNORECASE)


def grounding_messages(
    premise: str, hypothesis: str, version: str, server: GuardianServer = "vllm"
) -> tuple[list[tuple[str, str]], str | None]:
    """The chat messages of one pair and, for Granite Guardian on vLLM or llama.cpp, the chat
    template's arguments (JSON) that carry its criterion and document."""
    if version == "minicheck":
        return [("system", MINICHECK_SYSTEM), ("user", MINICHECK_USER.format(document=premise, claim=hypothesis))], None
    if version != "granite-guardian":
        raise ValueError(f"not a grounding prompt version: {version!r} (one of {GROUNDING_VERSIONS})")
    if server == "ollama":
        return [("system", GUARDIAN_CRITERION), ("document 0", premise), ("assistant", hypothesis)], None
    arguments = {
        "guardian_config": {"criteria_id": GUARDIAN_CRITERION},
        "documents": [{"doc_id": "0", "text": premise}],
        "think": False,
    }
    return [("assistant", hypothesis)], json.dumps(arguments, sort_keys=True)


def _word(token: str) -> str:
    return token.strip().lower()


def support_from_logprobs(choice: Choice, version: str) -> float | None:
    """``s`` from a reply's log-probabilities (see the module docstring), or None when they do
    not have it (no log-probabilities, or no answer position)."""
    tokens = choice.logprobs or ()
    if not tokens:
        return None
    if version == "minicheck":
        top = dict(tokens[0].top) or {tokens[0].token: tokens[0].logprob}
        if not {_word(t) for t in top} & {"yes", "no"}:
            return None  # the reply did not answer yes or no: not a reading of "no" (resampled)
        return min(1.0, sum(math.exp(lp) for t, lp in top.items() if _word(t) == "yes" and math.isfinite(lp)))
    text = ""
    for token in tokens:
        if "<score>" in text and _word(token.token) in ("yes", "no"):
            top = dict(token.top) or {token.token: token.logprob}
            mass = {"yes": 0.0, "no": 0.0}
            for t, lp in top.items():
                if _word(t) in mass and math.isfinite(lp):
                    mass[_word(t)] += math.exp(lp)
            total = mass["yes"] + mass["no"]
            return mass["no"] / total if total > 0 else None
        text += token.token
    return None


def support_from_text(text: str, version: str) -> float | None:
    """``s`` from an answer's words, for sampled answers: MiniCheck's "Yes" 1, "No" 0; Granite
    Guardian's ``<score> no </score>`` (grounded) 1, ``<score> yes </score>`` 0; None otherwise."""
    if version == "minicheck":
        word = re.match(r"\W*(yes|no)\b", text, re.IGNORECASE)
        return None if word is None else float(word.group(1).lower() == "yes")
    score = _SCORE.search(text)
    return None if score is None else float(score.group(1).lower() == "no")
