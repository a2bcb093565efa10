"""The policy pack `pulumi preview --policy-pack policy` runs: the guardrails of policy/rules.py, mandatory.

Never imported by tests: constructing `PolicyPack` starts a gRPC server and blocks until the Pulumi CLI
stops it. Run by a person (`python -m policy --help`, or with a terminal on stdout), it prints how to use
the pack and exits instead of waiting forever for a CLI that will never connect.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The CLI runs this file with the pack's own directory on sys.path; put the repository root there too so
# that `policy.*` resolves the same way for the CLI and for the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

USAGE = """\
usage: pulumi preview --policy-pack policy    (or: pulumi up --policy-pack policy)

This is a Pulumi policy pack, not a command: the Pulumi CLI starts it and talks to it over gRPC.
Set it up once with
  python -m venv policy/.venv && policy/.venv/bin/pip install -r policy/requirements.txt
The rules are in policy/rules.py; the tests run every rule offline (python -m pytest tests/policy).
"""


def started_by_a_person(argv: list[str], stdout_is_terminal: bool) -> bool:
    """The CLI runs the pack with no arguments and reads the gRPC port from a pipe on stdout."""
    return any(arg in {"-h", "--help"} for arg in argv[1:]) or stdout_is_terminal


if __name__ == "__main__":
    if started_by_a_person(sys.argv, sys.stdout.isatty()):
        print(USAGE, end="")
        sys.exit(0 if any(arg in {"-h", "--help"} for arg in sys.argv[1:]) else 2)

    from pulumi_policy import EnforcementLevel, PolicyPack

    from policy.rules import PACK_NAME, policies

    PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
