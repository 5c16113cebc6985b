"""Experiments: evaluation runs, the FActScore preparation and tables, the NLI training recipe.

Run each as a module from the repository root, e.g. ``python -m experiments.run_biographies --help``.
"""
