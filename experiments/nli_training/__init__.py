"""The NLI training recipe (sources → mix → train → export → evaluate).

Run each step as a module from the repository root, e.g.
``python -m experiments.nli_training.mix --config experiments/nli_training/mix.json --out runs/nli_mix.json``.
"""
