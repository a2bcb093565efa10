"""What a gated stack exports for `verify promote` (the contract in docs/architecture.md).

Why a reader of its own: `verify.endpoint` reads what every subcommand needs to reach an endpoint; promotion
also needs the rollout's facts (which revision serves, which one is the candidate, the service to ask
Cloud Run about), and a stack that lacks them must fail before anything is called or moved. The fields
are the contract's (serving.outputs.CloudRunRolloutOutputs, which CloudRunOutputs includes), taken from the
gateway's tolerant reading (serving.outputs.DeployedOutputs); only the rollout's outputs are required here,
so a stack missing an unrelated output can still be promoted.
"""

from __future__ import annotations

import re

import pydantic

from serving.outputs import CloudRunRolloutOutputs, DeployedOutputs
from verify import UsageError
from verify.endpoint import output_problems

# `projects/<project>/locations/<region>/services/<name>`: the Cloud Run Admin API v2 resource name,
# and the id pulumi-gcp gives a cloudrunv2.Service.
_SERVICE_RESOURCE = re.compile(r"^projects/[^/]+/locations/[^/]+/services/[^/]+$")


class RolloutOutputs(CloudRunRolloutOutputs):
    """The rollout outputs of a Cloud Run stack, with promotion's own check of the service name."""

    @pydantic.field_validator("cloud_run_service")
    @classmethod
    def _resource_name(cls, value: str) -> str:
        if not _SERVICE_RESOURCE.match(value):
            raise ValueError(f"expected projects/<project>/locations/<region>/services/<name>, got {value!r}")
        return value


def rollout_outputs(stack: str, outputs: DeployedOutputs) -> RolloutOutputs:
    """The rollout's outputs; a stack that is not a gated Cloud Run stack is a usage error (exit 2)."""
    if outputs.platform not in (None, "cloud-run"):
        raise UsageError(
            f"stack {stack!r} runs on {outputs.platform!r}: promotion moves Cloud Run traffic between "
            "revisions; a TPU node is verified with `gemma-verify health` (see docs/tpu.md)"
        )
    try:
        rollout = outputs.as_model(RolloutOutputs)
    except pydantic.ValidationError as exc:
        raise UsageError(
            f"stack {stack!r} does not export what promotion needs ({output_problems(exc)}); expected outputs: "
            "rollout, cloudRunService, candidateRevision, servingRevision (run `pulumi up` with this version first)"
        ) from None
    if rollout.rollout != "gated":
        raise UsageError(
            f"stack {stack!r} rolls out directly (cloudRun.rollout: direct): every `pulumi up` already sends all "
            "traffic to the new revision, so there is nothing to promote; set cloudRun.rollout to gated"
        )
    return rollout
