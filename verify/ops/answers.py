"""Google's answers as the ops commands read them: pydantic models at the edge, every text escaped.

Why models rather than `dict.get` chains: an answer of the wrong shape (labels as a string, a percent of
"ten", a usage value "abc") must stop the command with "could not check" (exit 2), never crash with a
traceback nor be read as empty and reported as "not deployed" or a missing quota. `parse_answer` turns
a validation error into CannotCheckError. Unknown fields are ignored (Google adds fields); the ones read
are typed as the discovery documents say (googleapis/google-api-python-client, discovery_cache:
run.v2.json, tpu.v2.json, cloudresourcemanager.v3.json, serviceusage.v1.json, monitoring.v3.json).
int64 values arrive as JSON strings and are coerced; anything else is refused.
"""

from __future__ import annotations

import pydantic

from remote.google_errors import GoogleText


class _Answer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


# --- Cloud Run Admin API v2 ------------------------------------------------------------------------------

# A traffic entry that follows the newest ready revision instead of naming one.
TRAFFIC_TO_LATEST = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"


class RunCondition(_Answer):
    """`GoogleCloudRunV2Condition`."""

    type: GoogleText = ""
    state: GoogleText = "STATE_UNSPECIFIED"
    message: GoogleText = ""
    reason: GoogleText = ""
    revision_reason: GoogleText = pydantic.Field(default="", alias="revisionReason")


class RunTrafficStatus(_Answer):
    """`GoogleCloudRunV2TrafficTargetStatus`."""

    type: GoogleText = ""
    revision: GoogleText = ""
    percent: int = pydantic.Field(default=0, ge=0, le=100)
    tag: GoogleText = ""
    uri: GoogleText = ""


class RunScaling(_Answer):
    min_instance_count: int | None = pydantic.Field(default=None, alias="minInstanceCount")
    max_instance_count: int | None = pydantic.Field(default=None, alias="maxInstanceCount")


class RunResources(_Answer):
    limits: dict[str, GoogleText] = pydantic.Field(default_factory=dict)


class RunContainer(_Answer):
    resources: RunResources = RunResources()


class RunTemplate(_Answer):
    """`GoogleCloudRunV2RevisionTemplate`: the fields preflight and status read."""

    scaling: RunScaling = RunScaling()
    containers: list[RunContainer] = pydantic.Field(default_factory=list)
    node_selector: dict[str, GoogleText] = pydantic.Field(default_factory=dict, alias="nodeSelector")


class RunService(_Answer):
    """`GoogleCloudRunV2Service`: the one model of a Cloud Run service verify reads (status, preflight and
    promotion's live checks alike)."""

    name: GoogleText = ""
    uri: GoogleText = ""
    labels: dict[str, GoogleText] = pydantic.Field(default_factory=dict)
    reconciling: bool = False
    terminal_condition: RunCondition = pydantic.Field(default=RunCondition(), alias="terminalCondition")
    latest_created_revision: GoogleText = pydantic.Field(default="", alias="latestCreatedRevision")
    latest_ready_revision: GoogleText = pydantic.Field(default="", alias="latestReadyRevision")
    traffic_statuses: list[RunTrafficStatus] = pydantic.Field(default_factory=list, alias="trafficStatuses")
    scaling: RunScaling = RunScaling()
    template: RunTemplate = RunTemplate()

    def tagged(self, tag: str) -> RunTrafficStatus | None:
        return next((status for status in self.traffic_statuses if status.tag == tag), None)

    def routed_percent(self) -> dict[str, int]:
        """Percent of requests per revision as Cloud Run routes them now (LATEST resolved to its revision)."""
        split: dict[str, int] = {}
        for status in self.traffic_statuses:
            revision = status.revision or (self.ready_revision() if status.type == TRAFFIC_TO_LATEST else None)
            if revision and status.percent:
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


class RunRevision(_Answer):
    """`GoogleCloudRunV2Revision`: its name and conditions."""

    name: GoogleText = ""
    conditions: list[RunCondition] = pydantic.Field(default_factory=list)


# --- Cloud TPU API v2 ------------------------------------------------------------------------------------


class _Status(_Answer):
    message: GoogleText = ""


class _FailedData(_Answer):
    error: _Status = _Status()


class QueuedResourceState(_Answer):
    """`QueuedResourceState`: the state, who brought it about (USER or SERVICE) and, when it failed, Google's error."""

    state: GoogleText = "STATE_UNSPECIFIED"
    state_initiator: GoogleText = pydantic.Field(default="", alias="stateInitiator")
    failed_data: _FailedData = pydantic.Field(default=_FailedData(), alias="failedData")


class _NodeRequest(_Answer):
    metadata: dict[str, GoogleText] = pydantic.Field(default_factory=dict)


class _NodeSpec(_Answer):
    node: _NodeRequest = _NodeRequest()


class _TpuRequest(_Answer):
    """`Tpu`: the node the request asks for (its metadata carries the provider's placement record)."""

    node_spec: list[_NodeSpec] = pydantic.Field(default_factory=list, alias="nodeSpec")


class _QueueingPolicy(_Answer):
    valid_until_time: GoogleText = pydantic.Field(default="", alias="validUntilTime")


class QueuedResource(_Answer):
    """`QueuedResource`."""

    state: QueuedResourceState = QueuedResourceState()
    queueing_policy: _QueueingPolicy = pydantic.Field(default=_QueueingPolicy(), alias="queueingPolicy")
    create_time: GoogleText = pydantic.Field(default="", alias="createTime")
    tpu: _TpuRequest = _TpuRequest()


class _AccessConfig(_Answer):
    external_ip: GoogleText = pydantic.Field(default="", alias="externalIp")


class NetworkEndpoint(_Answer):
    ip_address: GoogleText = pydantic.Field(default="", alias="ipAddress")
    access_config: _AccessConfig = pydantic.Field(default=_AccessConfig(), alias="accessConfig")


class TpuNode(_Answer):
    """`Node`: state, health and endpoints."""

    state: GoogleText = "STATE_UNSPECIFIED"
    health: GoogleText = ""
    health_description: GoogleText = pydantic.Field(default="", alias="healthDescription")
    network_endpoints: list[NetworkEndpoint] = pydantic.Field(default_factory=list, alias="networkEndpoints")


class AcceleratorType(_Answer):
    type: GoogleText = ""


class RuntimeVersion(_Answer):
    version: GoogleText = ""


# --- Resource Manager, Service Usage, Monitoring ---------------------------------------------------------


class Permissions(_Answer):
    """testIamPermissions' answer: the subset of the permissions asked about that the caller holds."""

    permissions: list[GoogleText] = pydantic.Field(default_factory=list)


class EnabledApi(_Answer):
    """Service Usage's `GoogleApiServiceusageV1Service`: an API and whether the project enabled it (not a
    Cloud Run service: that is `RunService`)."""

    name: GoogleText = ""
    state: GoogleText = ""


class ServicesBatch(_Answer):
    """services:batchGet's answer."""

    services: list[EnabledApi] = pydantic.Field(default_factory=list)


class Linear(_Answer):
    num_finite_buckets: int = pydantic.Field(alias="numFiniteBuckets", ge=0)
    width: float = pydantic.Field(gt=0, allow_inf_nan=False)
    offset: float = pydantic.Field(default=0.0, allow_inf_nan=False)


class Exponential(_Answer):
    num_finite_buckets: int = pydantic.Field(alias="numFiniteBuckets", ge=0)
    growth_factor: float = pydantic.Field(alias="growthFactor", gt=1, allow_inf_nan=False)
    scale: float = pydantic.Field(gt=0, allow_inf_nan=False)


class Explicit(_Answer):
    bounds: list[float] = pydantic.Field(min_length=1)


class BucketOptions(_Answer):
    """`BucketOptions`: one of three bucket layouts. Bucket 0 is the underflow bucket, the last the overflow."""

    linear: Linear | None = pydantic.Field(default=None, alias="linearBuckets")
    exponential: Exponential | None = pydantic.Field(default=None, alias="exponentialBuckets")
    explicit: Explicit | None = pydantic.Field(default=None, alias="explicitBuckets")

    def upper_bound(self, index: int) -> float | None:
        """Bucket `index`'s upper bound, as the discovery document defines each layout; None for overflow."""
        if self.linear is not None:
            found = self.linear
            return found.offset + found.width * index if index <= found.num_finite_buckets else None
        if self.exponential is not None:
            grows = self.exponential
            return grows.scale * grows.growth_factor**index if index <= grows.num_finite_buckets else None
        if self.explicit is not None:
            bounds = self.explicit.bounds
            return bounds[index] if index < len(bounds) else None
        return None


class Distribution(_Answer):
    """`Distribution`: a histogram's count, mean and per-bucket counts (int64 as JSON strings)."""

    count: int = pydantic.Field(default=0, ge=0)
    mean: float = pydantic.Field(default=0.0, allow_inf_nan=False)
    bucket_options: BucketOptions | None = pydantic.Field(default=None, alias="bucketOptions")
    bucket_counts: list[pydantic.NonNegativeInt] = pydantic.Field(default_factory=list, alias="bucketCounts")


class TypedValue(_Answer):
    """`TypedValue` of a point: an int64 (a JSON string), a double, or a distribution."""

    int64_value: int | None = pydantic.Field(default=None, alias="int64Value")
    double_value: float | None = pydantic.Field(default=None, alias="doubleValue", allow_inf_nan=False)
    distribution_value: Distribution | None = pydantic.Field(default=None, alias="distributionValue")

    @property
    def number(self) -> float:
        return float(self.int64_value if self.int64_value is not None else self.double_value or 0)


class TimeInterval(_Answer):
    end_time: str = pydantic.Field(default="", alias="endTime")


class Point(_Answer):
    interval: TimeInterval = TimeInterval()
    value: TypedValue = TypedValue()


class TimeSeries(_Answer):
    """`TimeSeries`: its points, newest first."""

    points: list[Point] = pydantic.Field(default_factory=list)
