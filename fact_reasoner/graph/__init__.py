"""The graph room: atoms, contexts and judged relations become a factor graph (FR1, FR2, FR3).

:mod:`.build` (planning the pairs to judge, building the graph), :mod:`.factor_graph` (the
graph's data), :mod:`.factors` (the factor tables), :mod:`.pair_selection` (which pairs
``--nli-mode fast`` judges), and with ``--coherence`` :mod:`.coherence_pairs` (which atom
pairs), :mod:`.coherence_graph` (their factors) and :mod:`.coherence` (the coherence score).
The builder receives its settings as one :class:`~fact_reasoner.settings.graph_options.GraphOptions`.
"""
