#!/usr/bin/env bash
# Refresh constraints.txt, the versions scripts/run_tests.sh installs: build the test environment
# afresh with the newest releases pyproject.toml's bounds allow (no constraints), then write what
# it holds. Review the diff (and SECURITY.md's advisories for any package that changed) before
# committing it.
#   bash scripts/refresh_constraints.sh            # writes constraints.txt
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CONSTRAINTS= VENV="$work/venv" SKIP_CHROMIUM=1 bash scripts/setup_test_env.sh
{
  echo "# The versions scripts/run_tests.sh installs (pip install -c constraints.txt), so that a green"
  echo "# run can be reproduced. Written by scripts/refresh_constraints.sh on $(date -u +%Y-%m-%d)"
  echo "# with $("$work/venv/bin/python" --version) on $(uname -m); do not edit by hand."
  echo "# torch==2.13.0+cpu is PyTorch's CPU build: on a machine whose pip does not find it (it lies in"
  echo "# /opt/wheels here), set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu."
  "$work/venv/bin/pip" freeze --all --exclude-editable | LC_ALL=C sort -f
} > constraints.txt
echo "wrote constraints.txt ($(grep -vc '^#' constraints.txt) pinned distributions)"
