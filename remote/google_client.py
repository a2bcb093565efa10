"""One httpx client for Google's REST APIs: auth, paging, deadlines, body caps, errors, retries when asked.

Why REST over httpx instead of the google-cloud-* libraries (docs/operations.md says the same per API):
verify makes a handful of GETs (and two read-only POSTs: testIamPermissions, entries:list) on nine APIs
and the TPU provider five calls; the libraries would add grpcio, protobuf and proto-plus for that, give
proto-plus objects we would convert to our own pydantic models anyway, and (Service Usage, Cloud Quotas,
Monitoring) default to gRPC transports that a local fake cannot stand in for without extra set-up. Here
one client, with a root URL per API that tests point at a fake on 127.0.0.1 over plain HTTP, does it all.

Reads are tried once: a reader says "could not check" and the user runs it again. A caller that changes
things (the TPU provider's `pulumi up`) passes a `RetryPolicy`: 429, 5xx and dropped connections are
retried with backoff, honouring Retry-After (tenacity's loop, sleep injectable); any other 4xx is about
the request and raised at once with Google's message, because repeating it only delays that message.
The caller keeps its request id (Google's idempotency key) in `params` for every attempt of one call.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from remote.google_errors import CannotCheckError, GaveUpError, error_from_response, json_object
from remote.tls import default_tls

# Each API's root: the discovery documents' rootUrl (googleapis/google-api-python-client's
# discovery_cache), with the version the calls use.
ROOTS: dict[str, str] = {
    "serviceusage": "https://serviceusage.googleapis.com/v1",
    "cloudresourcemanager": "https://cloudresourcemanager.googleapis.com/v3",
    "cloudquotas": "https://cloudquotas.googleapis.com/v1",
    "monitoring": "https://monitoring.googleapis.com/v3",
    "tpu": "https://tpu.googleapis.com/v2",
    "run": "https://run.googleapis.com/v2",
    "logging": "https://logging.googleapis.com/v2",
    "storage": "https://storage.googleapis.com/storage/v1",
    # Cloud Storage's media uploads (storage.v1.json: objects.insert's mediaUpload path).
    "storage-upload": "https://storage.googleapis.com/upload/storage/v1",
    "container": "https://container.googleapis.com/v1",
}

TokenSource = Callable[[], tuple[str, str | None]]  # -> (access token, quota project or None)
Sleep = Callable[[float], None]

# Bounds on one call: an answer must be complete within CALL_DEADLINE_S (a read that stalls is given up
# after STALL_S, so a call ends within CALL_DEADLINE_S + STALL_S whatever the server does), and no larger
# than MAX_BODY_BYTES. A list is read for at most MAX_PAGES pages; more is "could not check", not a guess.
CALL_DEADLINE_S = 30.0
STALL_S = 10.0
MAX_BODY_BYTES = 64 * 2**20
MAX_PAGES = 20

# Answers worth another attempt: rate limited, or the service failing for a moment.
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
# What a dropped connection counts as: the service was not available.
_UNAVAILABLE = 503


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


class _TransientError(Exception):
    """A 429/5xx answer or a dropped connection: worth another attempt."""

    def __init__(self, status: int, problem: str, retry_after: float | None) -> None:
        super().__init__(problem)
        self.status = status
        self.problem = problem
        self.retry_after = retry_after


class GoogleApis:
    """One httpx client for every Google API the project calls; each call names its API.

    Each API has its root URL (`ROOTS`); `api_root` replaces scheme and host of all of them at once (a
    local fake) and `roots` replaces one API's (`--cloud-run-api`, the TPU provider's v2alpha1). Tokens
    come from `tokens` before every request (google-auth caches and refreshes them), with
    `x-goog-user-project` when the credentials name a quota project.
    """

    def __init__(
        self,
        tokens: TokenSource,
        *,
        api_root: str | None = None,
        roots: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        deadline_s: float = CALL_DEADLINE_S,
        stall_s: float = STALL_S,
        max_body_bytes: int = MAX_BODY_BYTES,
        clock: Callable[[], float] = time.monotonic,
        retry: RetryPolicy | None = None,
        sleep: Sleep = time.sleep,
        user_agent: str = "gemma-serving-verify-ops",
    ) -> None:
        self._tokens = tokens
        self._roots = {api: _rebase(root, api_root) if api_root else root for api, root in ROOTS.items()}
        self._roots.update({api: root.rstrip("/") for api, root in (roots or {}).items()})
        self._deadline_s = deadline_s
        self._stall_s = stall_s
        self._max_body_bytes = max_body_bytes
        self._clock = clock
        self._retry = retry
        self._sleep = sleep
        self._client = httpx.Client(
            verify=default_tls(),
            transport=transport,
            timeout=httpx.Timeout(min(stall_s, deadline_s)),
            headers={"User-Agent": user_agent},
            follow_redirects=False,
        )

    def close(self) -> None:
        self._client.close()

    @property
    def tokens(self) -> TokenSource:
        """The credentials these calls use (a GKE cluster's API server accepts the same access token)."""
        return self._tokens

    def __enter__(self) -> GoogleApis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, api: str, path: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self.call("GET", api, path, params=params)

    def post(self, api: str, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Only for read-only methods that Google defines as POST (testIamPermissions, entries:list)."""
        return self.call("POST", api, path, body=body)

    def media(
        self, api: str, path: str, params: Mapping[str, Any] | None = None, *, first_bytes: int | None = None
    ) -> bytes:
        """An object's bytes (`alt=media`), or its first `first_bytes` (an HTTP Range): a file's header without
        its body. Errors as `call`; a read only, never retried."""
        url = f"{self._roots[api]}/{path.lstrip('/')}"
        headers = {"Range": f"bytes=0-{first_bytes - 1}"} if first_bytes else {}
        response = self._attempt("GET", url, api, {**(params or {}), "alt": "media"}, None, extra_headers=headers)
        if response.status_code >= 400:
            raise error_from_response(api, response)
        return response.content

    def upload(
        self, api: str, path: str, params: Mapping[str, Any], content: bytes, content_type: str
    ) -> dict[str, Any]:
        """One simple media upload (`uploadType=media`); the caller's `params` carry its preconditions
        (`ifGenerationMatch`), so a lost race is Google's 412, raised, never a silent overwrite."""
        url = f"{self._roots[api]}/{path.lstrip('/')}"
        query = {**params, "uploadType": "media"}
        response = self._attempt(
            "POST", url, api, query, None, extra_headers={"Content-Type": content_type}, content=content
        )
        if response.status_code >= 400:
            raise error_from_response(api, response)
        return json_object(response, f"{api} API")

    def pages(
        self, api: str, path: str, items: str, params: Mapping[str, Any] | None = None, *, max_pages: int = MAX_PAGES
    ) -> Iterator[dict[str, Any]]:
        """Every item of a list method, following nextPageToken for at most `max_pages` pages.

        A list longer than that, a token that comes back again or an item that is not an object raises
        CannotCheckError: a service on page 21 must read as "could not check", never as "not deployed".
        """
        query = dict(params or {})
        tokens = set()
        for _ in range(max_pages):
            page = self.get(api, path, query)
            found = page.get(items) or []
            if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
                raise CannotCheckError(f"{api} API answered {items} that are not a list of objects")
            yield from found
            token = page.get("nextPageToken")
            if not token:
                return
            if not isinstance(token, str) or token in tokens:
                raise CannotCheckError(f"{api} API repeated its nextPageToken: the list cannot be read to its end")
            tokens.add(token)
            query["pageToken"] = token
        raise CannotCheckError(f"{api} API listed more than {max_pages} pages of {items}; stopped reading there")

    def call(
        self,
        method: str,
        api: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One method of one API: its JSON object, or GoogleApiError (Google's error) or CannotCheckError.

        With a `RetryPolicy`, transient failures are tried again with the same `params` and `body` (so a
        request id in them names one request to Google), and GaveUpError ends a call that never succeeded.
        """
        url = f"{self._roots[api]}/{path.lstrip('/')}"
        if self._retry is None:
            response = self._attempt(method, url, api, params, body)
        else:
            response = self._with_retries(self._retry, method, url, api, params, body)
        if response.status_code >= 400:
            raise error_from_response(api, response)
        return json_object(response, f"{api} API")

    def _with_retries(  # noqa: PLR0917 - one call's parts, passed on to each attempt
        self,
        policy: RetryPolicy,
        method: str,
        url: str,
        api: str,
        params: Mapping[str, Any] | None,
        body: Mapping[str, Any] | None,
    ) -> httpx.Response:
        import tenacity  # noqa: PLC0415 - only a caller that changes things retries (the TPU provider's up)

        def wait(state: tenacity.RetryCallState) -> float:
            failure = state.outcome.exception() if state.outcome else None
            retry_after = failure.retry_after if isinstance(failure, _TransientError) else None
            return policy.delay(state.attempt_number - 1, retry_after)

        def once() -> httpx.Response:
            response = self._attempt(method, url, api, params, body, transient=True)
            if response.status_code in TRANSIENT_STATUS:
                error = error_from_response(api, response)
                problem = f"{error.code} {error.status}: {error.message}"
                raise _TransientError(response.status_code, problem, _retry_after(response))
            return response

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.attempts),
            wait=wait,
            retry=tenacity.retry_if_exception_type(_TransientError),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            return retrying(once)
        except _TransientError as last:
            raise GaveUpError(api, last.status, policy.attempts, last.problem) from None

    def _attempt(
        self,
        method: str,
        url: str,
        api: str,
        params: Mapping[str, Any] | None,
        body: Mapping[str, Any] | None,
        *,
        transient: bool = False,
        extra_headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        """One request; a dropped connection is CannotCheckError, or a transient failure when retrying."""
        token, quota_project = self._tokens()
        headers = {**(extra_headers or {}), "Authorization": f"Bearer {token}"}
        if quota_project:
            headers["x-goog-user-project"] = quota_project
        try:
            return self._read(method, url, params=params, body=body, headers=headers, api=api, content=content)
        except httpx.HTTPError as error:
            problem = f"{type(error).__name__}: {error}"
            if transient and isinstance(error, httpx.TransportError):
                raise _TransientError(_UNAVAILABLE, problem, None) from error
            raise CannotCheckError(f"{api} API unreachable at {urlsplit(url).netloc}: {problem}") from None

    def _read(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None,
        body: Mapping[str, Any] | None,
        headers: Mapping[str, str],
        api: str,
        content: bytes | None = None,
    ) -> httpx.Response:
        """The whole answer, read chunk by chunk against the call's deadline and the body cap."""
        start = self._clock()
        sent: dict[str, Any] = {"content": content} if content is not None else {"json": body}
        with self._client.stream(method, url, params=params, headers=headers, **sent) as response:
            answer = bytearray()
            for chunk in response.iter_bytes():
                answer += chunk
                if len(answer) > self._max_body_bytes:
                    raise CannotCheckError(f"{api} API answered more than {self._max_body_bytes} bytes; not read")
                if self._clock() - start > self._deadline_s:
                    raise CannotCheckError(f"{api} API did not finish answering within {self._deadline_s:g} s; gave up")
        # The chunks are decoded already: the rebuilt answer must not claim an encoding (or a length) again.
        kept = {k: v for k, v in response.headers.items() if k.lower() not in {"content-encoding", "content-length"}}
        return httpx.Response(response.status_code, headers=kept, content=bytes(answer), request=response.request)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _rebase(root: str, api_root: str) -> str:
    """`https://run.googleapis.com/v2` on `http://127.0.0.1:9000` -> `http://127.0.0.1:9000/run/v2`."""
    host = urlsplit(root).netloc.split(".", 1)[0]
    return f"{api_root.rstrip('/')}/{host}{urlsplit(root).path}"
