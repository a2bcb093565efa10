"""What `verify status` adds: Cloud Run's recent instance count, and when a flex-start TPU node ends."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from tests.verify.ops.google_fake import FakeGoogle, fixture
from tests.verify.ops.scenarios import PROJECT
from tests.verify.ops.test_status import NODE, QUEUED, SERVICES, _list, _service_in, status
from verify.ops.live_state import flex_start_lifetime
from verify.ops.render import print_status

SERIES = rf"/monitoring/v3/projects/{PROJECT}/timeSeries"


def _printed(report: object) -> str:
    out = io.StringIO()
    print_status(report, Console(file=out, width=200))  # type: ignore[arg-type]
    return out.getvalue()


def test_cloud_run_status_counts_active_and_idle_instances(fake: FakeGoogle) -> None:
    """The user asks how many instances run now: the newest point of each revision's series, by state."""
    fake.route("GET", SERVICES, _list(_service_in("l4", "run_service_ready.json")))
    fake.route("GET", SERIES, fixture("monitoring_run_instance_count.json"))
    report = status(fake, "l4")
    assert report.instances is not None
    assert (report.instances.active, report.instances.idle) == (3, 1)  # 2 + 1 active (two revisions), 1 idle
    assert report.instances.as_of == "2026-11-23T11:27:00Z"
    asked = next(seen for seen in fake.seen if seen.path.endswith("/timeSeries"))
    service = report.cloud_run.service if report.cloud_run else ""
    assert asked.query["filter"] == [
        (
            'metric.type="run.googleapis.com/container/instance_count" AND resource.type="cloud_run_revision" '
            f'AND resource.labels.service_name="{service}"'
        )
    ]
    assert asked.query["interval.endTime"] == ["2026-11-23T11:30:00Z"]
    assert "3 active, 1 idle (as of 2026-11-23T11:27:00Z)" in _printed(report)


def test_no_series_means_no_instance_ran_lately(fake: FakeGoogle) -> None:
    fake.route("GET", SERVICES, _list(_service_in("l4", "run_service_ready.json")))
    fake.route("GET", SERIES, {"unit": "1"})
    report = status(fake, "l4")
    assert report.instances is not None
    assert (report.instances.active, report.instances.idle) == (0, 0)
    assert "no instance ran" in (report.instances.note or "")


def test_an_unreadable_metric_does_not_hide_the_rollout_state(fake: FakeGoogle) -> None:
    """Monitoring denied: status still answers about the rollout, and says the count is unavailable."""
    fake.route("GET", SERVICES, _list(_service_in("l4", "run_service_ready.json")))
    fake.fail("GET", SERIES, "error_permission_denied.json")
    report = status(fake, "l4")
    assert report.exit_code == 0
    assert report.instances is not None
    assert report.instances.active is None
    assert "instance count unavailable" in _printed(report)


def test_a_flex_start_node_reports_its_termination_time_and_time_left(fake: FakeGoogle) -> None:
    """The shipped TPU stack is flex-start: status says when Google ends the node (now 11:30)."""
    node = dict(fixture("tpu_node_ready.json"), schedulingConfig={"terminationTimestamp": "2026-11-23T14:41:00Z"})
    fake.route("GET", QUEUED, fixture("tpu_queued_active.json"))
    fake.route("GET", NODE, node)
    report = status(fake, "tpu-v6e")
    assert report.lifetime is not None
    assert report.lifetime.termination_time == "2026-11-23T14:41:00Z"
    assert report.lifetime.time_left_s == 3 * 3600 + 11 * 60
    assert "the node's schedulingConfig.terminationTimestamp" in report.lifetime.source
    assert "2026-11-23T14:41:00Z, 3.2 h left" in _printed(report)


def test_without_a_termination_time_the_end_is_estimated_from_the_run_duration() -> None:
    """createTime 10:41 + the stack's 4 h maxRunDuration: 14:41, marked as an estimate."""
    now = datetime(2026, 11, 23, 11, 30, tzinfo=UTC)
    found = flex_start_lifetime(fixture("tpu_node_ready.json"), 4 * 3600, now=lambda: now)
    assert found.termination_time == "2026-11-23T14:41:00Z"
    assert found.source.startswith("estimate:")
    ended = flex_start_lifetime(fixture("tpu_node_ready.json"), 60, now=lambda: now)
    assert ended.time_left_s == 0
