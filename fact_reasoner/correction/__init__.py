"""The correction room: a response rewritten to keep what is supported, cited, and re-assessed.

:mod:`.corrector` (``fact-reasoner correct``: the run of one record), :mod:`.plan` (which atoms
are kept, rewritten or removed; which sentences change), :mod:`.rewrite` (the sentence
rewriter) and :mod:`.result` (the output's ``correction`` field). Its prompt is
:mod:`fact_reasoner.llm.correction`.
"""
