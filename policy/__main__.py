"""The policy pack `pulumi preview --policy-pack policy` runs: the guardrails of policy/rules.py, mandatory.

Never imported by tests: constructing `PolicyPack` starts a gRPC server and blocks until the Pulumi CLI
stops it.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The CLI runs this file with the pack's own directory on sys.path; put the repository root there too so
# that `policy.*` resolves the same way for the CLI and for the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy.rules import PACK_NAME, policies

PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
