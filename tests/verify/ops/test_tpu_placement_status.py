"""`verify status` for a TPU stack with placements: where the request is, the moves before it, and a node
that is gone (preempted spot, ended flex-start) with what the user runs to get it back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.tpu.provider import QueuedResourceProvider
from preview.render import clean
from remote.google_client import GoogleApis
from tests.components.tpu_fake_api import FAKE_TOKEN, FakeClock, FakeTpuApi, Scenario
from tests.conftest import render_stack
from tests.verify.ops.google_fake import FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, ops_stack
from tests.verify.ops.test_status import _now, _ready_probe
from verify.ops.status import RolloutState, StatusReport, run_status

FALLBACK = "tpu-v6e-fallback"  # examples/: flex-start in us-east5-a, then spot in europe-west4-a
ID = "gemma-tpu-v6e-fallback-vllm"
IN_US = rf"/tpu/v2/projects/{PROJECT}/locations/us-east5-a/queuedResources/{ID}"
IN_EU = rf"/tpu/v2/projects/{PROJECT}/locations/europe-west4-a/queuedResources/{ID}"
NODE_EU = rf"/tpu/v2/projects/{PROJECT}/locations/europe-west4-a/nodes/{ID}"


def status(fake: FakeGoogle, stack: str, probe: object = None) -> StatusReport:
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_status(ops_stack(stack), apis, probe=probe, now=_now)  # type: ignore[arg-type]


def test_waiting_in_the_second_placement_shows_the_first_ones_reason(fake: FakeGoogle) -> None:
    """Mid `pulumi up`: placement 2 waits; status names it, the quota refusal before it, and the time left."""
    fake.route("GET", IN_EU, fixture("tpu_queued_placement2_waiting.json"))
    report = status(fake, FALLBACK)
    assert report.state is RolloutState.IN_PROGRESS
    assert report.tpu is not None
    placement = report.tpu.placement
    assert placement is not None
    assert (placement.placement, placement.of, placement.zone, placement.provisioning) == (
        2,
        2,
        "europe-west4-a",
        "spot",
    )
    [attempt] = placement.attempts
    assert (attempt.zone, attempt.outcome) == ("us-east5-a", "quota")
    assert "TPUV6EPreemptiblePerProjectPerZoneForTPUAPI" in attempt.reason
    assert placement.left_in_list_s == 90 * 60  # created 11:00, 2h deadline, now 11:30, no placement after it
    assert "WAITING_FOR_RESOURCES (placement 2 of 2 (europe-west4-a spot) after 1. us-east5-a flex-start: quota:" in (
        report.summary
    )
    assert "no v6e-1 capacity for spot in europe-west4-a yet" in report.summary


def test_waiting_in_the_first_placement_counts_the_deadlines_after_it(fake: FakeGoogle) -> None:
    """Placement 1 of 2 with 30 min left: `pulumi up` may wait 30 min here, then 2 h in the second."""
    waiting = fixture("tpu_queued_waiting.json")
    waiting["name"] = waiting["name"].replace("gemma-tpu-v6e-vllm", ID)
    fake.route("GET", IN_US, waiting)
    report = status(fake, FALLBACK)
    assert report.tpu is not None
    assert report.tpu.placement is not None
    assert report.tpu.placement.attempts == []
    assert report.tpu.placement.left_in_list_s == 30 * 60 + 2 * 3600


def test_no_request_in_any_placement_is_not_deployed_naming_each_zone(fake: FakeGoogle) -> None:
    """Nothing queued anywhere: not deployed, and the zones looked in are named."""
    report = status(fake, FALLBACK)
    assert report.state is RolloutState.NOT_DEPLOYED
    assert report.summary == f"no queued resource {ID} in us-east5-a, europe-west4-a"


def test_a_preempted_spot_node_is_gone_with_the_command_that_brings_it_back(fake: FakeGoogle) -> None:
    """Google took the spot node back: status says so, and that `pulumi up --refresh` re-queues through the list."""
    active = dict(fixture("tpu_queued_active.json"), name=IN_EU.removeprefix("/tpu/v2/"))
    fake.route("GET", IN_EU, active)
    fake.route("GET", NODE_EU, dict(fixture("tpu_node_ready.json"), state="PREEMPTED", health="HEALTH_UNSPECIFIED"))
    report = status(fake, FALLBACK)
    assert report.state is RolloutState.FAILED
    assert report.summary == "node gone: Google preempted the spot node"
    assert (report.fix or "").startswith(
        f"pulumi up --refresh --stack {FALLBACK} queues a new node through tpu.placements, in order"
    )


def test_an_ended_flex_start_run_is_gone_and_says_why(fake: FakeGoogle) -> None:
    """The 4 h run is over: the request is SUSPENDED by Google, the node deleted; status says it, and the fix."""
    fake.route(
        "GET",
        rf"/tpu/v2/projects/{PROJECT}/locations/us-east5-a/queuedResources/gemma-tpu-v6e-vllm",
        fixture("tpu_queued_suspended.json"),
    )
    report = status(fake, "tpu-v6e")
    assert report.state is RolloutState.FAILED
    assert "node gone: the flex-start run ended (tpu.provisioning.maxRunDuration)" in report.summary
    assert (report.fix or "").startswith("pulumi up --refresh --stack tpu-v6e queues a new node:")


@pytest.fixture
def tpu_api() -> Iterator[FakeTpuApi]:
    with FakeTpuApi() as api:
        api.addresses["europe-west4-a"] = "10.164.0.9"
        yield api


def test_a_refusal_in_the_first_placement_leads_to_a_node_in_the_second_seen_by_status(
    fake: FakeGoogle, tpu_api: FakeTpuApi
) -> None:
    """End to end: the provider is refused quota in us-east5-a and gets a node in europe-west4-a; status reads
    that request (as the TPU API returns what was POSTed) and reports the node there, with the refusal."""
    tpu_api.zone_scenarios["us-east5-a"] = Scenario(
        states=["FAILED"], failed_reason="Quota 'TPUV6EPreemptiblePerProjectPerZoneForTPUAPI' exhausted", failed_code=8
    )
    clock = FakeClock()
    provider = QueuedResourceProvider(
        base_url=tpu_api.base_url,
        token_provider=lambda: FAKE_TOKEN,
        sleep=clock.sleep,
        clock=clock.monotonic,
        report=lambda _line: None,
    )
    props = _example_props()
    created = provider.create(props)
    assert created.outs is not None
    assert created.outs["placementZone"] == "europe-west4-a"
    posted: dict[str, Any] = tpu_api.calls("POST", "europe-west4-a")[0].body
    fake.route(
        "GET",
        IN_EU,
        {
            **posted,
            "name": created.id,
            "createTime": "2026-11-23T11:00:00Z",
            "state": {"state": "ACTIVE", "stateInitiator": "SERVICE"},
        },
    )
    node = dict(
        fixture("tpu_node_ready.json"), networkEndpoints=[{"ipAddress": created.outs["internalIp"], "port": 8470}]
    )
    fake.route("GET", NODE_EU, node)
    calls: list[tuple[str, str]] = []
    report = status(fake, FALLBACK, _ready_probe(calls))
    assert report.state is RolloutState.READY
    assert report.tpu is not None
    assert report.tpu.endpoint == "http://10.164.0.9:8000"
    assert report.tpu.placement is not None
    assert report.tpu.placement.zone == "europe-west4-a"
    assert [a.outcome for a in report.tpu.placement.attempts] == ["quota"]


def _example_props() -> dict[str, Any]:
    """The queued resource's inputs as the example stack's program registers them (rendered offline)."""
    capture = render_stack(FALLBACK)
    [queued] = [r for r in capture.resources if r.type == "pulumi-python:dynamic/tpu:QueuedResource"]
    props = dict(clean(queued.inputs))
    props.pop("__provider", None)
    props["project"] = PROJECT
    return props
