"""Read-only calls to Google's REST APIs: Application Default Credentials, httpx, Google's error shape.

Why REST over httpx instead of the google-cloud-* libraries (docs/operations.md says the same per API):
the ops commands make a handful of GETs (and two read-only POSTs: testIamPermissions, entries:list) on
seven APIs; the libraries would add grpcio, protobuf and proto-plus for that, give proto-plus objects we
would convert to our own pydantic models anyway, and (Service Usage, Cloud Quotas, Monitoring) default to
gRPC transports that a local fake cannot stand in for without extra set-up. Here one client, with a
root URL per API that tests point at a fake on 127.0.0.1 over plain HTTP, does it all. google-auth
(already a dependency) supplies the credentials.

Errors come back as `google.rpc.Status` (`{"error": {"code", "message", "status", "details": [...]}}`);
`GoogleApiError` keeps the `ErrorInfo` reason (SERVICE_DISABLED, IAM_PERMISSION_DENIED, ...) and its
metadata (the service to enable, the permission missing) so each command can say what to do.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import httpx
import pydantic

from verify.redact import escape_controls
from verify.tls import default_tls

ADC_SETUP_COMMAND = "gcloud auth application-default login"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# Replaces scheme and host of every Google API (a local fake, an emulator); documented for tests only.
API_ROOT_ENV = "VERIFY_GOOGLE_API_ROOT"

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
    "container": "https://container.googleapis.com/v1",
}

TokenSource = Callable[[], tuple[str, str | None]]  # -> (access token, quota project or None)

# Bounds on one call: an answer must be complete within CALL_DEADLINE_S (a read that stalls is given up
# after STALL_S, so a call ends within CALL_DEADLINE_S + STALL_S whatever the server does), and no larger
# than MAX_BODY_BYTES. A list is read for at most MAX_PAGES pages; more is "could not check", not a guess.
CALL_DEADLINE_S = 30.0
STALL_S = 10.0
MAX_BODY_BYTES = 64 * 2**20
MAX_PAGES = 20

# Text a Google API supplied, with its control characters escaped (a revision's condition message or a log
# line must not clear the terminal or write to the clipboard).
GoogleText = Annotated[str, pydantic.AfterValidator(escape_controls)]
Answer = TypeVar("Answer", bound=pydantic.BaseModel)


class CannotCheckError(Exception):
    """Nothing could be asked of Google (no credentials, API unreachable): the command exits 2."""


@dataclass(frozen=True)
class GoogleApiError(Exception):
    """An error answer from a Google API, as google.rpc.Status with its ErrorInfo."""

    api: str
    code: int
    status: str
    message: str
    reason: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.api}: {self.code} {self.status}: {self.message}"

    @property
    def service_disabled(self) -> bool:
        return self.reason == "SERVICE_DISABLED"

    @property
    def permission_denied(self) -> bool:
        return self.code == httpx.codes.FORBIDDEN and not self.service_disabled

    @property
    def not_found(self) -> bool:
        return self.code == httpx.codes.NOT_FOUND

    def advice(self, project: str) -> str:
        """One line: what to do about this error."""
        if self.service_disabled:
            service = self.metadata.get("service") or f"{self.api}.googleapis.com"
            return f"enable it: gcloud services enable {service} --project {project}"
        if self.permission_denied:
            permission = self.metadata.get("permission")
            what = f" ({permission})" if permission else ""
            return f"your credentials may not read this{what}; ask for a role that grants it, or use another account"
        return "see the message; retry later if Google reports an internal or unavailable error"


class _ErrorDetail(pydantic.BaseModel):
    """`google.rpc.ErrorInfo` (or another detail, whose reason and metadata are then empty)."""

    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True)

    type: str = pydantic.Field(default="", alias="@type")
    reason: GoogleText | None = None
    metadata: dict[str, GoogleText] = pydantic.Field(default_factory=dict)


class _Status(pydantic.BaseModel):
    """`google.rpc.Status`, the body of every Google API error."""

    model_config = pydantic.ConfigDict(extra="ignore")

    code: int | None = None
    status: GoogleText | None = None
    message: GoogleText = ""
    details: list[_ErrorDetail | Any] = pydantic.Field(default_factory=list)


def error_from_response(api: str, response: httpx.Response) -> GoogleApiError:
    """Parse google.rpc.Status; fall back to the status line for bodies that are not Google's."""
    try:
        body = response.json()
        status = _Status.model_validate(body.get("error") if isinstance(body, dict) else None)
    except (json.JSONDecodeError, UnicodeDecodeError, pydantic.ValidationError):
        text = escape_controls(response.text[:200].strip())
        return GoogleApiError(api, response.status_code, response.reason_phrase, text or response.reason_phrase)
    info = next(
        (d for d in status.details if isinstance(d, _ErrorDetail) and d.type.endswith("google.rpc.ErrorInfo")), None
    )
    return GoogleApiError(
        api=api,
        code=status.code or response.status_code,
        status=status.status or response.reason_phrase,
        message=status.message,
        reason=(info.reason or None) if info is not None else None,
        metadata=dict(info.metadata) if info is not None else {},
    )


def parse_answer(model: type[Answer], data: object, api: str) -> Answer:
    """A Google answer (or one item of a list) as its model; a wrong shape or type is "could not check"."""
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the body"
        raise CannotCheckError(
            f"{api} API answered in an unexpected shape ({model.__name__}: {where}: {first['msg']}); "
            "nothing was concluded from it"
        ) from None


class GoogleApis:
    """One httpx client for every Google API verify reads; each call names its API.

    verify's one Google REST client: ops, memory, models and promote's reads of Cloud Run all go through it
    (auth, paging, deadlines, errors). Each API has its root URL (`ROOTS`); `api_root` replaces scheme and
    host of all of them at once (a local fake) and `roots` replaces one API's (`--cloud-run-api`). Tokens
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
    ) -> None:
        self._tokens = tokens
        self._roots = {api: _rebase(root, api_root) if api_root else root for api, root in ROOTS.items()}
        # One API's own root, whatever `api_root` says (`verify promote --cloud-run-api`).
        self._roots.update(roots or {})
        self._deadline_s = deadline_s
        self._stall_s = stall_s
        self._max_body_bytes = max_body_bytes
        self._clock = clock
        self._client = httpx.Client(
            verify=default_tls(),
            transport=transport,
            timeout=httpx.Timeout(min(stall_s, deadline_s)),
            headers={"User-Agent": "gemma-serving-verify-ops"},
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
        return self._call("GET", api, path, params=params)

    def post(self, api: str, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Only for read-only methods that Google defines as POST (testIamPermissions, entries:list)."""
        return self._call("POST", api, path, body=body)

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

    def _call(
        self,
        method: str,
        api: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        url = f"{self._roots[api]}/{path.lstrip('/')}"
        token, quota_project = self._tokens()
        headers = {"Authorization": f"Bearer {token}"}
        if quota_project:
            headers["x-goog-user-project"] = quota_project
        host = urlsplit(url).netloc
        try:
            response = self._read(method, url, params=params, body=body, headers=headers, api=api)
        except httpx.HTTPError as error:
            raise CannotCheckError(f"{api} API unreachable at {host}: {type(error).__name__}: {error}") from None
        if response.status_code >= 400:
            raise error_from_response(api, response)
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise CannotCheckError(f"{api} API answered {response.status_code} without JSON") from None
        if not isinstance(data, dict):
            raise CannotCheckError(f"{api} API answered {type(data).__name__} where an object belongs")
        return data

    def _read(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None,
        body: Mapping[str, Any] | None,
        headers: Mapping[str, str],
        api: str,
    ) -> httpx.Response:
        """The whole answer, read chunk by chunk against the call's deadline and the body cap."""
        start = self._clock()
        with self._client.stream(method, url, params=params, json=body, headers=headers) as response:
            content = bytearray()
            for chunk in response.iter_bytes():
                content += chunk
                if len(content) > self._max_body_bytes:
                    raise CannotCheckError(f"{api} API answered more than {self._max_body_bytes} bytes; not read")
                if self._clock() - start > self._deadline_s:
                    raise CannotCheckError(f"{api} API did not finish answering within {self._deadline_s:g} s; gave up")
        # The chunks are decoded already: the rebuilt answer must not claim an encoding (or a length) again.
        kept = {k: v for k, v in response.headers.items() if k.lower() not in {"content-encoding", "content-length"}}
        return httpx.Response(response.status_code, headers=kept, content=bytes(content), request=response.request)


def _rebase(root: str, api_root: str) -> str:
    """`https://run.googleapis.com/v2` on `http://127.0.0.1:9000` -> `http://127.0.0.1:9000/run/v2`."""
    host = urlsplit(root).netloc.split(".", 1)[0]
    return f"{api_root.rstrip('/')}/{host}{urlsplit(root).path}"


def adc_tokens(scopes: tuple[str, ...] = (CLOUD_PLATFORM_SCOPE,)) -> TokenSource:
    """Application Default Credentials, or CannotCheckError naming the command that sets them up."""
    import google.auth  # noqa: PLC0415 - loaded only when a command really talks to Google
    import google.auth.exceptions  # noqa: PLC0415 - as above
    from google.auth.transport.requests import Request  # noqa: PLC0415 - as above

    try:
        credentials, _ = google.auth.default(scopes=list(scopes))
    except google.auth.exceptions.DefaultCredentialsError as error:
        raise CannotCheckError(
            f"no Application Default Credentials ({_first_line(str(error))}); run `{ADC_SETUP_COMMAND}` "
            "(or point GOOGLE_APPLICATION_CREDENTIALS at a service-account key)"
        ) from None

    def token() -> tuple[str, str | None]:
        if not credentials.valid:
            try:
                credentials.refresh(Request())  # type: ignore[no-untyped-call]
            except google.auth.exceptions.GoogleAuthError as error:
                raise CannotCheckError(
                    f"Application Default Credentials could not be refreshed ({_first_line(str(error))}); "
                    f"run `{ADC_SETUP_COMMAND}` again"
                ) from None
        quota_project = getattr(credentials, "quota_project_id", None)
        return str(credentials.token), str(quota_project) if quota_project else None

    return token


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "no detail"


def apis_from_environment() -> GoogleApis:
    """The client every ops entry point uses: ADC, and `VERIFY_GOOGLE_API_ROOT` when set (a local fake)."""
    return GoogleApis(adc_tokens(), api_root=os.environ.get(API_ROOT_ENV) or None)


def rfc3339(moment: datetime) -> str:
    """A time as Google's APIs take it in a query (Monitoring's interval, Logging's filter): UTC, seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text: str) -> datetime | None:
    """A timestamp a Google API answered (RFC 3339, `Z` or an offset); None when it is not one."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
