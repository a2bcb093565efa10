"""`pulumi destroy` of each stack keeps and drops what the README's "Tear a stack down" section says.

Under the mocks a destroy cannot run, but what it does is decided by inputs the engine receives at
registration: `forceDestroy` (a bucket holding objects is refused unless it is set), `disableOnDestroy`
(APIs), `deletionProtection` (Cloud Run refuses to delete), and the `retainOnDelete` / `protect` options.
"""

from __future__ import annotations

import json

import pytest

from preview.capture import Capture
from preview.render import clean
from tests.conftest import render_stack

STACKS = ["l4", "rtx6000", "tpu-v6e"]
BUCKET = "gcp:storage/bucket:Bucket"


def _inputs(capture: Capture, type_token: str) -> list[dict[str, object]]:
    return [dict(clean(resource.inputs)) for resource in capture.of_type(type_token)]


@pytest.mark.parametrize("stack", STACKS)
def test_destroy_keeps_the_weights_bucket_by_default(stack: str) -> None:
    """The model bucket refuses deletion while it holds weights (forceDestroy off), so `pulumi destroy`
    never throws away tens of GB of imported weights by accident."""
    (bucket,) = _inputs(render_stack(stack), BUCKET)
    assert bucket.get("forceDestroy") is False


@pytest.mark.parametrize("stack", STACKS)
def test_bucket_force_destroy_lets_destroy_delete_the_weights(stack: str) -> None:
    """`gemma-serving:bucket: {forceDestroy: true}` is the documented switch that lets destroy delete them."""
    capture = render_stack(stack, {"gemma-serving:bucket": json.dumps({"forceDestroy": True})})
    (bucket,) = _inputs(capture, BUCKET)
    assert bucket.get("forceDestroy") is True


@pytest.mark.parametrize("stack", STACKS)
def test_destroy_leaves_the_apis_enabled(stack: str) -> None:
    """Disabling run/storage/iam on destroy would break every other workload in the project."""
    apis = _inputs(render_stack(stack), "gcp:projects/service:Service")
    assert apis
    assert all(api.get("disableOnDestroy") is False for api in apis)


@pytest.mark.parametrize("stack", STACKS)
def test_destroy_removes_everything_else(stack: str) -> None:
    """Nothing that bills by the hour survives a destroy: no resource is retained or protected, Cloud Run
    services and jobs are deletable, and the import folders go (their objects stay with the bucket)."""
    capture = render_stack(stack)
    kept = [r.name for r in capture.resources if r.retain_on_delete or r.protect]
    assert kept == []
    for type_token in ("gcp:cloudrunv2/service:Service", "gcp:cloudrunv2/job:Job"):
        assert all(resource.get("deletionProtection") is False for resource in _inputs(capture, type_token))
    folders = _inputs(capture, "gcp:storage/managedFolder:ManagedFolder")
    assert folders
    assert all(folder.get("forceDestroy") is True for folder in folders)
