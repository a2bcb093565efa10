"""The queued-resource provider leaves no request of its own queued at Google that no state tracks.

The red team's findings: after transient 429s the provider gave up with its request still queued (Google had
carried out the POST; every answer after was 429), so it could turn ACTIVE later and bill for a TPU nobody
manages; and a request that turned SUSPENDED while it waited stayed behind when the provider moved on to the
next placement. Pulumi records nothing from a failed create, so each way out of a placement must withdraw
the request, or name it in the error when Google cannot be told.
"""

from __future__ import annotations

import pytest

from components.tpu.provider import QueuedResourceError, QueuedResourceProvider
from tests.components.test_tpu_placements import FIRST, SECOND, two_placements
from tests.components.test_tpu_provider import NAME, props_for
from tests.components.tpu_fake_api import FakeTpuApi, Scenario

# More 429s than the client's RetryPolicy attempts (6): the call gives up.
GIVE_UP = [429] * 6


def test_a_post_carried_out_behind_429s_is_withdrawn_before_the_next_placement(
    provider: QueuedResourceProvider, api: FakeTpuApi, reports: list[str]
) -> None:
    """Google created zone 1's request but answered 429 to every try: it must not stay queued while zone 2
    gives the node (two TPUs billing, one of them unknown to the state)."""
    api.zone_scenarios["us-east5-a"] = Scenario(lost_create_answers=list(GIVE_UP))
    result = provider.create(two_placements())
    assert result.id == SECOND
    assert FIRST not in api.queued
    assert api.calls("DELETE", "us-east5-a")
    assert any(line.startswith(f"{FIRST}: withdrawing our request") for line in reports)


def test_a_single_placement_refused_after_429s_leaves_nothing_queued(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    api.scenarios["gemma-tpu"] = Scenario(lost_create_answers=list(GIVE_UP))
    with pytest.raises(QueuedResourceError, match="429"):
        provider.create(props_for())
    assert api.queued == {}


def test_a_request_suspended_while_waiting_is_withdrawn_when_moving_on(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    """SUSPENDED before ACTIVE: the next placement is tried and the suspended request is deleted."""
    api.zone_scenarios["us-east5-a"] = Scenario(states=["WAITING_FOR_RESOURCES", "SUSPENDED"])
    result = provider.create(two_placements())
    assert result.id == SECOND
    assert result.outs is not None
    assert result.outs["attempts"][0]["outcome"] == "ended"
    assert FIRST not in api.queued


def test_status_reads_that_keep_answering_429_end_with_the_request_withdrawn(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    """The wait's status read gives up after repeated 429s: the error propagates, the request does not stay."""
    api.scenarios["gemma-tpu"] = Scenario(get_failures=list(GIVE_UP))
    with pytest.raises(Exception, match="429"):
        provider.create(props_for())
    assert api.queued == {}
    assert api.calls("DELETE")


def test_when_google_cannot_be_told_the_error_names_the_request(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    """The withdrawal itself keeps failing: the user learns the request's name and the command, not the bill."""
    api.scenarios["gemma-tpu"] = Scenario(get_failures=[*GIVE_UP, *GIVE_UP])
    with pytest.raises(QueuedResourceError) as caught:
        provider.create(props_for())
    message = str(caught.value)
    assert f"{NAME} may still be queued at Google and no Pulumi state tracks it" in message
    assert "queued-resources delete gemma-tpu --zone us-east5-a --force" in message
    assert "verify status" in message


def test_someone_elses_request_is_never_withdrawn(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """A 409 for a request of another spec moves on, and leaves that request alone."""
    api.add_existing(FIRST, {"tpu": {"nodeSpec": [{"node": {"labels": {"gemma-spec": "other"}}}]}}, "ACTIVE")
    result = provider.create(two_placements())
    assert result.id == SECOND
    assert FIRST in api.queued
    assert api.calls("DELETE", "us-east5-a") == []
