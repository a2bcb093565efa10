"""Which revision serves a gated Cloud Run stack: read back from the stack's own last update.

Why a StackReference to the stack itself: the traffic split must survive from one `pulumi up` to the
next wherever it runs (a CI job's fresh checkout has no local state). The program exports
`servingRevision` and `previousRevision`; the next update reads them from Pulumi's state, so the state
stays the one place that says which revision serves. `gemma-verify promote` changes them by setting
`cloudRun.traffic.*` for a single `pulumi up` (which wins over the state) and removing it afterwards.
On the stack's first update there are no outputs yet: the candidate then serves (there is nothing else).
Reading a stack's own outputs back on a later update is a pattern Pulumi's maintainers show in
pulumi/pulumi#3722.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pulumi

from components.vllm_gpu_service import DirectRollout, GatedRollout, Rollout
from serving.rollout_keys import PROMOTION_RUN_ENV
from stacks.cloud_run import CloudRunSettings, TrafficSettings

# PROMOTION_RUN_ENV is set by `gemma-verify promote` for its own `pulumi up` only, to the id it wrote as
# cloudRun.traffic.promotionRun; no other update carries it.

# The name of the StackReference in the program (a read of the stack's own outputs, not a cloud resource).
STATE_REFERENCE = "rollout-state"


def obeyed_traffic(run: CloudRunSettings, environ: Mapping[str, str] | None = None) -> CloudRunSettings:
    """The settings with `cloudRun.traffic` as this update must obey it: promotion's own update obeys the keys;
    any other update (a later plain `pulumi up` after a promotion was killed mid-step) treats them as absent,
    so the traffic stays as the stack's state says, and warns which keys to remove."""
    traffic = run.traffic
    if traffic == TrafficSettings():
        return run
    env = os.environ if environ is None else environ
    if traffic.promotion_run is not None and env.get(PROMOTION_RUN_ENV) == traffic.promotion_run:
        return run
    pulumi.log.warn(
        "cloudRun.traffic keys in the stack config were left by an interrupted `gemma-verify promote` and are ignored "
        "(traffic stays as the stack's state says); remove them: pulumi config rm --path "
        "gemma-serving:cloudRun.traffic"
    )
    return run.model_copy(update={"traffic": TrafficSettings()})


def rollout_for(run: CloudRunSettings) -> Rollout:
    """The component's rollout: direct, or gated with the split the stack's state (or promotion) names."""
    if run.rollout == "direct":
        return DirectRollout()
    traffic = run.traffic
    state = pulumi.StackReference(
        STATE_REFERENCE, stack_name=f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}"
    )
    serving = traffic.serving_revision or state.get_output("servingRevision")
    previous = traffic.previous_revision or state.get_output("previousRevision")
    return GatedRollout(
        serving_revision=serving, previous_revision=previous, candidate_percent=traffic.candidate_percent
    )
