"""The queued-resource provider's create/read/update/delete/diff against a fake TPU API on 127.0.0.1."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pulumi.dynamic.dynamic import serialize_provider

from components.tpu.provider import QueuedResourceError, QueuedResourceProvider
from components.tpu.request_body import QueuedResourceSpec, build_request_body, with_fingerprint_label
from tests.components.tpu_fake_api import FAKE_TOKEN, FakeClock, FakeTpuApi, Scenario
from tests.components.tpu_request import SPEC

NAME = "projects/p/locations/us-east5-a/queuedResources/gemma-tpu"


def props_for(spec: QueuedResourceSpec = SPEC, deadline: int = 3600) -> dict[str, Any]:
    return {
        "project": spec.project,
        "zone": spec.zone,
        "queuedResourceId": spec.queued_resource_id,
        "nodeId": spec.node_id,
        "requestBody": build_request_body(spec),
        "activeDeadlineSeconds": deadline,
    }


def test_create_waits_for_active_and_reports_each_state(
    provider: QueuedResourceProvider, api: FakeTpuApi, reports: list[str]
) -> None:
    """`pulumi up` shows the request moving through the queue and ends with the node's address."""
    result = provider.create(props_for())
    assert result.id == NAME
    assert result.outs is not None
    assert result.outs["state"] == "ACTIVE"
    assert result.outs["internalIp"] == "10.128.0.7"
    assert result.outs["externalIp"] == ""
    assert result.outs["queuedResourceName"] == NAME
    seen = [line for line in reports if line.startswith(NAME)]
    assert [line.split(": ")[1].split(" ")[0] for line in seen] == ["WAITING_FOR_RESOURCES", "PROVISIONING", "ACTIVE"]
    (post,) = api.calls("POST")
    # Exactly the planned body, plus the fingerprint label that identifies it after a 409.
    assert post.body == with_fingerprint_label(props_for()["requestBody"])
    assert post.body["tpu"]["nodeSpec"][0]["node"]["labels"]["gemma-spec"]
    assert api.calls("DELETE") == []


def test_the_wait_polls_at_its_interval_through_the_injected_sleep(
    provider: QueuedResourceProvider, api: FakeTpuApi, clock: FakeClock
) -> None:
    """A poll loop that sleeps for real (or not at all) would stall `pulumi up` or hammer the TPU API's quota."""
    provider.create(props_for())
    # Three reads (WAITING_FOR_RESOURCES, PROVISIONING, ACTIVE): a pause of poll_seconds between each two.
    assert len(api.calls("GET", "queuedResources")) == 3
    assert clock.sleeps == [30.0, 30.0]
    api.add_existing(NAME, props_for()["requestBody"], "ACTIVE", Scenario(deleting_polls=2))
    clock.sleeps.clear()
    reads_before = len(api.calls("GET", "queuedResources"))
    provider.delete(NAME, props_for())
    delete_reads = len(api.calls("GET", "queuedResources")) - reads_before
    assert delete_reads >= 2
    assert clock.sleeps == [30.0] * (delete_reads - 1)


def test_create_survives_transient_api_errors(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """503 and 429 from the TPU API while queueing and polling do not fail the deployment."""
    api.scenarios["gemma-tpu"] = Scenario(create_failures=[503, 429], get_failures=[503])
    result = provider.create(props_for())
    assert result.outs is not None
    assert result.outs["state"] == "ACTIVE"
    assert len(api.calls("POST")) == 3


def test_failed_request_reports_googles_reason_and_is_withdrawn(
    provider: QueuedResourceProvider, api: FakeTpuApi
) -> None:
    """A FAILED request says why (Google's message) and is deleted so the next `up` can try again."""
    api.scenarios["gemma-tpu"] = Scenario(
        states=["WAITING_FOR_RESOURCES", "FAILED"], failed_reason="Insufficient preemptible quota for v6e"
    )
    with pytest.raises(QueuedResourceError, match="Insufficient preemptible quota for v6e") as error:
        provider.create(props_for())
    assert "code 8" in str(error.value)
    (delete,) = api.calls("DELETE")
    assert delete.query["force"] == ["true"]
    assert NAME not in api.queued


def test_rejected_operation_is_reported(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """A request Google rejects after the POST never appears; the operation's error is shown instead."""
    api.scenarios["gemma-tpu"] = Scenario(operation_error="Flex-start is not available for v6e-1 in this zone")
    with pytest.raises(QueuedResourceError, match="Flex-start is not available"):
        provider.create(props_for())


def test_deadline_withdraws_the_request(
    provider: QueuedResourceProvider, api: FakeTpuApi, clock: FakeClock, reports: list[str]
) -> None:
    """No capacity within activeDeadline: fail with advice, and leave no queued request billing later."""
    api.scenarios["gemma-tpu"] = Scenario(states=["WAITING_FOR_RESOURCES"])
    provider.heartbeat_seconds = 600.0
    with pytest.raises(QueuedResourceError, match=r"still WAITING_FOR_RESOURCES after 60m.*another zone"):
        provider.create(props_for(deadline=3600))
    assert 3600 <= clock.now < 3600 + 5 * 30 + 1  # the deadline plus the withdrawal's polls
    assert api.calls("DELETE")
    assert NAME not in api.queued
    assert any("still WAITING_FOR_RESOURCES" in line for line in reports)


def test_409_for_our_own_request_adopts_it(
    provider: QueuedResourceProvider, api: FakeTpuApi, reports: list[str]
) -> None:
    """A retried `pulumi up` whose first attempt queued the request picks it up instead of failing."""
    api.add_existing(NAME, with_fingerprint_label(props_for()["requestBody"]), "ACTIVE")
    result = provider.create(props_for())
    assert result.outs is not None
    assert result.outs["state"] == "ACTIVE"
    assert any("adopting" in line for line in reports)
    assert api.calls("DELETE") == []


def test_409_for_someone_elses_request_is_refused(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """A request with the same id but another spec is never taken over or deleted: a clear error instead."""
    other = with_fingerprint_label(build_request_body(replace(SPEC, accelerator_type="v6e-4")))
    api.add_existing(NAME, other, "ACTIVE")
    with pytest.raises(QueuedResourceError, match=r"already exists and was not created from this stack's spec"):
        provider.create(props_for())
    assert api.calls("DELETE") == []
    assert NAME in api.queued


def test_409_for_our_failed_leftover_requeues(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """Our own FAILED or SUSPENDED leftover is deleted and the request queued again."""
    api.add_existing(NAME, with_fingerprint_label(props_for()["requestBody"]), "SUSPENDED")
    result = provider.create(props_for())
    assert result.outs is not None
    assert result.outs["state"] == "ACTIVE"
    assert len(api.calls("DELETE")) == 1
    assert len(api.calls("POST")) == 2


def test_read_reports_live_state_and_gone_requests(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """Refresh sees ACTIVE with addresses; a deleted or flex-start-expired request reads as gone."""
    props = props_for()
    api.add_existing(NAME, props["requestBody"], "ACTIVE")
    live = provider.read(NAME, props)
    assert live.id == NAME
    assert live.outs is not None
    assert live.outs["internalIp"] == "10.128.0.7"
    api.queued[NAME].fixed_state = "SUSPENDED"
    assert provider.read(NAME, props).id == ""
    del api.queued[NAME]
    assert provider.read(NAME, props).id == ""


def test_delete_is_forced_and_waits_until_gone(provider: QueuedResourceProvider, api: FakeTpuApi) -> None:
    """Destroy removes the node with the request and returns only when Google no longer lists it."""
    api.add_existing(NAME, props_for()["requestBody"], "ACTIVE", Scenario(deleting_polls=3))
    provider.delete(NAME, props_for())
    (delete,) = api.calls("DELETE")
    assert delete.query["force"] == ["true"]
    assert NAME not in api.queued
    assert len(api.calls("GET", "queuedResources")) == 4


def test_diff_replaces_on_any_request_change() -> None:
    """Google cannot update a queued resource: a changed script, zone or tier means delete, then create."""
    provider = QueuedResourceProvider()
    olds = props_for()
    assert provider.diff(NAME, olds, props_for()).changes is False
    changed = provider.diff(NAME, olds, props_for(replace(SPEC, startup_script="#!/bin/bash\necho v2\n")))
    assert changed.changes is True
    assert changed.replaces == ["requestBody"]
    assert changed.delete_before_replace is True
    moved = provider.diff(NAME, olds, props_for(replace(SPEC, zone="asia-northeast1-b")))
    assert "zone" in (moved.replaces or [])
    deadline_only = provider.diff(NAME, olds, props_for(deadline=7200))
    assert deadline_only.changes is True
    assert deadline_only.replaces == []


def test_update_keeps_what_was_read_from_google() -> None:
    """A deadline-only update must not lose the node's address from the stack outputs."""
    olds = {**props_for(), "state": "ACTIVE", "internalIp": "10.128.0.7", "queuedResourceName": NAME}
    result = QueuedResourceProvider().update(NAME, olds, props_for(deadline=7200))
    assert result.outs is not None
    assert result.outs["activeDeadlineSeconds"] == 7200
    assert result.outs["internalIp"] == "10.128.0.7"


def test_check_names_missing_inputs() -> None:
    """A malformed resource fails at check time with the missing key, before any API call."""
    props = props_for()
    del props["requestBody"]
    failures = QueuedResourceProvider().check({}, props).failures
    assert [failure.property for failure in failures] == ["requestBody"]


def test_provider_serializes_without_credentials() -> None:
    """Pulumi pickles the provider into the state: it must pickle, and carry no token or client."""
    blob = serialize_provider(QueuedResourceProvider())
    assert blob
    assert FAKE_TOKEN not in blob
