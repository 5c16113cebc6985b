#!/usr/bin/env bash
# Refresh constraints-integrations.txt, the versions of the integrations' test environment
# (scripts/setup_integrations_env.sh): build it afresh with the newest releases pyproject.toml's
# bounds allow (no constraints, as scripts/refresh_constraints.sh does for the core), write what it
# holds, and list the distributions it pins differently from constraints.txt (on 2026-11-28: click,
# rich and tenacity, which DeepEval and ragas bound below the core's, and huggingface-hub and fsspec,
# which datasets bounds). Review the diff before committing it.
#   bash scripts/refresh_integrations_constraints.sh       # writes constraints-integrations.txt
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
INTEGRATIONS_CONSTRAINTS= INTEGRATIONS_VENV="$work/venv" bash scripts/setup_integrations_env.sh
{
  echo "# The versions scripts/setup_integrations_env.sh installs (ragas, DeepEval and this package's"
  echo "# metrics for them), apart from constraints.txt. Written by scripts/refresh_integrations_constraints.sh"
  echo "# on $(date -u +%Y-%m-%d) with $("$work/venv/bin/python" --version) on $(uname -m); do not edit by hand."
  "$work/venv/bin/pip" freeze --all --exclude-editable | LC_ALL=C sort -f
} > constraints-integrations.txt
echo "wrote constraints-integrations.txt ($(grep -vc '^#' constraints-integrations.txt) pinned distributions)"
echo "pinned otherwise than in constraints.txt:"
python3 - <<'PY'
import re
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
def pins(path):
    return {norm(l.split("==")[0]): l.split("==")[1].strip() for l in open(path) if "==" in l and not l.startswith("#")}
core, ours = pins("constraints.txt"), pins("constraints-integrations.txt")
for name in sorted(core.keys() & ours.keys()):
    if core[name] != ours[name]:
        print(f"  {name}: {core[name]} (core) -> {ours[name]}")
PY
