"""The Cloud TPU REST API calls of the queued-resource provider (queued resources, nodes, operations).

Why our own calls: pulumi-gcp's `tpu.V2QueuedResource` cannot express flex-start, spot, a max run duration,
startup-script metadata, a service account or labels, and the official Python client would add a large
dependency for five calls. They go through the project's one Google client (remote/google_client.py:
auth, deadlines, Google's errors) with a `RetryPolicy`: transient answers (429 and 5xx, dropped
connections) are retried with backoff, honouring Retry-After; any other 4xx is a real error about the
request and is raised at once with Google's message. Every failure reaches the provider as `TpuApiError`.

Reference: https://cloud.google.com/tpu/docs/reference/rest/v2alpha1/projects.locations.queuedResources
(v2alpha1 is the version that carries `provisioningModel` and `runDuration`, which flex-start needs).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # The client (httpx) and google-auth load only when the provider really talks to Google (`pulumi up`),
    # never for a plan: with their TLS, rich and cryptography imports they were a quarter of a TPU preview.
    import httpx

    from remote.google_client import GoogleApis, RetryPolicy

# Google's TPU endpoint; tests pass the URL of a local fake instead.
DEFAULT_BASE_URL = "https://tpu.googleapis.com/v2alpha1"
_API = "tpu"
_NOT_FOUND = 404
# What an answer that could not be used counts as (unreachable without retries, too slow, not JSON).
_UNANSWERED = 502

TokenProvider = Callable[[], str]
Sleep = Callable[[float], None]


class TpuApiError(Exception):
    """An answer from the TPU API that retrying will not fix (or that kept failing until we gave up)."""

    def __init__(self, status: int, message: str, method: str, path: str) -> None:
        super().__init__(f"TPU API {method} {path} answered {status}: {message}")
        self.status = status
        self.message = message


def google_token_provider() -> TokenProvider:
    """Bearer tokens from Application Default Credentials, refreshed when they expire."""
    from remote.google_auth import adc_tokens  # noqa: PLC0415 - only `pulumi up` talks to Google (see the top)

    tokens = adc_tokens()
    return lambda: tokens()[0]


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
        from remote.google_client import GoogleApis, RetryPolicy  # noqa: PLC0415 - see the top

        self._apis: GoogleApis = GoogleApis(
            lambda: (token_provider(), None),
            roots={_API: base_url},
            transport=transport,
            deadline_s=timeout_seconds,
            stall_s=timeout_seconds,
            retry=retry or RetryPolicy(),
            sleep=sleep,
            user_agent="gemma-serving-tpu-provider",
        )

    def close(self) -> None:
        self._apis.close()

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

    # -- through the Google client ----------------------------------------------------------------

    def _json_or_none(self, method: str, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        try:
            return self._json(method, path, params=params)
        except TpuApiError as error:
            if error.status == _NOT_FOUND:
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
        """The call's JSON object; Google's error, a call that gave up or no usable answer as TpuApiError."""
        from remote.google_errors import CannotCheckError, GaveUpError, GoogleApiError  # noqa: PLC0415 - see the top

        try:
            return self._apis.call(method, _API, path, params=params, body=body)
        except GoogleApiError as error:
            raise TpuApiError(error.code, f"{error.status}: {error.message}", method, path) from None
        except GaveUpError as error:
            raise TpuApiError(error.status, str(error), method, path) from None
        except CannotCheckError as error:
            raise TpuApiError(_UNANSWERED, str(error), method, path) from None
