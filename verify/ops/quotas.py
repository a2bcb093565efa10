"""Quota limits from the Cloud Quotas API, usage from Cloud Monitoring, compared with what a stack needs.

Shapes: `QuotaInfo` and `DimensionsInfo` from google/api/cloudquotas/v1/resources.proto (int64 values
arrive as JSON strings); `TimeSeries` from monitoring.v3's discovery document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import GoogleText, parse_answer
from serving.shapes import QuotaSelector
from verify.ops.answers import TimeSeries
from verify.ops.deploy_requirements import QUOTA_USAGE_METRIC
from verify.ops.findings import Finding, Verdict
from verify.ops.google import rfc3339

Now = Callable[[], datetime]


class _Api(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class QuotaDetails(_Api):
    value: int = 0


class DimensionsInfo(_Api):
    dimensions: dict[str, GoogleText] = pydantic.Field(default_factory=dict)
    details: QuotaDetails = QuotaDetails()
    applicable_locations: list[str] = pydantic.Field(default_factory=list, alias="applicableLocations")


class QuotaInfo(_Api):
    name: GoogleText = ""
    quota_id: GoogleText = pydantic.Field(default="", alias="quotaId")
    metric: GoogleText = ""
    service: GoogleText = ""
    dimensions: list[str] = pydantic.Field(default_factory=list)
    quota_display_name: GoogleText = pydantic.Field(default="", alias="quotaDisplayName")
    metric_unit: GoogleText = pydantic.Field(default="", alias="metricUnit")
    dimensions_infos: list[DimensionsInfo] = pydantic.Field(default_factory=list, alias="dimensionsInfos")
    service_request_quota_uri: GoogleText = pydantic.Field(default="", alias="serviceRequestQuotaUri")

    @property
    def label(self) -> str:
        return self.quota_display_name or self.quota_id

    def limit_at(self, location: str, dimensions: Mapping[str, str] | None = None) -> int | None:
        """The value in effect at a region or zone (and, for a quota Google keys by a custom dimension such as
        `tpu_family`, for that dimension's value): the most specific dimensions info that applies. Dimension values
        compare without case, as sources spell them both ways (`CT6E`, `tpu7x`)."""
        for info in self.dimensions_infos:  # ordered from more to less specific (resources.proto)
            if any(
                info.dimensions.get(key, value).casefold() != value.casefold()
                for key, value in (dimensions or {}).items()
            ):
                continue
            pinned = info.dimensions.get("region") or info.dimensions.get("zone")
            if pinned is not None:
                if pinned == location:
                    return info.details.value
                continue
            if not info.applicable_locations or location in info.applicable_locations:
                return info.details.value
        return None


def quota_infos(apis: GoogleApis, project: str, service: str) -> list[QuotaInfo]:
    """quotaInfos.list for one service (GET .../locations/global/services/<service>/quotaInfos)."""
    path = f"projects/{project}/locations/global/services/{service}/quotaInfos"
    return [parse_answer(QuotaInfo, item, "cloudquotas") for item in apis.pages("cloudquotas", path, "quotaInfos")]


def allocation_usage(apis: GoogleApis, project: str, metric: str, location: str, now: Now) -> float:
    """The latest allocation usage of a quota metric at a location; 0 when Monitoring has no series."""
    end = now()
    params = {
        "filter": (
            f'metric.type="{QUOTA_USAGE_METRIC}" AND resource.type="consumer_quota" '
            f'AND metric.labels.quota_metric="{metric}" AND resource.labels.location="{location}"'
        ),
        "interval.startTime": rfc3339(end - timedelta(days=1)),
        "interval.endTime": rfc3339(end),
    }
    latest = 0.0
    for item in apis.pages("monitoring", f"projects/{project}/timeSeries", "timeSeries", params):
        points = parse_answer(TimeSeries, item, "monitoring").points
        if points:  # newest first (monitoring.v3 TimeSeries.points)
            latest = max(latest, points[0].value.number)
    return latest


def compare(
    info: QuotaInfo,
    *,
    area: str,
    item: str,
    location: str,
    needed: float,
    usage: float,
    unit: str,
    scale: float = 1.0,
    request_url: str,
    dimensions: Mapping[str, str] | None = None,
) -> Finding:
    """Pass when limit - usage covers what the stack needs; otherwise a blocker naming where to ask."""
    raw = info.limit_at(location, dimensions)
    asked = info.quota_id + "".join(f" ({key} {value})" for key, value in (dimensions or {}).items())
    if raw is None:
        return Finding(
            area=area,
            item=item,
            verdict=Verdict.BLOCKER,
            detail=f"{info.label}: no value applies in {location}",
            fix=f"request {asked} in {location}: {request_url}",
            needed=needed,
            unit=unit,
        )
    if raw < 0:
        return Finding(
            area=area, item=item, verdict=Verdict.PASS, detail=f"{info.label}: unlimited in {location}", unit=unit
        )
    limit = raw * scale
    used = usage * scale
    free = limit - used
    numbers = f"limit {_num(limit)}, in use {_num(used)}, needs {_num(needed)} {unit} in {location}"
    if free >= needed:
        return Finding(
            area=area,
            item=item,
            verdict=Verdict.PASS,
            detail=f"{info.label}: {numbers}",
            limit=limit,
            usage=used,
            needed=needed,
            unit=unit,
        )
    return Finding(
        area=area,
        item=item,
        verdict=Verdict.BLOCKER,
        detail=f"{info.label}: {numbers}",
        fix=f"request at least {_num(needed + used)} {unit} for {asked} in {location}: {request_url}",
        limit=limit,
        usage=used,
        needed=needed,
        unit=unit,
    )


def find_by_metric(infos: Iterable[QuotaInfo], metric: str) -> QuotaInfo | None:
    return next((info for info in infos if info.metric == metric), None)


def find_by_id(infos: Iterable[QuotaInfo], quota_id: str) -> QuotaInfo | None:
    return next((info for info in infos if info.quota_id == quota_id), None)


def find_selected(infos: Iterable[QuotaInfo], selector: QuotaSelector) -> QuotaInfo | None:
    """The quota the shapes table names: by metric, by quota ID, or by the start of its display name (a page that
    names no ID), without case for the last."""
    if selector.metric is not None:
        return find_by_metric(infos, selector.metric)
    if selector.quota_id is not None:
        return find_by_id(infos, selector.quota_id)
    wanted = (selector.display_name or "").casefold()
    return next((info for info in infos if info.quota_display_name.casefold().startswith(wanted)), None)


def _num(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.1f}"
