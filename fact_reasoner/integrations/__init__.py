"""This project's RAG metrics inside the evaluation libraries RAG engineers already use.

- :mod:`fact_reasoner.integrations.ragas`: metrics for ``ragas.evaluate(dataset, metrics=[…])``
  and ``metric.single_turn_ascore(sample)`` (extra ``ragas``);
- :mod:`fact_reasoner.integrations.deepeval`: ``deepeval.metrics.BaseMetric`` subclasses for
  ``assert_test`` and ``evaluate`` (extra ``deepeval``).

Both score a sample exactly as ``fact-reasoner ragas`` scores a line of its input file
(:mod:`fact_reasoner.integrations.scoring`), with no LLM service, no API key and no network.
Importing ``fact_reasoner`` imports neither library: only importing one of these two modules
does, after it has turned the library's telemetry off (:mod:`fact_reasoner.integrations.offline`).
See docs/integrations.md.
"""
