"""gemma-serving's Pulumi policy pack: the promises every stack keeps, checked on every preview.

The rules live in plain modules (see `policy.rules.GUARDRAILS`); `policy/__main__.py` only wraps them in
a `pulumi_policy.PolicyPack` for the CLI. The pack's runtime needs nothing but pulumi-policy
(policy/requirements.txt), so no module here imports the project's own packages.
"""

from __future__ import annotations
