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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

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
}

TokenSource = Callable[[], tuple[str, str | None]]  # -> (access token, quota project or None)


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


def error_from_response(api: str, response: httpx.Response) -> GoogleApiError:
    """Parse google.rpc.Status; fall back to the status line for bodies that are not Google's."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        text = response.text[:200].strip()
        return GoogleApiError(api, response.status_code, response.reason_phrase, text or response.reason_phrase)
    reason: str | None = None
    metadata: dict[str, str] = {}
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.ErrorInfo"):
            reason = str(detail.get("reason") or "") or None
            metadata = {str(k): str(v) for k, v in (detail.get("metadata") or {}).items()}
            break
    return GoogleApiError(
        api=api,
        code=int(error.get("code") or response.status_code),
        status=str(error.get("status") or response.reason_phrase),
        message=str(error.get("message") or ""),
        reason=reason,
        metadata=metadata,
    )


class GoogleApis:
    """One httpx client for every Google API the ops commands read; each call names its API.

    `roots` maps an API to its root URL (defaults: `ROOTS`); `api_root` replaces scheme and host of
    all of them at once (a local fake). Tokens come from `tokens` before every request (google-auth
    caches and refreshes them), with `x-goog-user-project` when the credentials name a quota project.
    """

    def __init__(
        self,
        tokens: TokenSource,
        *,
        api_root: str | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self._tokens = tokens
        self._roots = {api: _rebase(root, api_root) if api_root else root for api, root in ROOTS.items()}
        self._client = httpx.Client(
            transport=transport,
            timeout=httpx.Timeout(timeout_s, connect=10.0),
            headers={"User-Agent": "gemma-serving-verify-ops"},
            follow_redirects=False,
        )

    def close(self) -> None:
        self._client.close()

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
        self, api: str, path: str, items: str, params: Mapping[str, Any] | None = None, *, max_pages: int = 20
    ) -> Iterator[dict[str, Any]]:
        """Every item of a list method, following nextPageToken (bounded)."""
        query = dict(params or {})
        for _ in range(max_pages):
            page = self.get(api, path, query)
            for item in page.get(items) or []:
                if isinstance(item, dict):
                    yield item
            token = page.get("nextPageToken")
            if not token:
                return
            query["pageToken"] = token

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
        try:
            response = self._client.request(method, url, params=params, json=body, headers=headers)
        except httpx.HTTPError as error:
            host = urlsplit(url).netloc
            raise CannotCheckError(f"{api} API unreachable at {host}: {type(error).__name__}: {error}") from None
        if response.status_code >= 400:
            raise error_from_response(api, response)
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise CannotCheckError(f"{api} API answered {response.status_code} without JSON") from None
        return data if isinstance(data, dict) else {}


def _rebase(root: str, api_root: str) -> str:
    """`https://run.googleapis.com/v2` on `http://127.0.0.1:9000` -> `http://127.0.0.1:9000/run/v2`."""
    host = urlsplit(root).netloc.split(".", 1)[0]
    return f"{api_root.rstrip('/')}/{host}{urlsplit(root).path}"


def adc_tokens(scopes: tuple[str, ...] = (CLOUD_PLATFORM_SCOPE,)) -> TokenSource:
    """Application Default Credentials, or CannotCheckError naming the command that sets them up."""
    import google.auth  # noqa: PLC0415 - loaded only when a command really talks to Google
    import google.auth.exceptions  # noqa: PLC0415
    from google.auth.transport.requests import Request  # noqa: PLC0415

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
