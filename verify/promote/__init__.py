"""`gemma-verify promote`: a gated Cloud Run rollout's candidate proves itself, then takes traffic.

The flow (docs/rollouts.md): `pulumi up` creates the candidate revision under
the `candidate` tag with 0% of the traffic; `verify promote` reads the live service through the Cloud
Run Admin API, runs `verify health` and a short `verify bench` with SLO gates against the candidate's
tagged URL and, only when both pass, moves traffic through Pulumi, so the stack's state always says
which revision serves. `--rollback` sends the traffic back to the previous revision the same way.
"""

from __future__ import annotations
