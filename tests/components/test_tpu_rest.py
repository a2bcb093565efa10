"""The TPU REST client against a local fake API: auth, retries on 429/5xx only, errors with Google's words."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from components.tpu.rest import TpuApiError, TpuRestClient
from remote.google_client import RetryPolicy
from tests.components.tpu_fake_api import FAKE_TOKEN, FakeClock, FakeTpuApi, Scenario

PARENT = "projects/p/locations/us-east5-a"
BODY = {"tpu": {"nodeSpec": [{"parent": PARENT, "nodeId": "n1", "node": {"networkConfig": {}}}]}}


@pytest.fixture
def api() -> Iterator[FakeTpuApi]:
    with FakeTpuApi() as fake:
        yield fake


def client_for(api: FakeTpuApi, clock: FakeClock, attempts: int = 6) -> TpuRestClient:
    return TpuRestClient(lambda: FAKE_TOKEN, base_url=api.base_url, sleep=clock.sleep, retry=RetryPolicy(attempts))


def test_create_sends_body_id_and_bearer_token(api: FakeTpuApi) -> None:
    """The POST carries the queued-resource id, an idempotency request id, the body and the token."""
    clock = FakeClock()
    with client_for(api, clock) as client:
        operation = client.create_queued_resource(PARENT, "qr1", BODY)
    assert operation["name"].endswith("/operations/create-qr1")
    (post,) = api.calls("POST")
    assert post.query["queuedResourceId"] == ["qr1"]
    assert post.query["requestId"][0]
    assert post.body == BODY
    assert post.authorization == f"Bearer {FAKE_TOKEN}"


def test_transient_503_and_429_are_retried_with_backoff(api: FakeTpuApi) -> None:
    """A busy API (503, then 429 with Retry-After) must not fail a deployment that would succeed."""
    api.scenarios["qr1"] = Scenario(create_failures=[503, 429, 503])
    clock = FakeClock()
    with client_for(api, clock) as client:
        client.create_queued_resource(PARENT, "qr1", BODY)
    posts = api.calls("POST")
    assert len(posts) == 4
    # One request id for every attempt: Google sees retries of one request, not four requests.
    assert len({post.query["requestId"][0] for post in posts}) == 1
    assert len(clock.sleeps) == 3
    assert clock.sleeps[1] == 0.0  # the 429 said Retry-After: 0
    assert 0.5 <= clock.sleeps[0] <= 1.0
    assert 2.0 <= clock.sleeps[2] <= 4.0


def test_client_errors_are_never_retried(api: FakeTpuApi) -> None:
    """A 400 is about the request itself; repeating it only delays Google's message to the user."""
    api.scenarios["qr1"] = Scenario(create_rejection=(400, "acceleratorType v6e-3 is not supported"))
    clock = FakeClock()
    with client_for(api, clock) as client, pytest.raises(TpuApiError) as error:
        client.create_queued_resource(PARENT, "qr1", BODY)
    assert error.value.status == 400
    assert "acceleratorType v6e-3 is not supported" in str(error.value)
    assert len(api.calls("POST")) == 1
    assert clock.sleeps == []


def test_gives_up_after_the_configured_attempts(api: FakeTpuApi) -> None:
    """An API that keeps answering 503 ends in an error naming the last answer, after bounded retries."""
    api.scenarios["qr1"] = Scenario(create_failures=[503] * 10)
    clock = FakeClock()
    with client_for(api, clock, attempts=3) as client, pytest.raises(TpuApiError, match="after 3 attempts"):
        client.create_queued_resource(PARENT, "qr1", BODY)
    assert len(api.calls("POST")) == 3
    assert len(clock.sleeps) == 2


def test_missing_resources_read_as_none(api: FakeTpuApi) -> None:
    """404 on GET/DELETE means 'not there', which refresh and destroy treat as gone, not as a failure."""
    clock = FakeClock()
    with client_for(api, clock) as client:
        assert client.get_queued_resource(f"{PARENT}/queuedResources/nope") is None
        assert client.delete_queued_resource(f"{PARENT}/queuedResources/nope") is None
        assert client.get_node(f"{PARENT}/nodes/nope") is None


def test_wrong_credentials_fail_at_once(api: FakeTpuApi) -> None:
    """A 401 (expired or missing credentials) is reported, not retried."""
    clock = FakeClock()
    client = TpuRestClient(lambda: "wrong", base_url=api.base_url, sleep=clock.sleep)
    with client, pytest.raises(TpuApiError) as error:
        client.get_queued_resource(f"{PARENT}/queuedResources/x")
    assert error.value.status == 401
    assert len(api.requests) == 1


def test_unreachable_api_is_retried_then_reported() -> None:
    """Dropped connections count as transient; the final error says what kept failing."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clock = FakeClock()
    client = TpuRestClient(
        lambda: FAKE_TOKEN, base_url=f"http://127.0.0.1:{port}/v2alpha1", sleep=clock.sleep, retry=RetryPolicy(2)
    )
    with client, pytest.raises(TpuApiError, match="ConnectError"):
        client.get_queued_resource(f"{PARENT}/queuedResources/x")
    assert len(clock.sleeps) == 1
