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

import httpx
import pydantic

from verify import UsageError
from verify.ops.google import CannotCheckError, GoogleApiError, GoogleApis, TokenSource, adc_tokens

DEFAULT_API_URL = "https://run.googleapis.com"
TYPE_REVISION = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
TYPE_LATEST = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"


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


def get_service(apis: GoogleApis, service: str) -> ServiceState:
    """`GET {run root}/{name}` (run.projects.locations.services.get) through verify's one Google client; a usage
    error (exit 2) when it cannot be read."""
    try:
        answer = apis.get("run", service)
    except CannotCheckError as exc:
        raise UsageError(f"cannot read {service} from the Cloud Run Admin API: {exc}") from None
    except GoogleApiError as exc:
        if exc.code in (401, 403):
            raise UsageError(
                f"the Cloud Run Admin API refused to read {service} ({exc.code}: {exc.message}); "
                "the caller needs run.services.get on it (roles/run.viewer or Cloud Run Admin)"
            ) from None
        if exc.not_found:
            raise UsageError(
                f"Cloud Run has no service {service} (404): has the stack been deployed with `pulumi up`?"
            ) from None
        raise UsageError(f"the Cloud Run Admin API answered {exc.code} reading {service}: {exc.message}") from None
    try:
        return ServiceState.model_validate(answer)
    except pydantic.ValidationError as exc:
        raise UsageError(f"the Cloud Run Admin API's answer for {service} is not a Service: {exc}") from None


def admin_api(
    *, base_url: str = DEFAULT_API_URL, tokens: TokenSource, transport: httpx.BaseTransport | None = None
) -> GoogleApis:
    """verify's Google client with the Cloud Run Admin API at ``base_url`` (`--cloud-run-api`, paths `/v2/...`)."""
    return GoogleApis(tokens, roots={"run": f"{base_url.rstrip('/')}/v2"}, transport=transport)


def google_tokens() -> TokenSource:
    """Application Default Credentials (a workload identity in CI, gcloud's ADC locally); a usage error without."""
    try:
        return adc_tokens()
    except CannotCheckError as exc:
        raise UsageError(
            f"no Google credentials to read the Cloud Run service with ({exc}); or authenticate the CI job "
            "(google-github-actions/auth)"
        ) from None
