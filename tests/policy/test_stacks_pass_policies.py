"""Every stack's whole offline plan passes every guardrail of the policy pack.

This is what `pulumi preview --policy-pack policy` will do on a pull request, run here without the CLI:
each resource the program registers under the recording mocks (the same capture `make preview` prints)
goes through each guardrail. A stack that breaks a promise fails here before any reviewer sees it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

import pytest
from pulumi_policy.proxy import UnknownValueError

from policy.gpu_service import GPU_CPU_ALWAYS_ALLOCATED
from policy.images import IMAGES_PINNED
from policy.rules import GUARDRAILS
from preview.capture import Capture, CapturedResource
from preview.stack_file import available_stacks
from tests.conftest import ROOT, render_stack

# Every stack file, the examples included: an example a user copies must keep the same promises.
STACKS = available_stacks(ROOT)
CLOUD_RUN_STACKS = ("l4", "rtx6000")
SERVICE = "gcp:cloudrunv2/service:Service"

# Guardrails that must have judged at least one resource of a stack, so that a renamed type token or a
# moved property cannot turn the whole check into a silent pass.
EXPECTED_TO_APPLY = {
    "cloud-run": {
        "cloud-run-not-public",
        "bucket-private",
        "bucket-not-public",
        "gpu-service-cpu-always-allocated",
        "gpu-service-limit-matches-accelerator",
        "gpu-service-concurrency-covers-batch",
        "gpu-service-model-mount-uid-gid",
        "images-pinned",
        "no-plaintext-secrets",
    },
    "tpu": {"tpu-queued-resource-bounded", "images-pinned", "no-plaintext-secrets"},
    "gke": {
        "gke-service-not-public",
        "gke-images-pinned",
        "gke-model-mount-uid-gid",
        "gke-probes-present",
        "gke-no-credentials",
        "bucket-private",
        "bucket-not-public",
    },
}
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@functools.cache
def rendered(stack: str) -> Capture:
    return render_stack(stack)


def judge(resources: list[CapturedResource]) -> tuple[list[str], list[str], set[str]]:
    """(violations, checks that could not run offline, guardrails that applied to something)."""
    violations: list[str] = []
    not_evaluated: list[str] = []
    applied: set[str] = set()
    for resource in resources:
        for guardrail in GUARDRAILS:
            if not guardrail.applies_to(resource.type):
                continue
            applied.add(guardrail.name)
            try:
                messages = guardrail.violations(resource.type, resource.inputs)
            except UnknownValueError as unknown:
                not_evaluated.append(f"{guardrail.name} on {resource.name}: {unknown.message}")
                continue
            violations += [f"{guardrail.name} on {resource.type} {resource.name}: {m}" for m in messages]
    return violations, not_evaluated, applied


@pytest.mark.parametrize("stack", STACKS)
def test_whole_plan_passes_every_guardrail(stack: str) -> None:
    """A pull request that changes a stack is blocked by the policy pack only if the stack is wrong; the
    stacks we ship must pass cleanly, and every guardrail must be able to judge them offline."""
    capture = rendered(stack)
    violations, not_evaluated, applied = judge(capture.resources)
    assert violations == []
    assert not_evaluated == []
    kind = "cloud-run" if capture.of_type(SERVICE) else "gke" if capture.of_type(DEPLOYMENT) else "tpu"
    assert EXPECTED_TO_APPLY[kind] <= applied, f"guardrails that judged nothing: {EXPECTED_TO_APPLY[kind] - applied}"


def _service_inputs(stack: str) -> dict[str, Any]:
    return copy.deepcopy(rendered(stack).one(SERVICE).inputs)


def _first_container(inputs: Mapping[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = inputs["template"]["containers"]
    return containers[0]


@pytest.mark.parametrize("stack", CLOUD_RUN_STACKS)
def test_guardrails_read_the_rendered_shape(stack: str) -> None:
    """The guardrails read the properties where the program really puts them: breaking the rendered
    service (not a hand-written one) is caught."""
    inputs = _service_inputs(stack)
    assert GPU_CPU_ALWAYS_ALLOCATED.violations(SERVICE, inputs) == []
    _first_container(inputs)["resources"]["cpuIdle"] = True
    assert GPU_CPU_ALWAYS_ALLOCATED.violations(SERVICE, inputs)

    inputs = _service_inputs(stack)
    image = _first_container(inputs)["image"]
    assert isinstance(image, str)
    _first_container(inputs)["image"] = image.rsplit(":", 1)[0] + ":latest"
    assert IMAGES_PINNED.violations(SERVICE, inputs)
