"""The offline plan of a TPU stack with placements, and of flex-start outside Google's published zones."""

from __future__ import annotations

import json

import yaml

from preview.costs import cost_section
from preview.notes import manual_steps
from preview.tpu_plan import tpu_section
from tests.conftest import ROOT, render_stack

FALLBACK = "tpu-v6e-fallback"  # examples/Pulumi.tpu-v6e-fallback.yaml


def test_two_placements_preview_with_both_zones_and_the_worst_case_price() -> None:
    """The example's plan names both zones, the quota each needs, a NAT in each region, and the dearest price."""
    capture = render_stack(FALLBACK)  # the session's render of the example, shared with the all-stacks tests
    text = "\n".join([*manual_steps(capture), *tpu_section(capture), *cost_section(capture)])
    assert "1. us-east5-a flex-start, max run duration 14400s" in text
    assert "2. europe-west4-a spot (preemptible at any time" in text
    assert "2. europe-west4-a spot: preemptible TPU v6e quota in europe-west4-a" in text
    assert {r.name for r in capture.resources if r.type == "gcp:compute/routerNat:RouterNat"} == {
        "gemma-tpu-v6e-fallback-vllm-nat",
        "gemma-tpu-v6e-fallback-vllm-nat-europe-west4",
    }
    assert "basis:         TPU v6e-1 (1 chip(s)), spot, europe-west4" in text
    assert "1. us-east5-a flex-start $1.35/h; 2. europe-west4-a spot $1.78/h; priced above: the worst case" in text


def test_flex_start_outside_the_table_previews_with_a_warning() -> None:
    """Flex-start in us-east5-b (not in Google's published list) is planned, with the warning to check it live."""
    tpu = yaml.safe_load((ROOT / "Pulumi.tpu-v6e.yaml").read_text())["config"]["gemma-serving:tpu"]
    capture = render_stack("tpu-v6e", {"gemma-serving:tpu": json.dumps({**tpu, "zone": "us-east5-b"})})
    warnings = [message for severity, message in capture.logs if severity == "warning"]
    assert any(
        message.startswith("quota: tpu.zone: flex-start in us-east5-b is not in Google's published flex-start zones")
        for message in warnings
    ), warnings
    [queued] = [r for r in capture.resources if r.type == "pulumi-python:dynamic/tpu:QueuedResource"]
    assert queued.inputs["zone"] == "us-east5-b"
