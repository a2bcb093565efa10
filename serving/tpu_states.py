"""The states of a TPU queued resource and of its node, as Google's TPU API (v2) names them.

Why one module: the TPU provider (components/tpu/provider.py) polls a request until it is ACTIVE and
`gemma-verify status` (verify/ops/status.py) explains a request's state to the user; each kept its own sets
of the same state names, so a state Google adds would be learnt by one and not the other. Source:
https://cloud.google.com/tpu/docs/reference/rest/v2/projects.locations.queuedResources#state and
.../projects.locations.nodes#state.
"""

from __future__ import annotations

ACTIVE = "ACTIVE"
FAILED = "FAILED"
# A request on its way to ACTIVE: accepted, queued for capacity, or being provisioned.
WAITING = frozenset({"CREATING", "ACCEPTED", "WAITING_FOR_RESOURCES", "PROVISIONING"})
# States after which a request will never become ACTIVE again without being re-queued.
ENDED = frozenset({"SUSPENDING", "SUSPENDED", "DELETING"})
# Node states of an ACTIVE request whose node will not serve again (a spot preemption, a stopped node).
NODE_GONE = frozenset({"PREEMPTED", "TERMINATED", "STOPPED", "DELETING"})
