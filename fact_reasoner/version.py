"""The package's version: the one place it is written.

``pyproject.toml`` reads it from here (``[tool.setuptools.dynamic]``) and ``fact_reasoner``
re-exports it, so a release changes this line only. A module of its own, with no imports, so
that setuptools can read it without importing the package and so that code inside the package
(the web client's User-Agent) can name it without importing the package root.
"""

__version__ = "0.1.0"
