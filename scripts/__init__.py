"""Benchmarks and set-up helpers; run each as a module from the repository root, e.g.
``python -m scripts.benchmark_inference``.
"""
