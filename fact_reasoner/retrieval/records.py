"""Retrieval for one input record: contexts with IBM's ids and the per-atom context lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..schema import Atom, Context
from .base import Retriever
from .cache import retrieve_many

if TYPE_CHECKING:
    from .llm_tools import ContextSummariser, QueryBuilder


def atom_context_id(atom_id: str, j: int) -> str:
    """IBM's id for the j-th context (from 0) retrieved for an atom: ``c_<atom_id>_<j>``."""
    return f"c_{atom_id}_{j}"


def question_context_id(j: int) -> str:
    """The id of the j-th context retrieved for the question itself: ``c_q_<j>``."""
    return f"c_q_{j}"


def topic_query(text: str, topic: str | None) -> str:
    """``"<topic> <text>"`` unless the text already names the topic (FActScore's retrieval query).

    Prefixing the person's name helped every retriever on the FActScore dev atoms, most of all
    without the topic filter (see experiments/eval_retrieval.py), because atoms such as
    "He began as a child actor" do not name whom they are about.
    """
    if not topic or topic.lower() in text.lower():
        return text
    return f"{topic} {text}"


class RetrievedContexts(NamedTuple):
    """What :func:`retrieve_for_record` found: every context, and each atom's context ids."""

    contexts: list[Context]
    per_atom: dict[str, list[str]]


def retrieve_for_record(
    record_atoms: Sequence[Atom],
    question: str | None,
    retriever: Retriever,
    top_k: int,
    include_question: bool,
    *,
    topic: str | None = None,
    topic_filter: bool = False,
    topic_in_query: bool = False,
    query_builder: "QueryBuilder | None" = None,
    summariser: "ContextSummariser | None" = None,
) -> RetrievedContexts:
    """Retrieve ``top_k`` contexts per atom (and for the question if ``include_question``).

    Returns :class:`RetrievedContexts` ``(contexts, per_atom)``: every retrieved context with id ``c_<atom>_<j>``
    (``c_q_<j>`` for the question), and for each atom id the ids of its contexts, in rank order.
    The same passage retrieved for two atoms appears twice with two ids, as in IBM's files:
    FR1 keeps them, FR2/FR3 merge them by exact text when the graph is planned.
    Question contexts are listed in ``contexts`` only (they relate to atoms in FR2/FR3).

    ``topic`` is the record's topic (e.g. the person of a biography). With ``topic_filter``
    only passages whose metadata ``topic`` equals it are returned (the store must have been
    indexed with topics, e.g. from ``{topic: [{title, text}]}`` JSON, or nothing matches);
    with ``topic_in_query`` it is prefixed to each query (:func:`topic_query`).
    ``query_builder`` (optional, LLM) rewrites each atom into a search query first.
    ``summariser`` (optional, LLM) rewrites each context with respect to its atom and drops
    irrelevant ones; kept contexts carry the original passage in ``original_text`` and the
    summariser's confidence in ``relevance`` (the graph may scale the context prior by it).
    Caching is the retriever's business: :func:`make_retriever` wraps it in a persistent cache.

    All queries of the record (and the question's) go to the retriever in one
    ``retrieve_many`` call where it has one: the web services then send their requests
    concurrently, search each distinct query once and fetch each page once. Services that use
    the record's topic for ranking (``wikipedia``: its page first) get it as ``about``.
    """
    if top_k < 0:
        raise ValueError("top_k must be >= 0")
    contexts: list[Context] = []
    per_atom: dict[str, list[str]] = {}
    atoms = list(record_atoms)
    texts = [atom.text for atom in atoms]
    queries = query_builder.build_many(texts, question) if query_builder is not None else texts
    if topic_in_query:
        queries = [topic_query(query, topic) for query in queries]
    where_topic = topic if topic_filter else None
    ask_question = bool(include_question and question and question.strip())
    batch = list(queries) + ([question] if ask_question and question else [])
    answers = retrieve_many(retriever, batch, top_k, topic=where_topic, about=topic)
    found_per_atom = answers[: len(queries)]
    summaries = None
    if summariser is not None:
        # one batch for the whole record: the LLM layer runs it concurrently where it can
        flat = summariser.summarise_many(
            [
                (atom.text, found.text, found.title)
                for atom, found_list in zip(atoms, found_per_atom)
                for found in found_list
            ]
        )
        summaries = iter(flat)

    for atom, query, found_list in zip(atoms, queries, found_per_atom):
        ids: list[str] = []
        for found in found_list:
            context = found.to_context(atom_context_id(atom.id, len(ids)))
            if query_builder is not None:
                context = context.model_copy(update={"query": query})
            if summaries is not None:
                summary = next(summaries)
                if not summary.relevant:
                    continue
                update = {"text": summary.summary, "original_text": found.text, "relevance": summary.confidence}
                if summary.failed:
                    update = {"summary_failed": summary.reason}
                context = context.model_copy(update=update)
            contexts.append(context)
            ids.append(context.id)
        per_atom[atom.id] = ids

    if ask_question:
        for j, found in enumerate(answers[len(queries)]):
            contexts.append(found.to_context(question_context_id(j)))
    return RetrievedContexts(contexts, per_atom)
