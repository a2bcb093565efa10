"""What `verify status` adds about the running deployment: how many instances are up, and when a
flex-start node ends.

Cloud Run: Cloud Monitoring's ``run.googleapis.com/container/instance_count`` (a GAUGE per revision with
a ``state`` label, ``active`` or ``idle``; Google's Cloud Run metrics list) for the stack's service over
the last few minutes, newest point per series, summed by state (monitoring.v3 ``projects.timeSeries.list``).
The metric is sampled each minute and arrives a few minutes late, so the count is "recent", and a
service that has served nothing lately has no series at all (reported as 0, with that said). Not
confirmed against a live project in this session.

TPU flex-start: the node's ``schedulingConfig.terminationTimestamp`` (tpu.v2 SchedulingConfig, "Output
only. The time at which the node will be terminated"), else the node's ``createTime`` plus the stack's
``tpu.provisioning.maxRunDuration`` (marked as an estimate), and the time left until then.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Protocol

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError
from verify.ops.google import parse_rfc3339, rfc3339

INSTANCE_COUNT = "run.googleapis.com/container/instance_count"
LOOKBACK = timedelta(minutes=10)

Now = Callable[[], datetime]


class Instances(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    active: int | None
    idle: int | None
    as_of: str | None  # the newest point's end time
    note: str | None = None  # why the count is missing or zero


class Lifetime(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    termination_time: str | None
    time_left_s: float | None
    source: str  # where the time comes from


def cloud_run_instances(apis: GoogleApis, project: str, service: str, *, now: Now) -> Instances:
    """Active and idle instances of ``service`` per Cloud Monitoring; never raises for an API error."""
    end = now()
    params = {
        "filter": f'metric.type="{INSTANCE_COUNT}" AND resource.type="cloud_run_revision" '
        f'AND resource.labels.service_name="{service}"',
        "interval.startTime": rfc3339(end - LOOKBACK),
        "interval.endTime": rfc3339(end),
        "view": "FULL",
    }
    counts: dict[str, int] = {"active": 0, "idle": 0}
    newest: str | None = None
    try:
        for series in apis.pages("monitoring", f"projects/{project}/timeSeries", "timeSeries", params):
            points = series.get("points") or []
            if not points:
                continue
            point = points[0]  # newest first (monitoring.v3 TimeSeries.points)
            state = str(((series.get("metric") or {}).get("labels") or {}).get("state", "active"))
            counts[state] = counts.get(state, 0) + _value(point)
            stamp = str((point.get("interval") or {}).get("endTime") or "")
            newest = max(newest or stamp, stamp)
    except (GoogleApiError, CannotCheckError) as error:
        return Instances(active=None, idle=None, as_of=None, note=f"instance count unavailable: {error}")
    note = None if newest else f"no instance_count series in the last {LOOKBACK.seconds // 60} min: no instance ran"
    return Instances(active=counts["active"], idle=counts["idle"], as_of=newest, note=note)


def flex_start_lifetime(node: dict[str, Any], max_run_s: int, *, now: Now) -> Lifetime:
    """When a flex-start node is terminated, and the time left."""
    scheduling = node.get("schedulingConfig") or {}
    stated = scheduling.get("terminationTimestamp")
    if stated:
        end = parse_rfc3339(str(stated))
        source = "the node's schedulingConfig.terminationTimestamp"
    else:
        created = parse_rfc3339(str(node.get("createTime") or ""))
        end = created + timedelta(seconds=max_run_s) if created else None
        source = f"estimate: the node's createTime + tpu.provisioning.maxRunDuration ({max_run_s} s)"
    if end is None:
        return Lifetime(termination_time=None, time_left_s=None, source="the node reports no times")
    return Lifetime(termination_time=rfc3339(end), time_left_s=max((end - now()).total_seconds(), 0.0), source=source)


def _value(point: dict[str, Any]) -> int:
    value = point.get("value") or {}
    raw = value.get("int64Value", value.get("doubleValue", 0))
    try:
        return round(float(raw))
    except (TypeError, ValueError):
        return 0


class _HasLiveState(Protocol):
    @property
    def instances(self) -> Instances | None: ...

    @property
    def lifetime(self) -> Lifetime | None: ...


def live_rows(report: _HasLiveState) -> list[tuple[str, str]]:
    """The status table's rows for these facts (render.py)."""
    rows: list[tuple[str, str]] = []
    if report.instances is not None:
        found = report.instances
        if found.active is None:
            rows.append(("instances now", found.note or "unknown"))
        else:
            when = f" (as of {found.as_of})" if found.as_of else ""
            rows.append(("instances now", f"{found.active} active, {found.idle} idle{when}"))
            if found.note:
                rows.append(("", found.note))
    if report.lifetime is not None:
        life = report.lifetime
        left = "-" if life.time_left_s is None else f"{life.time_left_s / 3600:.1f} h left"
        rows.append(("flex-start ends", f"{life.termination_time or 'unknown'}, {left} ({life.source})"))
    return rows
