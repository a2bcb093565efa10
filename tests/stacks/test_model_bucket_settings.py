"""A bucket setting means the same on every platform.

The GKE deploy built its own model bucket without `bucket.name`, so a GKE stack that named its bucket
got a Pulumi-named one instead, with no word: the setting was accepted and ignored. Every platform now
makes the bucket through one function.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import render_stack

BUCKET = "gcp:storage/bucket:Bucket"


@pytest.mark.parametrize("stack", ["l4", "tpu-v6e", "gke-tpu-v6e"])
def test_a_named_bucket_is_named_on_every_platform(stack: str) -> None:
    """`bucket.name` reaches the bucket Google creates, whatever the platform."""
    capture = render_stack(stack, {"gemma-serving:bucket": json.dumps({"name": "team-gemma-weights-1"})})
    assert capture.one(BUCKET).inputs["name"] == "team-gemma-weights-1"
