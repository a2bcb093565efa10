"""The live state of a Cloud Run service, read through the Cloud Run Admin API v2 (`services.get`).

Why read it at all when Pulumi's state says which revision serves: promotion must not move traffic on
top of something it did not expect. Before the gates it checks that the candidate revision is ready
and reachable under its tag, and that the live traffic is what the stack's state says; after every
traffic change it checks that Cloud Run really routes as asked.

Shapes follow Google's discovery document for run v2 (`GoogleCloudRunV2Service`,
`GoogleCloudRunV2TrafficTarget`, `GoogleCloudRunV2TrafficTargetStatus`, `GoogleCloudRunV2Condition`;
googleapis/google-api-python-client, googleapiclient/discovery_cache/documents/run.v2.json).
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import httpx
import pydantic

from verify import UsageError
from verify.redact import escape_controls
from verify.tls import default_tls

DEFAULT_API_URL = "https://run.googleapis.com"
# What services.get needs (the discovery document's only scope for run v2).
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
TYPE_REVISION = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
TYPE_LATEST = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"

# Returns an OAuth access token for the Admin API; tests inject their own.
AccessTokenSource = Callable[[], str]


class _ApiModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class TrafficTarget(_ApiModel):
    """`GoogleCloudRunV2TrafficTarget`: what the service was asked to do."""

    type: str = "TRAFFIC_TARGET_ALLOCATION_TYPE_UNSPECIFIED"
    revision: str | None = None
    percent: int = 0
    tag: str | None = None


class TrafficTargetStatus(TrafficTarget):
    """`GoogleCloudRunV2TrafficTargetStatus`: what Cloud Run routes, with the tag's own URL."""

    uri: str | None = None


class Condition(_ApiModel):
    """`GoogleCloudRunV2Condition`, the fields promotion reports."""

    type: str | None = None
    state: str | None = None
    message: str | None = None
    reason: str | None = None


class ServiceState(_ApiModel):
    """`GoogleCloudRunV2Service`, the fields promotion reads."""

    name: str
    uri: str | None = None
    reconciling: bool = False
    traffic: tuple[TrafficTarget, ...] = ()
    traffic_statuses: tuple[TrafficTargetStatus, ...] = pydantic.Field(default=(), alias="trafficStatuses")
    latest_ready_revision: str | None = pydantic.Field(default=None, alias="latestReadyRevision")
    latest_created_revision: str | None = pydantic.Field(default=None, alias="latestCreatedRevision")
    terminal_condition: Condition | None = pydantic.Field(default=None, alias="terminalCondition")

    def tagged(self, tag: str) -> TrafficTargetStatus | None:
        return next((status for status in self.traffic_statuses if status.tag == tag), None)

    def routed_percent(self) -> dict[str, int]:
        """Percent of requests per revision as Cloud Run routes them now (LATEST resolved to its revision)."""
        split: dict[str, int] = {}
        for status in self.traffic_statuses:
            revision = status.revision
            if revision is None and status.type == TYPE_LATEST:
                revision = self.ready_revision()
            if revision is not None and status.percent:
                short = short_revision_name(revision)
                split[short] = split.get(short, 0) + status.percent
        return split

    def ready_revision(self) -> str | None:
        return short_revision_name(self.latest_ready_revision) if self.latest_ready_revision else None

    def created_revision(self) -> str | None:
        return short_revision_name(self.latest_created_revision) if self.latest_created_revision else None


def short_revision_name(name: str) -> str:
    """`projects/p/locations/l/services/s/revisions/r` or `r` -> `r`."""
    return name.rsplit("/", 1)[-1]


def get_service(client: httpx.Client, service: str) -> ServiceState:
    """`GET /v2/{name}` (run.projects.locations.services.get); a usage error (exit 2) when it cannot be read."""
    try:
        response = client.get(f"/v2/{service}")
    except httpx.HTTPError as exc:
        raise UsageError(f"cannot reach the Cloud Run Admin API at {client.base_url}: {exc}") from None
    if response.status_code in (401, 403):
        raise UsageError(
            f"the Cloud Run Admin API refused to read {service} ({response.status_code}: {_error_message(response)}); "
            "the caller needs run.services.get on it (roles/run.viewer or Cloud Run Admin)"
        )
    if response.status_code == 404:
        raise UsageError(f"Cloud Run has no service {service} (404): has the stack been deployed with `pulumi up`?")
    if response.status_code != 200:
        raise UsageError(
            f"the Cloud Run Admin API answered {response.status_code} reading {service}: {_error_message(response)}"
        )
    try:
        return ServiceState.model_validate_json(response.content)
    except pydantic.ValidationError as exc:
        raise UsageError(f"the Cloud Run Admin API's answer for {service} is not a Service: {exc}") from None


def admin_api_client(
    *, base_url: str = DEFAULT_API_URL, token: AccessTokenSource, transport: httpx.BaseTransport | None = None
) -> httpx.Client:
    """A client for the Admin API that sends a fresh access token with every request."""
    return httpx.Client(
        base_url=base_url,
        verify=default_tls(),
        auth=_AccessTokenAuth(token),
        transport=transport,
        timeout=httpx.Timeout(30.0),
        headers={"User-Agent": "gemma-serving-verify"},
    )


def google_access_token() -> str:
    """An access token from Application Default Credentials (a workload identity in CI, gcloud's ADC locally)."""
    import google.auth  # noqa: PLC0415 - only promotion against a real project needs google-auth's discovery
    from google.auth import exceptions as google_exceptions  # noqa: PLC0415 - imported when first needed, so importing the module stays cheap
    from google.auth.transport.requests import Request  # noqa: PLC0415 - imported when first needed, so importing the module stays cheap

    try:
        credentials, _project = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        credentials.refresh(Request())  # type: ignore[no-untyped-call]
    except google_exceptions.GoogleAuthError as exc:
        raise UsageError(
            f"no Google credentials to read the Cloud Run service with ({exc}); run "
            "`gcloud auth application-default login`, or authenticate the CI job (google-github-actions/auth)"
        ) from None
    token = credentials.token
    if not isinstance(token, str):
        raise UsageError("Google's Application Default Credentials gave no access token for the Cloud Run Admin API")
    return token


class _AccessTokenAuth(httpx.Auth):
    def __init__(self, token: AccessTokenSource) -> None:
        self._token = token

    def __repr__(self) -> str:
        return "_AccessTokenAuth(token=<redacted>)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token()}"
        yield request


def _error_message(response: httpx.Response) -> str:
    """Google's error body is `{"error": {"code", "message", "status"}}`; anything else is excerpted."""
    try:
        body = response.json()
        message = body["error"]["message"]
        if isinstance(message, str):
            return escape_controls(message)
    except (ValueError, KeyError, TypeError):
        pass
    text = " ".join(response.text.split())
    return text[:200] or "(empty body)"
