"""Cloud Run's container startup latency (Cloud Monitoring) beside the phases `verify status` reads from logs."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from remote.google_client import GoogleApis
from tests.verify.ops.coldstart_entries import log_entries
from tests.verify.ops.google_fake import Body, FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT
from tests.verify.ops.test_coldstart import ready_l4  # noqa: F401 - the fixture, used by name
from tests.verify.ops.test_logs import ENTRIES
from verify.cli import main
from verify.ops.answers import BucketOptions
from verify.ops.startup_metric import STARTUP_LATENCIES, latency_rows, startup_latency

SERIES = rf"/monitoring/v3/projects/{PROJECT}/timeSeries"
REVISION = "gemma-l4-vllm-service-3f2a1b7-00002-x7k"  # run_service_ready.json's latest created revision
NOW = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)


def _startup_series_only(answer: Body) -> Any:
    """timeSeries.list answering the startup-latency filter with `answer`; any other metric has no series."""

    def handler(_m: re.Match[str], query: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        return 200, answer if STARTUP_LATENCIES in query.get("filter", [""])[0] else {}

    return handler


def test_verify_status_shows_cloud_runs_startup_latency_beside_the_phases(
    ready_l4: FakeGoogle,  # noqa: F811 - the fixture
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A user comparing the log phases with what Cloud Run measured sees both: the start's own point and the
    window's, with the slowest bucket's bound, for the revision the phases are of."""
    ready_l4.route("POST", ENTRIES, {"entries": log_entries("vllm-0.32.0-cpu-default-loader.log")})
    ready_l4.route("GET", SERIES, _startup_series_only(fixture("monitoring_run_startup_latencies.json")))
    code = main(["status", "--stack", "l4", "--project", PROJECT])
    out = capsys.readouterr().out
    assert code == 0
    assert "first passing probe" in out  # the phases still print
    assert "this start: 1 start, mean 68.5 s, slowest at most 93.0 s" in out
    assert "3 starts, mean 73.3 s" in out  # the window: (68.5 + 71.2 + 80.3) / 3
    asked = [seen for seen in ready_l4.seen if seen.path.endswith("/timeSeries")]
    wanted = next(seen.query["filter"][0] for seen in asked if STARTUP_LATENCIES in seen.query["filter"][0])
    assert f'resource.labels.revision_name="{REVISION}"' in wanted


def test_an_unreadable_metric_leaves_the_phases_and_the_exit_code(
    ready_l4: FakeGoogle,  # noqa: F811 - the fixture
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No monitoring.viewer: the phases still show, a note says why Cloud Run's figure is missing, exit 0."""
    ready_l4.route("POST", ENTRIES, {"entries": log_entries("vllm-0.32.0-cpu-default-loader.log")})
    ready_l4.fail("GET", SERIES, "error_permission_denied.json")
    code = main(["status", "--stack", "l4", "--project", PROJECT])
    out = capsys.readouterr().out
    assert code == 0
    assert "first passing probe" in out
    assert "Cloud Run's startup latency not read" in out


def test_the_status_json_carries_the_metric(
    ready_l4: FakeGoogle,  # noqa: F811 - the fixture
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An agent reading `verify status --format json` gets Cloud Run's figure as data, not only as text."""
    ready_l4.route("POST", ENTRIES, {"entries": log_entries("vllm-0.32.0-cpu-default-loader.log")})
    ready_l4.route("GET", SERIES, _startup_series_only(fixture("monitoring_run_startup_latencies.json")))
    main(["status", "--stack", "l4", "--project", PROJECT, "--json"])
    report = json.loads(capsys.readouterr().out)
    latency = report["startup_latency"]
    assert latency["revision"] == REVISION
    assert latency["around_start"]["starts"] == 1
    assert latency["window"]["starts"] == 3


def _measure(fake: FakeGoogle, answer: Body, start: tuple[datetime, datetime] | None = None) -> Any:
    fake.route("GET", SERIES, answer)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return startup_latency(apis, PROJECT, REVISION, since=NOW - timedelta(days=7), now=lambda: NOW, start=start)


def test_a_start_in_the_overflow_bucket_reads_as_over_the_last_bound(fake: FakeGoogle) -> None:
    """A start slower than every finite bucket is shown as "over" the last bound, never as a made-up maximum."""
    body = fixture("monitoring_run_startup_latencies.json")
    dist = body["timeSeries"][0]["points"][0]["value"]["distributionValue"]
    dist["bucketOptions"] = {"explicitBuckets": {"bounds": [1000, 10000, 60000]}}
    dist["bucketCounts"] = ["0", "0", "0", "1"]  # N = 4 buckets: underflow, two finite, overflow (index 3)
    found = _measure(fake, body)
    assert found.window.slowest_over_s == 60.0
    assert "slowest over 60.0 s" in latency_rows(found)[0][1]


def test_points_outside_the_measured_start_are_not_called_its_own(fake: FakeGoogle) -> None:
    """Only the points from the start's first line to a few minutes after its last are "this start"."""
    start = datetime(2026, 11, 24, 7, 12, 55, tzinfo=UTC)
    found = _measure(fake, fixture("monitoring_run_startup_latencies.json"), (start, start + timedelta(seconds=70)))
    assert found.around_start.starts == 1
    later = start + timedelta(hours=3)
    found = _measure(fake, fixture("monitoring_run_startup_latencies.json"), (later, later + timedelta(seconds=70)))
    assert found.around_start is None
    assert found.window.starts == 3


def test_no_series_says_no_start_was_counted(fake: FakeGoogle) -> None:
    """A revision that has not started in the window has no points: the note says so (not "0 s")."""
    found = _measure(fake, {})
    assert found.window is None
    assert "no start counted" in (found.note or "")


def test_a_malformed_distribution_is_a_note_not_a_crash(fake: FakeGoogle) -> None:
    """A count of "abc" (a wrong shape) is reported as unreadable; nothing is concluded from it."""
    body = fixture("monitoring_run_startup_latencies.json")
    body["timeSeries"][0]["points"][0]["value"]["distributionValue"]["count"] = "abc"
    found = _measure(fake, body)
    assert "unexpected shape" in (found.note or "")


@pytest.mark.parametrize(
    ("options", "index", "bound"),
    [
        # Linear: upper bound of bucket i (0 <= i < N-1) is offset + width * i; N = numFiniteBuckets + 2.
        ({"linearBuckets": {"numFiniteBuckets": 3, "width": 10, "offset": 5}}, 2, 25.0),
        ({"linearBuckets": {"numFiniteBuckets": 3, "width": 10, "offset": 5}}, 4, None),
        # Exponential: scale * growthFactor ** i.
        ({"exponentialBuckets": {"numFiniteBuckets": 2, "growthFactor": 2, "scale": 3}}, 2, 12.0),
        ({"exponentialBuckets": {"numFiniteBuckets": 2, "growthFactor": 2, "scale": 3}}, 3, None),
        # Explicit: the i-th bound is the upper bound; there is one bucket more than bounds.
        ({"explicitBuckets": {"bounds": [1, 2]}}, 1, 2.0),
        ({"explicitBuckets": {"bounds": [1, 2]}}, 2, None),
    ],
)
def test_bucket_bounds_follow_the_discovery_document(options: Body, index: int, bound: float | None) -> None:
    """The slowest start's bound is read from the bucket layout exactly as monitoring.v3 defines it."""
    assert BucketOptions.model_validate(options).upper_bound(index) == bound
