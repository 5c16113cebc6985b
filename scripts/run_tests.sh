#!/usr/bin/env bash
# Set up from scratch and run the checks and the test suite, as CI does:
#   1. scripts/setup_test_env.sh: a fresh virtual environment in .venv-dev (not the quick start's .venv) with the versions pinned
#      in constraints.txt, the CPU build of torch, every extra and the SmolLM2 GGUF, and Chromium
#      for the browser test (as root with apt-get: said first; SKIP_CHROMIUM=1 skips it);
#   2. ruff (lint + format) and mypy, configured in pyproject.toml;
#   3. the documentation site, `mkdocs build --strict` (mkdocs.yml; offline, a few seconds): a
#      broken link, anchor or API reference, or a warning, fails the run;
#   4. pytest without the tests marked slow (they need the 1.1 GB local model; run them with
#      `.venv-dev/bin/pytest -m slow`); tests/integrations is not part of it (pyproject.toml's addopts);
#   5. the ragas and DeepEval integrations in their own environment (scripts/setup_integrations_env.sh:
#      .venv-integrations, pinned by constraints-integrations.txt): tests/integrations, not slow,
#      with both libraries' telemetry off (docs/integrations.md) and DeepEval's files in a temporary folder;
#   6. docs/integrations.md's installs as written (`pip install -e ".[ragas]"`, `".[deepeval]"`), each
#      alone and both in either order, in fresh environments without pins (scripts/check_documented_installs.py:
#      pip check, the page's examples, the metrics with their defaults; 595 s on 2 cores shared with other jobs, 2026-11-28).
# Extra arguments go to the main pytest run. VENV=dir uses another environment directory; CONSTRAINTS=FILE
# another constraints file (CONSTRAINTS= none: the newest releases pyproject.toml allows); the
# integrations' INTEGRATIONS_VENV and INTEGRATIONS_CONSTRAINTS likewise; SKIP_INTEGRATIONS=1 skips steps 5
# and 6, SKIP_DOCUMENTED_INSTALLS=1 step 6.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-dev}
bash scripts/setup_test_env.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
echo "== ruff" && "$VENV/bin/ruff" check . && "$VENV/bin/ruff" format --check .
echo "== mypy" && "$VENV/bin/mypy"
# NO_MKDOCS_2_WARNING: Material's banner about MkDocs 2 (pyproject.toml bounds mkdocs below 2)
echo "== docs" && NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet
echo "== pytest"
"$VENV/bin/python" -m pytest -m "not slow" -q "$@"
if [ "${SKIP_INTEGRATIONS:-0}" = 1 ]; then
  echo "note: SKIP_INTEGRATIONS=1: the ragas and DeepEval integrations were not tested"
  exit 0
fi
echo "== integrations (ragas, DeepEval)"
bash scripts/setup_integrations_env.sh
deepeval_home=$(mktemp -d)
trap 'rm -rf "$deepeval_home"' EXIT
# -o addopts=: pyproject.toml's addopts leave tests/integrations out of the main run
RAGAS_DO_NOT_TRACK=true DEEPEVAL_TELEMETRY_OPT_OUT=1 DEEPEVAL_HOME="$deepeval_home" \
  DEEPEVAL_CACHE_FOLDER="$deepeval_home/cache" \
  "${INTEGRATIONS_VENV:-.venv-integrations}/bin/python" -m pytest -o addopts= -o asyncio_default_fixture_loop_scope=function \
  -m "not slow" -q tests/integrations
if [ "${SKIP_DOCUMENTED_INSTALLS:-0}" = 1 ]; then
  echo "note: SKIP_DOCUMENTED_INSTALLS=1: docs/integrations.md's installs were not run as written"
  exit 0
fi
echo "== documented installs (docs/integrations.md, each in a fresh environment)"
"$VENV/bin/python" -m scripts.check_documented_installs
