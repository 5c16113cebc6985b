"""The ``llm`` NLI backend: a chat model judges (premise, hypothesis) pairs.

Prompt versions (the version is part of every cache key):

The model is asked whether the claim (hypothesis) is True, False or Unknown given the evidence
(premise); True/False/Unknown map to entailment/contradiction/neutral (the NLI label words
themselves are accepted too). Three worked examples, one per label, precede the pair.

- ``v1``: answer with one word. The three-way probabilities come from the first answer
  token's top logprobs: every listed token that is a non-empty prefix of an answer word
  (case-insensitive; the six words start with six distinct letters, so each prefix names one
  label) adds exp(logprob) to that label, and the three sums are normalised:
  P(l) = Σ_{t→l} e^{lp(t)} / Σ_{l'} Σ_{t→l'} e^{lp(t)}.
- ``v2``: one or two sentences of reasoning, then the answer in square brackets. Probabilities
  from the logprobs of the first answer token after the last ``[`` the same way.
- ``minicheck``, ``granite-guardian``: the published prompts of two grounding models
  (Bespoke-MiniCheck-7B, Granite Guardian 3.3), asked through a server; their yes/no answer's
  probability is the support of a two-way verdict (:mod:`fact_reasoner.nli.grounding_prompts`).

Backends without logprobs (or a reply that carries none): self-consistency — ``samples``
answers at temperature ``sample_temperature`` with seeds seed, seed+1, …; P(l) = the fraction
of parsable answers that say l.

A reply that names no label gets one repair round (the model is told what was wrong and asked
again); a pair that still fails, or whose call raised, comes back as
``NLIJudgement.failure(reason)``: neutral with ``failed=True``, never a confident number.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from ..llm.base import ChatRequest, ChatResponse, Choice, LLMBackend, LLMError
from .base import LABELS, NLIJudgement, check_pairs, two_way
from .grounding_prompts import (
    GROUNDING_VERSIONS,
    MAX_TOKENS,
    TOP_LOGPROBS,
    grounding_messages,
    support_from_logprobs,
    support_from_text,
)

LABEL_NAMES = tuple(label.value for label in LABELS)  # entailment, neutral, contradiction

# The model answers True / False / Unknown about the claim (hypothesis) given the evidence
# (premise): measured on 15 VitaminC pairs, Qwen2.5-Coder-1.5B got 9/15 with these words and
# 5/15 with "entailment / neutral / contradiction", which it answered "contradiction" to
# almost always. The words map to the NLI labels below.
ANSWER_WORDS = {"true": "entailment", "unknown": "neutral", "false": "contradiction"}
_WORD_OF = {label: word for word, label in ANSWER_WORDS.items()}

SYSTEM = (
    "You check claims against evidence. Answer True if the evidence shows that the claim is "
    "true, False if the evidence shows that the claim is false, and Unknown if the evidence "
    "does not settle it."
)

_EXAMPLES = (
    (
        "Marie Curie was a Polish and naturalised-French physicist who won two Nobel Prizes.",
        "Marie Curie won a Nobel Prize.",
        "entailment",
        "Winning two Nobel Prizes means she won a Nobel Prize.",
    ),
    (
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
        "The Eiffel Tower was completed in 1920.",
        "contradiction",
        "The evidence gives 1889 as the completion year, not 1920.",
    ),
    (
        "Lionel Messi joined Barcelona's youth academy at the age of 13.",
        "Lionel Messi has three children.",
        "neutral",
        "The evidence says nothing about his children.",
    ),
)

V1_INSTRUCTION = "True, False or Unknown? Answer with one word."
V2_INSTRUCTION = (
    "Reason in at most two short sentences, then give the answer in square brackets: [True], [False] or [Unknown]."
)
PROMPT_VERSIONS = ("v1", "v2", *GROUNDING_VERSIONS)


def _user(premise: str, hypothesis: str, instruction: str) -> str:
    return f"Evidence: {premise}\nClaim: {hypothesis}\n{instruction}"


def build_messages(premise: str, hypothesis: str, version: str) -> list[tuple[str, str]]:
    """System prompt, three worked examples (one per label), then the pair."""
    if version not in ("v1", "v2"):
        raise ValueError(f"build_messages writes the v1 and v2 prompts, not {version!r} (grounding_messages does)")
    instruction = V1_INSTRUCTION if version == "v1" else V2_INSTRUCTION
    messages: list[tuple[str, str]] = [("system", SYSTEM)]
    for p, h, label, why in _EXAMPLES:
        messages.append(("user", _user(p, h, instruction)))
        word = _WORD_OF[label].capitalize()
        messages.append(("assistant", word if version == "v1" else f"{why} [{word}]"))
    messages.append(("user", _user(premise, hypothesis, instruction)))
    return messages


def token_label(token: str) -> str | None:
    """The label a token starts to spell: ``"Ent"`` → entailment; None if it names none."""
    cleaned = token.strip().strip("[\"'*").lower()
    if not cleaned:
        return None
    # six words, six distinct first letters (t/u/f, e/n/c): any prefix names one label
    for word, name in (*ANSWER_WORDS.items(), *((n, n) for n in LABEL_NAMES)):
        if word.startswith(cleaned) or cleaned.startswith(word):
            return name
    return None


def label_probabilities_from_top(top: dict[str, float]) -> dict[str, float] | None:
    """Normalised three-way probabilities from one position's top logprobs, or None."""
    mass = {name: 0.0 for name in LABEL_NAMES}
    for token, logprob in top.items():
        name = token_label(token)
        if name is not None and math.isfinite(logprob):
            mass[name] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {name: value / total for name, value in mass.items()}


_LABEL_WORDS = "true|false|unknown|entailment|neutral|contradiction"
_BRACKET = re.compile(rf"\[\s*({_LABEL_WORDS})\s*\]", re.IGNORECASE)
_WORD = re.compile(rf"\b({_LABEL_WORDS}|entails|contradicts)\b", re.IGNORECASE)


def parse_label(text: str, version: str) -> str | None:
    """The label a reply states: v1 the first label word, v2 the last bracketed label."""
    if version == "v2":
        found = _BRACKET.findall(text)
        return _as_label(found[-1]) if found else None
    match = _WORD.search(text)
    if not match:
        return None
    return _as_label(match.group(1))


def _as_label(word: str) -> str:
    word = word.lower()
    return {**ANSWER_WORDS, "entails": "entailment", "contradicts": "contradiction"}.get(word, word)


def _label_position(choice: Choice, version: str) -> int | None:
    """Index of the token that starts the label: v1 the first non-blank token; v2 the first
    label token after the last ``[``."""
    tokens = choice.logprobs or ()
    if version == "v1":
        for i, t in enumerate(tokens):
            if t.token.strip():
                return i
        return None
    last_open = None
    for i, t in enumerate(tokens):
        if "[" in t.token:
            last_open = i
    if last_open is None:
        return None
    # the label may share the "[" token ("[ent") or follow it
    for i in range(last_open, min(last_open + 3, len(tokens))):
        piece = tokens[i].token.split("[")[-1] if i == last_open else tokens[i].token
        if token_label(piece):
            return i
    return None


def probabilities_from_choice(choice: Choice, version: str) -> dict[str, float] | None:
    """Label probabilities from a reply's logprobs, or None when they cannot be read."""
    if not choice.logprobs:
        return None
    position = _label_position(choice, version)
    if position is None:
        return None
    token = choice.logprobs[position]
    top = dict(token.top) or {token.token: token.logprob}
    if version == "v2" and "[" in token.token:
        # "[ent"-style tokens: judge the part after the bracket
        top = {t.split("[")[-1]: lp for t, lp in top.items() if "[" in t} or top
    return label_probabilities_from_top(top)


@dataclass
class LLMJudgeOptions:
    prompt_version: str = "v1"
    samples: int = 5  # self-consistency samples when logprobs are unavailable
    sample_temperature: float = 0.7
    top_logprobs: int = 20
    max_tokens_v1: int = 3
    max_tokens_v2: int = 120
    force_self_consistency: bool = False
    # Contextual calibration (Zhao et al., 2021): divide the label probabilities by those the
    # model gives to content-free pairs ("N/A", "[MASK]", ""), then renormalise. Small models
    # lean towards one label whatever the input; this removes that lean. Off by default.
    calibrate: bool = False
    # granite-guardian: how the server is sent the criterion and the document (grounding_prompts)
    server: str = "vllm"


class LLMJudgeNLI:
    """NLI by a chat model (see the module docstring for prompts and probabilities)."""

    def __init__(self, llm: LLMBackend, options: LLMJudgeOptions | None = None):
        self.llm = llm
        self.options = options or LLMJudgeOptions()
        if self.options.prompt_version not in PROMPT_VERSIONS:
            raise ValueError(
                f"unknown NLI prompt version {self.options.prompt_version!r}: use one of {PROMPT_VERSIONS}"
            )
        self.name = f"llm:{llm.name}:{llm.model}:{self.options.prompt_version}"
        if self.options.prompt_version == "granite-guardian" and self.options.server == "ollama":
            self.name += ":ollama"  # another request for the same pair
        self._counters = {"pairs": 0, "failures": 0, "repairs": 0, "self_consistency": 0}

    @property
    def two_way(self) -> bool:
        """A grounding prompt asks supported or not: it never says contradicted."""
        return self.options.prompt_version in GROUNDING_VERSIONS

    @property
    def tag(self) -> str:
        return f"nli-llm/{self.options.prompt_version}"

    @property
    def identity(self) -> str:
        """The model, the prompt and every option that changes a verdict (for the pair cache)."""
        o = self.options
        sampled = o.force_self_consistency or not self.llm.supports_logprobs
        mode = f"samples={o.samples}@t={o.sample_temperature}" if sampled else f"logprobs@top={o.top_logprobs}"
        return f"{self.name}:calibrate={o.calibrate}:{mode}"

    def _request(self, messages: Sequence[tuple[str, str]], *, sampled: bool) -> ChatRequest:
        o = self.options
        max_tokens = o.max_tokens_v1 if o.prompt_version == "v1" else o.max_tokens_v2
        if sampled:
            return ChatRequest.of(
                messages, self.tag, max_tokens=max_tokens, temperature=o.sample_temperature, n=o.samples
            )
        return ChatRequest.of(messages, self.tag, max_tokens=max_tokens, logprobs=True, top_logprobs=o.top_logprobs)

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        if self.options.prompt_version in GROUNDING_VERSIONS:
            return self._judge_grounding(pairs)
        # Identical pairs are judged once; pairs that share a premise are asked one after the
        # other, so the server reuses the prompt up to the claim (premise first, claim last).
        # A pair with an empty side is not asked (a failed judgement, as for every backend).
        checked, todo = check_pairs(pairs)
        unique = sorted(dict.fromkeys(pairs[i] for i in todo), key=lambda pair: pair[0])
        version = self.options.prompt_version
        sampled = self.options.force_self_consistency or not self.llm.supports_logprobs
        conversations = [build_messages(p, h, version) for p, h in unique]
        replies = self.llm.chat_many([self._request(m, sampled=sampled) for m in conversations])
        verdicts: dict[tuple[str, str], NLIJudgement] = {}
        for pair, messages, reply in zip(unique, conversations, replies):
            verdicts[pair] = self._verdict(messages, reply, sampled=sampled)
        if self.options.calibrate and not sampled:
            prior = self.content_free_probabilities()
            if prior is not None:
                verdicts = {pair: calibrated(v, prior) for pair, v in verdicts.items()}
        results = [verdicts[pair] if done is None else done for pair, done in zip(pairs, checked)]
        self._counters["pairs"] += len(pairs)
        self._counters["failures"] += sum(verdict.failed for verdict in results)
        return results

    def _judge_grounding(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """A grounding model's two-way verdicts: ``s`` from the answer's log-probabilities, or
        from sampled answers where the server gives none (the module docstring of
        :mod:`~fact_reasoner.nli.grounding_prompts`); no repair round, no calibration."""
        o = self.options
        version = o.prompt_version
        checked, todo = check_pairs(pairs)
        unique = list(dict.fromkeys(pairs[i] for i in todo))
        sampled = o.force_self_consistency or not self.llm.supports_logprobs

        def request(pair: tuple[str, str], *, sampled: bool) -> ChatRequest:
            messages, template = grounding_messages(pair[0], pair[1], version, o.server)  # type: ignore[arg-type]
            common = {"max_tokens": MAX_TOKENS[version], "template_kwargs": template}
            if sampled:
                return ChatRequest.of(messages, self.tag, temperature=o.sample_temperature, n=o.samples, **common)
            return ChatRequest.of(messages, self.tag, logprobs=True, top_logprobs=TOP_LOGPROBS[version], **common)

        replies = self.llm.chat_many([request(pair, sampled=sampled) for pair in unique])
        verdicts = {
            pair: self._grounding_verdict(reply, sampled=sampled, resample=partial(request, pair, sampled=True))
            for pair, reply in zip(unique, replies)
        }
        results = [verdicts[pair] if done is None else done for pair, done in zip(pairs, checked)]
        self._counters["pairs"] += len(pairs)
        self._counters["failures"] += sum(verdict.failed for verdict in results)
        return results

    def _grounding_verdict(
        self, reply: ChatResponse | LLMError, *, sampled: bool, resample: "Callable[[], ChatRequest]"
    ) -> NLIJudgement:
        """``two_way(s)``: ``s`` from the log-probabilities, else the share of sampled answers
        that say supported (asked for when the reply had no log-probabilities)."""
        version = self.options.prompt_version
        if isinstance(reply, LLMError):
            return NLIJudgement.call_failed("model call failed", reply)
        if not sampled:
            support = support_from_logprobs(reply.choices[0], version)
            if support is not None:
                return NLIJudgement.from_probabilities(two_way(support))
            resampled = self.llm.chat_many([resample()])[0]
            if isinstance(resampled, LLMError):
                return NLIJudgement.call_failed("no logprobs and sampling failed", resampled)
            reply = resampled
        self._counters["self_consistency"] += 1
        said = [s for choice in reply.choices if (s := support_from_text(choice.text, version)) is not None]
        if not said:
            return NLIJudgement.failure(f"{version}: no answer in {len(reply.choices)} reply(ies): {reply.text[:80]!r}")
        return NLIJudgement.from_probabilities(two_way(sum(said) / len(said)))

    def content_free_probabilities(self) -> dict[str, float] | None:
        """Mean label probabilities over content-free pairs (cached like any call), or None."""
        if getattr(self, "_content_free", None) is None:
            version = self.options.prompt_version
            replies = self.llm.chat_many(
                [self._request(build_messages(text, text, version), sampled=False) for text in CONTENT_FREE]
            )
            found = [
                f
                for r in replies
                if not isinstance(r, LLMError) and (f := probabilities_from_choice(r.choices[0], version)) is not None
            ]
            self._content_free = (
                {name: sum(f[name] for f in found) / len(found) for name in LABEL_NAMES} if found else None
            )
        return self._content_free

    def _verdict(
        self, messages: list[tuple[str, str]], reply: ChatResponse | LLMError, *, sampled: bool
    ) -> NLIJudgement:
        version = self.options.prompt_version
        if isinstance(reply, LLMError):
            return NLIJudgement.call_failed("model call failed", reply)
        if sampled or len(reply.choices) > 1:
            self._counters["self_consistency"] += 1
            return self._from_samples(reply)
        choice = reply.choices[0]
        probabilities = probabilities_from_choice(choice, version)
        stated = parse_label(choice.text, version)
        if probabilities is not None:
            # Summed label mass at the label position; with greedy decoding its arg-max is the
            # stated label except when several spellings split one label's mass.
            return NLIJudgement.from_probabilities(probabilities)
        if stated is None:
            self._counters["repairs"] += 1
            repaired = self._repair(messages, choice.text)
            if isinstance(repaired, NLIJudgement):
                return repaired
            choice = repaired
            stated = parse_label(choice.text, version)
            probabilities = probabilities_from_choice(choice, version)
            if probabilities is not None:
                return NLIJudgement.from_probabilities(probabilities)
            if stated is None:
                return NLIJudgement.failure(f"no label in the reply after one repair: {choice.text[:120]!r}")
        # A label but no usable logprobs (the server sent none): ask for samples instead of
        # inventing a confidence.
        self._counters["self_consistency"] += 1
        samples = self.llm.chat_many([self._request(messages, sampled=True)])[0]
        if isinstance(samples, LLMError):
            return NLIJudgement.call_failed("no logprobs and sampling failed", samples)
        return self._from_samples(samples)

    def _repair(self, messages: list[tuple[str, str]], bad_reply: str) -> Choice | NLIJudgement:
        instruction = V1_INSTRUCTION if self.options.prompt_version == "v1" else V2_INSTRUCTION
        repair = [
            *messages,
            ("assistant", bad_reply),
            ("user", f"Your answer did not contain a valid label. {instruction}"),
        ]
        reply = self.llm.chat_many([self._request(repair, sampled=False)])[0]
        if isinstance(reply, LLMError):
            return NLIJudgement.call_failed("repair call failed", reply)
        return reply.choices[0]

    def _from_samples(self, reply: ChatResponse) -> NLIJudgement:
        labels = [parse_label(c.text, self.options.prompt_version) for c in reply.choices]
        valid = [label for label in labels if label is not None]
        if not valid:
            return NLIJudgement.failure(f"none of {len(labels)} samples named a label")
        return NLIJudgement.from_probabilities({name: valid.count(name) / len(valid) for name in LABEL_NAMES})

    def stats(self) -> dict[str, float]:
        """This stage's own counters (pairs, failures, repairs, self_consistency); the model's
        calls and cache hits are in ``self.llm.stats()``."""
        return dict(self._counters)


CONTENT_FREE = ("N/A", "[MASK]", "")


def calibrated(verdict: NLIJudgement, prior: dict[str, float]) -> NLIJudgement:
    """p'(l) = (p(l) / prior(l)) / Σ_l' p(l') / prior(l'); failures pass through unchanged."""
    if verdict.failed or not verdict.probabilities:
        return verdict
    weights = {name: verdict.probabilities.get(name, 0.0) / max(prior.get(name, 0.0), 1e-6) for name in LABEL_NAMES}
    return NLIJudgement.from_probabilities(weights)
