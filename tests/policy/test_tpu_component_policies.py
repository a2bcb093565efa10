"""The TPU component as a stack builds it, through every guardrail: bounded requests pass, unbounded fail.

Guards the TPU guardrails against drifting from the real queued-resource resource (its dynamic type
token, the `requestBody` marker, the startup script that names the image) while the tpu-v6e stack file
is not there yet to be checked whole by test_stacks_pass_policies.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from components.tpu.node import TpuVllmNode
from components.tpu.request_body import FlexStart, Guaranteed, Placement, Provisioning, Spot
from policy.rules import GUARDRAILS
from policy.tpu import TPU_QUEUED_RESOURCE_BOUNDED
from preview.capture import Capture
from tests.components.test_tpu_node import node_args
from tests.policy.test_stacks_pass_policies import judge

Register = Callable[[Callable[[], object]], Capture]
QUEUED = "pulumi-python:dynamic/tpu:QueuedResource"


def build(register: Register, provisioning: Provisioning) -> Capture:
    return register(lambda: TpuVllmNode("gemma-tpu", node_args(provisioning=provisioning)))


@pytest.mark.parametrize("provisioning", [FlexStart(4 * 3600), Spot()], ids=["flex-start", "spot"])
def test_bounded_tpu_node_passes_every_guardrail(register: Register, provisioning: Provisioning) -> None:
    """The TPU shapes we recommend are not blocked, and the TPU guardrails really judged the request."""
    violations, not_evaluated, applied = judge(build(register, provisioning).resources)
    assert violations == []
    assert not_evaluated == []
    assert {"tpu-queued-resource-bounded", "images-pinned", "no-plaintext-secrets"} <= applied
    assert {g.name for g in GUARDRAILS if g.applies_to(QUEUED)} <= applied


def test_guaranteed_tpu_node_is_refused(register: Register) -> None:
    """An on-demand TPU that nobody deletes bills forever: the pack refuses it."""
    capture = build(register, Guaranteed())
    violations, _, _ = judge(capture.resources)
    assert violations
    assert all(TPU_QUEUED_RESOURCE_BOUNDED.name in v for v in violations)


def test_a_guaranteed_fallback_placement_is_refused_too(register: Register) -> None:
    """A flex-start first placement must not carry an unbounded on-demand fallback past the pack."""
    args = node_args(provisioning=FlexStart(4 * 3600), fallbacks=[Placement("europe-west4-a", Guaranteed())])
    capture = register(lambda: TpuVllmNode("gemma-tpu", args))
    violations, _, _ = judge(capture.resources)
    [violation] = violations
    assert TPU_QUEUED_RESOURCE_BOUNDED.name in violation
    assert "placement 2 (europe-west4-a guaranteed) is neither spot nor bounded" in violation
