"""VllmGpuService's rollout on its own: revision names derived from the template, and the traffic split."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from components.vllm_gpu_service import DirectRollout, GatedRollout, VllmGpuService
from preview.capture import Capture
from tests.components.test_vllm_gpu_service import args

SERVICE = "gcp:cloudrunv2/service:Service"
REVISION_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")

Register = Callable[[Callable[[], object]], Capture]


def revision_of(register: Register, **changes: object) -> str:
    capture = register(lambda: VllmGpuService("svc", args(**changes)))
    # One capture per test: the service this call registered is the last one.
    newest = [resource for resource in capture.resources if resource.type == SERVICE][-1]
    revision = newest.inputs["template"]["revision"]
    assert isinstance(revision, str)
    return revision


def test_the_same_template_names_the_same_revision(register: Register) -> None:
    """Guards against a re-run of `pulumi up` creating (and gating) a new revision when nothing changed."""
    first = revision_of(register)
    again = revision_of(register)
    assert first == again
    assert first.startswith("svc-")
    assert REVISION_NAME.match(first)
    assert len(first) == len("svc-") + 10


def test_any_change_to_the_template_names_a_new_revision(register: Register) -> None:
    """Guards against a changed image or vLLM flag reusing the serving revision's name (Cloud Run refuses that)."""
    base = revision_of(register)
    assert revision_of(register, image="vllm/vllm-openai:v0.32.1") != base
    serve_args = ["/mnt/models/m", "--served-model-name", "m", "--port", "8000", "--max-num-seqs", "16", "--seed", "1"]
    assert revision_of(register, serve_args=serve_args) != base


def test_invoker_changes_do_not_make_a_revision(register: Register) -> None:
    """Guards against IAM-only changes forcing a new candidate through the gates (they are not in the template)."""
    assert revision_of(register, invokers=()) == revision_of(register)


def test_gated_split_names_both_revisions(register: Register) -> None:
    """Guards against the serving revision losing its share, or the candidate arriving without its tag."""
    rollout = GatedRollout(serving_revision="svc-0a1b2c3d4e", candidate_percent=10)
    capture = register(lambda: VllmGpuService("svc", args(rollout=rollout)))
    inputs = capture.one(SERVICE).inputs
    revision = inputs["template"]["revision"]
    assert inputs["traffics"] == [
        {"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION", "revision": "svc-0a1b2c3d4e", "percent": 90},
        {"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION", "revision": revision, "percent": 10, "tag": "candidate"},
    ]
    assert inputs["name"] == "svc"


def test_direct_rollout_sends_all_traffic_to_the_latest_revision(register: Register) -> None:
    """Guards against `rollout: direct` keeping a stale candidate tag or split."""
    capture = register(lambda: VllmGpuService("svc", args(rollout=DirectRollout())))
    assert capture.one(SERVICE).inputs["traffics"] == [
        {"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100}
    ]


@pytest.mark.parametrize("percent", [-1, 100])
def test_candidate_share_outside_0_to_99_is_refused(percent: int) -> None:
    """Guards against a split that would not add up (promotion to 100% names the candidate as serving)."""
    with pytest.raises(ValueError, match="candidate_percent must be 0 to 99"):
        GatedRollout(serving_revision="svc-0a1b2c3d4e", candidate_percent=percent)


def test_service_name_must_leave_room_for_revision_names() -> None:
    """Guards against a service name Cloud Run refuses, or one whose revision names would pass 63 characters."""
    with pytest.raises(ValueError, match="'Gemma_L4' is not a Cloud Run service name"):
        args(service_name="Gemma_L4")
    with pytest.raises(ValueError, match="at most 49 characters"):
        args(service_name="a" * 50)
