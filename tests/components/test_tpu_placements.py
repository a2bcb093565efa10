"""The queued-resource provider moving through tpu.placements against the fake TPU API on 127.0.0.1.

Each test is a way a user's `pulumi up` used to end with no node and a manual hunt for another zone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from components.tpu.placements import placements_of
from components.tpu.provider import QueuedResourceError, QueuedResourceProvider
from components.tpu.queued_resource import QueuedResourceArgs
from components.tpu.request_body import (
    PLACEMENT_METADATA_KEY,
    Placement,
    Spot,
    build_request_body,
    with_fingerprint_label,
)
from tests.components.tpu_fake_api import FakeClock, FakeTpuApi, Scenario
from tests.components.tpu_request import SPEC

FIRST = "projects/p/locations/us-east5-a/queuedResources/gemma-tpu"
SECOND = "projects/p/locations/europe-west4-a/queuedResources/gemma-tpu"
QUOTA = "Quota 'TPUV6EPreemptiblePerProjectPerZoneForTPUAPI' exhausted: limit 0 in zone us-east5-a"


def two_placements(deadline: int = 3600) -> dict[str, Any]:
    """flex-start in us-east5-a, then spot in europe-west4-a, as deploy/tpu.py passes a two-placement stack."""
    args = QueuedResourceArgs(
        **vars(SPEC), active_deadline_seconds=deadline, fallbacks=[Placement("europe-west4-a", Spot())]
    )
    return {
        "project": args.project,
        "zone": args.zone,
        "queuedResourceId": args.queued_resource_id,
        "nodeId": args.node_id,
        "requestBody": build_request_body(args),
        "activeDeadlineSeconds": deadline,
        "placements": args.placements(),
    }


@pytest.fixture(autouse=True)
def _europe_has_its_own_address(api: FakeTpuApi) -> None:
    """So a test can tell which placement's node the endpoint follows."""
    api.addresses["europe-west4-a"] = "10.164.0.9"


def test_a_placement_is_the_first_body_moved_to_its_zone_and_tier() -> None:
    """The second placement asks for the same node in its own zone, as spot, and nothing else changes."""
    first, second = placements_of(two_placements())
    assert first.body == build_request_body(SPEC)
    assert second.body == build_request_body(replace(SPEC, zone="europe-west4-a", provisioning=Spot()))


def test_quota_refusal_in_the_first_placement_lands_the_node_in_the_second(
    provider: QueuedResourceProvider, api: FakeTpuApi, reports: list[str]
) -> None:
    """First zone has no quota (FAILED, RESOURCE_EXHAUSTED): withdrawn, the second zone's node is the endpoint."""
    api.zone_scenarios["us-east5-a"] = Scenario(states=["FAILED"], failed_reason=QUOTA, failed_code=8)
    result = provider.create(two_placements())
    assert result.id == SECOND
    assert result.outs is not None
    assert (result.outs["placementZone"], result.outs["placementModel"]) == ("europe-west4-a", "spot")
    assert result.outs["internalIp"] == "10.164.0.9"
    assert result.outs["attempts"] == [
        {"zone": "us-east5-a", "provisioningModel": "flex-start", "outcome": "quota", "reason": f"{QUOTA} (code 8)"}
    ]
    assert FIRST not in api.queued  # withdrawn, so it cannot turn ACTIVE later and bill
    first_post, second_post = api.calls("POST")
    assert first_post.path.endswith("/us-east5-a/queuedResources")
    assert second_post.body["spot"] == {}
    # The second request carries the first's outcome, for `verify status` to read while it waits.
    history = json.loads(second_post.body["tpu"]["nodeSpec"][0]["node"]["metadata"][PLACEMENT_METADATA_KEY])
    assert history["placement"] == 2
    assert history["attempts"][0]["outcome"] == "quota"
    assert any("moving on to placement 2: europe-west4-a spot" in line for line in reports)
    assert any("placement 2 of 2 (europe-west4-a spot) granted" in line for line in reports)


def test_a_refused_post_moves_on_too(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """A request Google refuses outright (403 quota exceeded) is a move, not the end of `pulumi up`."""
    api.zone_scenarios["us-east5-a"] = Scenario(create_rejection=(403, "Quota exceeded for TPU v6e preemptible"))
    result = provider.create(two_placements())
    assert result.outs is not None
    assert result.outs["placementZone"] == "europe-west4-a"
    assert result.outs["attempts"][0]["outcome"] == "quota"


def test_the_deadline_passing_mid_wait_moves_to_the_next_placement(
    provider: QueuedResourceProvider, api: FakeTpuApi, clock: FakeClock
) -> None:
    """Still WAITING_FOR_RESOURCES at tpu.activeDeadline: withdrawn there, and the second zone is asked."""
    api.zone_scenarios["us-east5-a"] = Scenario(states=["WAITING_FOR_RESOURCES"])
    result = provider.create(two_placements(deadline=1800))
    assert result.outs is not None
    assert result.outs["placementZone"] == "europe-west4-a"
    [attempt] = result.outs["attempts"]
    assert attempt["outcome"] == "deadline"
    assert "still WAITING_FOR_RESOURCES after 30m" in attempt["reason"]
    assert 1800 <= clock.now < 1800 + 10 * 30
    assert FIRST not in api.queued


def test_every_placement_failing_is_one_error_listing_each_reason(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    """No zone gives a node: one error names both placements and why, and nothing is left queued."""
    api.zone_scenarios["us-east5-a"] = Scenario(states=["FAILED"], failed_reason=QUOTA, failed_code=8)
    api.zone_scenarios["europe-west4-a"] = Scenario(states=["WAITING_FOR_RESOURCES"])
    with pytest.raises(QueuedResourceError) as caught:
        provider.create(two_placements(deadline=900))
    message = str(caught.value)
    assert "no placement brought a TPU node (2 tried" in message
    assert f"1. us-east5-a flex-start: quota: {QUOTA}" in message
    assert "2. europe-west4-a spot: deadline: still WAITING_FOR_RESOURCES after 15m" in message
    assert "verify preflight" in message
    assert api.queued == {}


def test_spot_preemption_then_pulumi_up_requeues_through_the_list(
    provider: QueuedResourceProvider, api: FakeTpuApi, reports: list[str]
) -> None:
    """A preempted spot node reads as gone on refresh; the next create clears it and starts from the first."""
    api.zone_scenarios["us-east5-a"] = Scenario(states=["FAILED"], failed_reason=QUOTA, failed_code=8)
    props = two_placements()
    placed = provider.create(props)
    assert placed.outs is not None
    api.queued[SECOND].scenario.node_state = "PREEMPTED"
    # `pulumi up --refresh`: the read says why and drops the resource from the state...
    assert provider.read(placed.id or "", placed.outs).id == ""
    assert any("its node is PREEMPTED (a spot node Google preempted)" in line for line in reports)
    # ...and the create that follows deletes the dead request and asks the placements in order again.
    api.zone_scenarios["us-east5-a"] = Scenario()
    again = provider.create(props)
    assert again.id == FIRST
    assert again.outs is not None
    assert again.outs["placementZone"] == "us-east5-a"
    assert SECOND not in api.queued
    assert any(
        line.startswith(f"{SECOND}: our earlier request is ACTIVE but its node is PREEMPTED") for line in reports
    )


def test_an_interrupted_up_takes_up_its_request_in_the_later_placement(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    """`pulumi up` killed while placement 2 waited: the retry adopts it instead of asking zone 1 for a second node."""
    second = placements_of(two_placements())[1]
    api.add_existing(SECOND, with_fingerprint_label(second.body), "ACTIVE")
    result = provider.create(two_placements())
    assert result.id == SECOND
    assert api.calls("POST", "us-east5-a") == []


def test_a_single_placement_keeps_its_own_error(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """A stack without tpu.placements fails as it always has: Google's reason and the advice, no list."""
    api.scenarios["gemma-tpu"] = Scenario(states=["FAILED"], failed_reason=QUOTA)
    props = {key: value for key, value in two_placements().items() if key != "placements"}
    with pytest.raises(QueuedResourceError, match=r"FAILED: Quota .* Check the TPU quota for the tier"):
        provider.create(props)


def test_changing_the_list_never_replaces_a_running_node() -> None:
    """Adding a fallback changes where a future re-queue asks, not the node that already serves."""
    olds = two_placements()
    news = {**olds, "placements": [*olds["placements"], {**olds["placements"][1], "zone": "us-east1-d"}]}
    diff = QueuedResourceProvider().diff("id", olds, news)
    assert diff.changes is True
    assert diff.replaces == []
