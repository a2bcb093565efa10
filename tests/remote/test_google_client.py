"""The one Google REST client's call semantics that its two kinds of caller depend on.

verify's reads are tried once (a reader says "could not check" and the user runs it again); the TPU
provider's `pulumi up` passes a RetryPolicy so a minute of 503s does not fail a deployment. Both go
through `GoogleApis.call`, so a change to one kind's semantics shows here, not only in their own tests.
"""

from __future__ import annotations

import httpx
import pytest

from remote.google_client import GoogleApis, RetryPolicy
from remote.google_errors import CannotCheckError, GaveUpError, GoogleApiError

UNAVAILABLE = {"error": {"code": 503, "message": "try again", "status": "UNAVAILABLE"}}


def _apis(answers: list[httpx.Response], seen: list[httpx.Request], retry: RetryPolicy | None) -> GoogleApis:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    sleeps: list[float] = []
    return GoogleApis(
        lambda: ("token", "quota-project"),
        api_root="http://127.0.0.1:9",
        transport=httpx.MockTransport(answer),
        retry=retry,
        sleep=sleeps.append,
    )


def test_a_read_is_tried_once_and_ends_in_googles_error() -> None:
    """Guards against a reader that waits through retries the user did not ask for (it reports and exits)."""
    seen: list[httpx.Request] = []
    with (
        _apis([httpx.Response(503, json=UNAVAILABLE)], seen, retry=None) as apis,
        pytest.raises(GoogleApiError) as error,
    ):
        apis.get("tpu", "projects/p/locations/z/nodes/n")
    assert (error.value.code, error.value.status, error.value.message) == (503, "UNAVAILABLE", "try again")
    assert len(seen) == 1
    assert seen[0].headers["authorization"] == "Bearer token"
    assert seen[0].headers["x-goog-user-project"] == "quota-project"
    assert str(seen[0].url) == "http://127.0.0.1:9/tpu/v2/projects/p/locations/z/nodes/n"


def test_a_change_retries_transient_answers_with_the_same_request() -> None:
    """Guards against a retried create that Google sees as two requests (its request id must not change)."""
    seen: list[httpx.Request] = []
    answers = [httpx.Response(503, json=UNAVAILABLE), httpx.Response(429), httpx.Response(200, json={"name": "op"})]
    with _apis(answers, seen, retry=RetryPolicy(attempts=3)) as apis:
        answer = apis.call("POST", "tpu", "projects/p/queuedResources", params={"requestId": "r1"}, body={"a": 1})
    assert answer == {"name": "op"}
    assert [request.url.params["requestId"] for request in seen] == ["r1", "r1", "r1"]
    assert {request.content for request in seen} == {b'{"a":1}'}


def test_a_change_gives_up_naming_the_last_answer() -> None:
    """Guards against a deployment that retries forever, or fails without saying what kept failing."""
    seen: list[httpx.Request] = []
    answers = [httpx.Response(503, json=UNAVAILABLE)] * 2
    with _apis(answers, seen, retry=RetryPolicy(attempts=2)) as apis, pytest.raises(GaveUpError) as error:
        apis.call("DELETE", "tpu", "projects/p/queuedResources/q")
    assert error.value.status == 503
    assert "after 2 attempts" in str(error.value)
    assert "UNAVAILABLE: try again" in str(error.value)
    assert isinstance(error.value, CannotCheckError)


def test_a_request_error_is_never_retried() -> None:
    """Guards against repeating a bad request: it only delays Google's message about it."""
    seen: list[httpx.Request] = []
    refusal = {"error": {"code": 400, "message": "bad slice", "status": "INVALID_ARGUMENT"}}
    with _apis([httpx.Response(400, json=refusal)], seen, retry=RetryPolicy()) as apis, pytest.raises(GoogleApiError):
        apis.call("POST", "tpu", "projects/p/queuedResources", body={})
    assert len(seen) == 1
