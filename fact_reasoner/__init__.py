"""fact_reasoner: probabilistic factuality assessment after FactReasoner (FR1, FR2, FR3).

The pipeline is atomize → revise → retrieve → NLI → graph → infer → score; each stage is a
module behind a small protocol so it can be swapped.
"""

__version__ = "0.1.0"
