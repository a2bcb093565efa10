"""Cloud Run's own measure of a container start, beside the phases read from the logs.

Cloud Monitoring's ``run.googleapis.com/container/startup_latencies`` is a DELTA DISTRIBUTION in
milliseconds on the ``cloud_run_revision`` resource: "Distribution of time spent starting a new container
instance in milliseconds" (Google's Cloud Run metrics list). `verify status` reads it for the revision
whose start it measured (monitoring.v3 ``projects.timeSeries.list``, raw points, no aligner) and shows the
starts Cloud Run counted around that start and over the look-back window: how many, their mean, and the
upper bound of the slowest bucket (a distribution keeps counts per bucket, not the values, so the slowest
start is known only to lie in its bucket).

What Google's figure spans is not documented beyond that sentence (whether it ends at the startup probe's
success or earlier); not confirmed against a live project. The logs' phases stay the measurement the
promote gate uses; this is the platform's view to compare against. Reading it is best effort: a denied or
disabled Monitoring API gives a note and changes no exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import CannotCheckError, GoogleApiError, parse_answer
from verify.ops.answers import Distribution, TimeSeries
from verify.ops.google import parse_rfc3339, rfc3339

STARTUP_LATENCIES = "run.googleapis.com/container/startup_latencies"
# Points are written each minute and reach the API a few minutes late; a start's point can end a little
# after the start's last log line.
AROUND = timedelta(minutes=5)

Now = Callable[[], datetime]


# --- what status shows -------------------------------------------------------------------------------


class LatencySummary(pydantic.BaseModel):
    """The starts Cloud Run counted in a span of time: how many, their mean and the slowest bucket's bound."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    starts: int
    mean_s: float
    # The upper bound of the highest bucket holding a start; None when that is the overflow bucket.
    slowest_at_most_s: float | None
    # The lower bound of that bucket when it is the overflow one ("over N s").
    slowest_over_s: float | None = None
    newest_point: str


class StartupLatency(pydantic.BaseModel):
    """Cloud Run's startup latency for one revision, around the measured start and over the window."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    metric: str = STARTUP_LATENCIES
    revision: str
    window_start: str
    window_end: str
    around_start: LatencySummary | None = None  # the points within the measured start's span
    window: LatencySummary | None = None  # every point in the window
    note: str | None = None  # why there is nothing to show


def startup_latency(
    apis: GoogleApis,
    project: str,
    revision: str,
    *,
    since: datetime,
    now: Now,
    start: tuple[datetime, datetime] | None = None,
) -> StartupLatency:
    """Cloud Run's startup latencies of `revision` from `since` to now; `start` (first, last line) of the
    start measured from the logs picks the points around it. Never raises for an API error."""
    end = now()
    found = StartupLatency(revision=revision, window_start=rfc3339(since), window_end=rfc3339(end))
    params = {
        "filter": f'metric.type="{STARTUP_LATENCIES}" AND resource.type="cloud_run_revision" '
        f'AND resource.labels.revision_name="{revision}"',
        "interval.startTime": found.window_start,
        "interval.endTime": found.window_end,
        "view": "FULL",
    }
    try:
        found_points = [
            _Counted(point.value.distribution_value, point.interval.end_time)
            for item in apis.pages("monitoring", f"projects/{project}/timeSeries", "timeSeries", params)
            for point in parse_answer(TimeSeries, item, "monitoring").points
            if point.value.distribution_value is not None and point.value.distribution_value.count > 0
        ]
    except (GoogleApiError, CannotCheckError) as error:
        return found.model_copy(update={"note": f"Cloud Run's startup latency not read: {error}"})
    if not found_points:
        return found.model_copy(
            update={"note": f"no {STARTUP_LATENCIES} points for {revision} in the window (no start counted)"}
        )
    around = None
    if start is not None:
        first, last = start
        around = _summary([point for point in found_points if _within(point.end_time, first, last + AROUND)])
    return found.model_copy(update={"around_start": around, "window": _summary(found_points)})


@dataclass(frozen=True)
class _Counted:
    """One point's distribution and the end of its interval."""

    dist: Distribution
    end_time: str


def _within(stamp: str, first: datetime, last: datetime) -> bool:
    when = parse_rfc3339(stamp)
    return when is not None and first <= when <= last


def _summary(points: Sequence[_Counted]) -> LatencySummary | None:
    """The points' distributions joined: counts add, means weigh by count, the slowest bucket is kept."""
    if not points:
        return None
    starts = sum(point.dist.count for point in points)
    mean_ms = sum(point.dist.count * point.dist.mean for point in points) / starts
    bounds = [_slowest(point.dist) for point in points]
    at_most = [bound for bound, overflow in bounds if not overflow and bound is not None]
    over = [bound for bound, overflow in bounds if overflow and bound is not None]
    return LatencySummary(
        starts=starts,
        mean_s=round(mean_ms / 1000, 3),
        slowest_at_most_s=None if over or not at_most else max(at_most) / 1000,
        slowest_over_s=max(over) / 1000 if over else None,
        newest_point=max(point.end_time for point in points),
    )


def _slowest(dist: Distribution) -> tuple[float | None, bool]:
    """(bound, in overflow): the highest non-empty bucket's upper bound, or the overflow bucket's lower bound."""
    options = dist.bucket_options
    filled = [index for index, count in enumerate(dist.bucket_counts) if count > 0]
    if options is None or not filled:
        return None, False
    highest = filled[-1]
    upper = options.upper_bound(highest)
    if upper is not None:
        return upper, False
    return options.upper_bound(highest - 1), True


def summary_text(summary: LatencySummary) -> str:
    slowest = (
        f"slowest over {summary.slowest_over_s:.1f} s"
        if summary.slowest_over_s is not None
        else f"slowest at most {summary.slowest_at_most_s:.1f} s"
        if summary.slowest_at_most_s is not None
        else "no buckets"
    )
    plural = "start" if summary.starts == 1 else "starts"
    return f"{summary.starts} {plural}, mean {summary.mean_s:.1f} s, {slowest} (newest point {summary.newest_point})"


def latency_rows(found: StartupLatency) -> list[tuple[str, str]]:
    """The rows `verify status` prints under the phases."""
    if found.note is not None:
        return [("Cloud Run startup", found.note)]
    rows = []
    if found.around_start is not None:
        rows.append(("Cloud Run startup", f"this start: {summary_text(found.around_start)}"))
    if found.window is not None:
        since = f"since {found.window_start}"
        rows.append(("Cloud Run startup" if not rows else "", f"{since}: {summary_text(found.window)}"))
    return rows
