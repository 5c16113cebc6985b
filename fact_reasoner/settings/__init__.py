"""The settings room: every setting declared once, and the registry that names every choice.

:mod:`.registry` (the kinds and their entries), :mod:`.fields` (how a setting is declared),
:mod:`.graph_options` (the graph's settings, which the graph builder receives alone),
:mod:`.config` (``PipelineConfig``, the groups of settings), :mod:`.config_file` (the TOML
settings file) and :mod:`.cli_options` (the flags made from the declarations). This is the
ground floor: it imports nothing of the project but :mod:`fact_reasoner.errors`.
"""
