"""Stop a test environment's set-up when it holds a distribution its constraints file does not pin.

    python scripts/check_constraints.py FILE REFRESH    # with the environment's python

FILE is the constraints file, REFRESH the script that rewrites it (named in the error).

A distribution the file does not pin was resolved afresh (a dependency added since the file was
written): a green run could not be reproduced. Used by scripts/setup_test_env.sh (the core's
constraints.txt) and scripts/setup_integrations_env.sh (constraints-integrations.txt).
"""

from __future__ import annotations

import re
import subprocess
import sys


def norm(line: str) -> str:
    """A pin or a ``pip freeze`` line with its name in PEP 503 form (``Foo_Bar==1`` → ``foo-bar==1``)."""
    return re.sub(r"[-_.]+", "-", line.strip()).lower()


def main(path: str, refresh: str) -> int:
    pinned = {norm(line) for line in open(path, encoding="utf-8") if line.strip() and not line.startswith("#")}
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    loose = sorted(line for line in frozen if norm(line) not in pinned)
    if loose:
        print(f"error: {path} does not pin {', '.join(loose)}: run bash {refresh}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
