"""Tests of the ragas and DeepEval integrations, run in their own environment (scripts/run_tests.sh)."""
