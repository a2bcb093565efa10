"""A small client for the Cloud TPU REST API (queued resources, nodes, operations).

Why our own: pulumi-gcp's `tpu.V2QueuedResource` cannot express flex-start, spot, a max run duration,
startup-script metadata, a service account or labels, and the official Python client would add a large
dependency for five calls. Transient answers (429 and 5xx, dropped connections) are retried with backoff,
honouring Retry-After; any other 4xx is a real error about the request and is raised at once with
Google's message, because repeating a bad request only delays the message the user needs. The retry
loop is tenacity's (stop after `RetryPolicy.attempts`, wait `RetryPolicy.delay`, sleep injectable).

Reference: https://cloud.google.com/tpu/docs/reference/rest/v2alpha1/projects.locations.queuedResources
(v2alpha1 is the version that carries `provisioningModel` and `runDuration`, which flex-start needs).
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import tenacity

if TYPE_CHECKING:
    # httpx and google-auth load only when the provider really talks to Google (`pulumi up`), never for a
    # plan: with their TLS, rich and cryptography imports they were a quarter of a TPU preview's time.
    import httpx

# Google's TPU endpoint; tests pass the URL of a local fake instead.
DEFAULT_BASE_URL = "https://tpu.googleapis.com/v2alpha1"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

TokenProvider = Callable[[], str]
Sleep = Callable[[float], None]

_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


class TpuApiError(Exception):
    """An answer from the TPU API that retrying will not fix (or that kept failing until we gave up)."""

    def __init__(self, status: int, message: str, method: str, path: str) -> None:
        super().__init__(f"TPU API {method} {path} answered {status}: {message}")
        self.status = status
        self.message = message


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, capped; the defaults ride out a minute of 503s."""

    attempts: int = 6
    initial_seconds: float = 1.0
    max_seconds: float = 30.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_seconds)
        ceiling = min(self.max_seconds, self.initial_seconds * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not cryptography


def google_token_provider() -> TokenProvider:
    """Bearer tokens from Application Default Credentials, refreshed when they expire."""

    import google.auth  # noqa: PLC0415 - only `pulumi up` talks to Google (see the TYPE_CHECKING import)
    import google.auth.transport.requests  # noqa: PLC0415 - as above

    credentials, _project = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    request = google.auth.transport.requests.Request()

    def token() -> str:
        if not credentials.valid:
            credentials.refresh(request)  # type: ignore[no-untyped-call]
        return str(credentials.token)

    return token


def _error_message(response: httpx.Response) -> str:
    """Google's `{"error": {"message": ...}}`, or the raw text when the body is something else."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500] or response.reason_phrase
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        status = error.get("status")
        message = str(error.get("message", ""))
        return f"{status}: {message}" if status else message
    return response.text.strip()[:500]


class _TransientAnswerError(Exception):
    """A 429/5xx answer or a dropped connection: worth another attempt."""

    def __init__(self, status: int, problem: str, retry_after: float | None) -> None:
        super().__init__(problem)
        self.status = status
        self.problem = problem
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class TpuRestClient:
    """The five calls the queued-resource provider needs, with retries on transient failures only."""

    def __init__(
        self,
        token_provider: TokenProvider,
        *,
        base_url: str = DEFAULT_BASE_URL,
        transport: httpx.BaseTransport | None = None,
        sleep: Sleep = time.sleep,
        retry: RetryPolicy | None = None,
        timeout_seconds: float = 60.0,
    ) -> None:
        import httpx  # noqa: PLC0415 - only a provider that talks to Google needs it (see the top)

        self._token = token_provider
        self._sleep = sleep
        self._retry = retry or RetryPolicy()
        self._http = httpx.Client(base_url=base_url.rstrip("/"), transport=transport, timeout=timeout_seconds)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TpuRestClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- queued resources -------------------------------------------------------------------------

    def create_queued_resource(self, parent: str, queued_resource_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST the request; returns the long-running operation Google starts for it.

        One `requestId` for all retries of this call, so Google treats a retry after a lost answer as the
        same request (the API's documented idempotency key) rather than a second one.
        """
        params = {"queuedResourceId": queued_resource_id, "requestId": str(uuid.uuid4())}
        return self._json("POST", f"/{parent}/queuedResources", params=params, body=body)

    def get_queued_resource(self, name: str) -> dict[str, Any] | None:
        """The queued resource, or None when it does not exist."""
        return self._json_or_none("GET", f"/{name}")

    def delete_queued_resource(self, name: str, *, force: bool = True) -> dict[str, Any] | None:
        """Delete the request and (with force) its nodes; None when it was already gone."""
        return self._json_or_none("DELETE", f"/{name}", params={"force": "true" if force else "false"})

    # -- nodes and operations ---------------------------------------------------------------------

    def get_node(self, name: str) -> dict[str, Any] | None:
        return self._json_or_none("GET", f"/{name}")

    def get_operation(self, name: str) -> dict[str, Any] | None:
        return self._json_or_none("GET", f"/{name}")

    # -- transport --------------------------------------------------------------------------------

    def _json_or_none(self, method: str, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        try:
            return self._json(method, path, params=params)
        except TpuApiError as error:
            if error.status == 404:
                return None
            raise

    def _json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        response = self._send(method, path, params=params, body=body)
        if response.status_code >= 400:
            raise TpuApiError(response.status_code, _error_message(response), method, path)
        if not response.content:
            return {}
        payload = response.json()
        if not isinstance(payload, dict):
            raise TpuApiError(response.status_code, "expected a JSON object", method, path)
        return payload

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None,
        body: Mapping[str, Any] | None,
    ) -> httpx.Response:
        policy = self._retry

        def wait(state: tenacity.RetryCallState) -> float:
            failure = state.outcome.exception() if state.outcome else None
            retry_after = failure.retry_after if isinstance(failure, _TransientAnswerError) else None
            return policy.delay(state.attempt_number - 1, retry_after)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.attempts),
            wait=wait,
            retry=tenacity.retry_if_exception_type(_TransientAnswerError),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._attempt(method, path, params=params, body=body)
        except _TransientAnswerError as last:
            raise TpuApiError(
                last.status, f"still failing after {policy.attempts} attempts (last: {last.problem})", method, path
            ) from None
        raise AssertionError("unreachable: tenacity either returns, retries or reraises")  # pragma: no cover

    def _attempt(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None,
        body: Mapping[str, Any] | None,
    ) -> httpx.Response:
        """One request; a transient failure is raised for the retry loop, anything else returned."""
        import httpx  # noqa: PLC0415 - loaded by __init__ already; named here for its exception types

        headers = {"Authorization": f"Bearer {self._token()}"}
        try:
            response = self._http.request(method, path, params=params, json=body, headers=headers)
        except httpx.TransportError as error:
            raise _TransientAnswerError(503, f"{type(error).__name__}: {error}", None) from error
        if response.status_code in _TRANSIENT_STATUS:
            problem = f"{response.status_code} {_error_message(response)}"
            raise _TransientAnswerError(response.status_code, problem, _retry_after(response))
        return response
