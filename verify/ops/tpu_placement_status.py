"""`verify status` for a TPU stack's placements: where the request is, what came of the ones before it,
how long `pulumi up` may still wait, and, for a node that is gone, why.

Why apart from status.py: the TPU lines other work adds to `verify status` (cold-start phases, flex-start
termination) stay out of each other's way. The request is looked for in each placement's zone in order (the
provider queues the same id in one zone at a time and withdraws it before moving on), so the one found is
where `pulumi up` is now. The attempts before it are the provider's own record on the request (node
metadata `gemma-placement`, components/tpu/placements.py): Google deletes a withdrawn request, so this is
where its reason survives while `pulumi up` still waits.
"""

from __future__ import annotations

import json

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import GoogleApiError, GoogleText, parse_answer
from verify.ops.answers import QueuedResource, QueuedResourceState
from verify.ops.stack import OpsPlacement, TpuOpsStack

# The node metadata key the queued-resource provider writes (components/tpu/request_body.py).
PLACEMENT_METADATA_KEY = "gemma-placement"
# Node states of a node that will not serve again without a new request (a spot preemption, a stop).
NODE_GONE = frozenset({"PREEMPTED", "TERMINATED", "STOPPED"})


class PlacementAttempt(pydantic.BaseModel):
    """One placement tried before the current one: its outcome (quota, refused, failed, deadline, ended)."""

    model_config = pydantic.ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    # The node's metadata is text anyone with the node's setMetadata permission can write: escaped at the edge.
    zone: GoogleText
    provisioning_model: GoogleText = pydantic.Field(alias="provisioningModel")
    outcome: GoogleText
    reason: GoogleText

    def line(self) -> str:
        return f"{self.zone} {self.provisioning_model}: {self.outcome}: {self.reason}"


class PlacementStatus(pydantic.BaseModel):
    """Which of the stack's placements the request is in, and what happened before it."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    placement: int
    of: int
    zone: str
    provisioning: str
    attempts: list[PlacementAttempt]
    # The most `pulumi up` may still wait: this placement's time left plus a full deadline per later placement.
    left_in_list_s: float | None = None

    def text(self) -> str:
        before = "; ".join(f"{index + 1}. {attempt.line()}" for index, attempt in enumerate(self.attempts))
        return f"placement {self.placement} of {self.of} ({self.zone} {self.provisioning})" + (
            f" after {before}" if before else ""
        )


Found = tuple[int, OpsPlacement, QueuedResource]


def find_requests(stack: TpuOpsStack, apis: GoogleApis) -> list[Found]:
    """The stack's queued resource in every placement zone that has one, in placement order."""
    found: list[Found] = []
    for index, placement in enumerate(stack.placement_list):
        try:
            answer = apis.get("tpu", stack.queued_resource_in(placement.zone))
        except GoogleApiError as error:
            if not error.not_found:
                raise
            continue
        found.append((index, placement, parse_answer(QueuedResource, answer, "tpu")))
    return found


def untracked_text(stack: TpuOpsStack, extra: list[Found]) -> tuple[str, str]:
    """What to say about requests beyond the one `pulumi up` works with (it keeps one at a time and
    withdraws it before moving on): no state tracks them, a `pulumi destroy` leaves them, and they bill."""
    names = [stack.queued_resource_in(placement.zone) for _, placement, _ in extra]
    states = [f"{name} ({queued.state.state})" for name, (_, _, queued) in zip(names, extra, strict=True)]
    summary = f"; {len(extra)} more request(s) of this stack that no state tracks (they can bill): {', '.join(states)}"
    fix = "; ".join(
        f"gcloud alpha compute tpus queued-resources delete {stack.base_name} --zone {placement.zone} "
        f"--project {stack.project} --force"
        for _, placement, _ in extra
    )
    return summary, fix


def placement_status(
    stack: TpuOpsStack, index: int, placement: OpsPlacement, queued: QueuedResource, deadline_left_s: float | None
) -> PlacementStatus | None:
    """Where the request is among several placements (None for a stack with one)."""
    count = len(stack.placement_list)
    if count == 1:
        return None
    later = count - index - 1
    left = None if deadline_left_s is None else max(deadline_left_s, 0.0) + later * stack.active_deadline_seconds
    return PlacementStatus(
        placement=index + 1,
        of=count,
        zone=placement.zone,
        provisioning=placement.provisioning,
        attempts=_attempts(queued),
        left_in_list_s=left,
    )


def _attempts(queued: QueuedResource) -> list[PlacementAttempt]:
    """The provider's record on the request; empty when it carries none (or one this version cannot read)."""
    specs = queued.tpu.node_spec
    text = specs[0].node.metadata.get(PLACEMENT_METADATA_KEY) if specs else None
    try:
        record = json.loads(text or "{}")
        return [PlacementAttempt.model_validate(item) for item in record.get("attempts") or []]
    except (TypeError, AttributeError, ValueError):  # pydantic.ValidationError is a ValueError
        return []


def node_gone(node_state: str) -> str | None:
    """Why the node will not serve again, or None while it may: a preempted spot node, a stopped one."""
    if node_state not in NODE_GONE:
        return None
    if node_state == "PREEMPTED":
        return "node gone: Google preempted the spot node"
    return f"node gone: the node is {node_state}"


def suspended_reason(state_block: QueuedResourceState, flex_start: bool) -> str:
    """A SUSPENDING/SUSPENDED request: the flex-start run that ended, or who suspended it
    (`QueuedResourceState.stateInitiator`: USER or SERVICE)."""
    initiator = state_block.state_initiator
    if initiator == "USER":
        return "node gone: the request was suspended by a user"
    if flex_start:
        return "node gone: the flex-start run ended (tpu.provisioning.maxRunDuration), so Google deleted the node"
    return "node gone: Google suspended the request (a preempted spot node ends this way too)"


def requeue_fix(stack: TpuOpsStack) -> str:
    """What the user runs to get the node back, and what it costs (docs/tpu.md)."""
    through = " through tpu.placements, in order" if len(stack.placement_list) > 1 else ""
    return (
        f"pulumi up --refresh --stack {stack.name} queues a new node{through}: a new node bills from ACTIVE at its "
        "tier's rate, and vLLM answers about 10 minutes after boot (docs/tpu.md)"
    )
