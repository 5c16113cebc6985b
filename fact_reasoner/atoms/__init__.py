"""The atoms room: a response becomes the atomic claims the rest of the pipeline judges.

:mod:`.atomizer` (a response → atomic claims), :mod:`.reviser` (each atom made
self-contained), :mod:`.grounding` (does an atom say only what the response says, and can it
be read on its own), :mod:`.checkworthy` (which atoms evidence can check, which responses
decline to answer) and :mod:`.frames` (what a short claim talks about and which values it
gives, read from its words: the graph's and the coherence pairs' rules of comparability use
them).
"""
