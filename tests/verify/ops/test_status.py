"""`verify status` against a fake of Cloud Run Admin v2 and TPU v2: the states a rollout goes through."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime

import pytest

from remote.google_client import GoogleApis
from tests.fake_vllm import FakeVllm
from tests.verify.ops.google_fake import Body, FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, ops_stack
from verify.ops.readiness import probe_readiness
from verify.ops.status import Readiness, RolloutState, StatusReport, run_status, watch_status

SERVICES = rf"/run/v2/projects/{PROJECT}/locations/([a-z0-9-]+)/services"
REVISIONS = rf"/run/v2/projects/{PROJECT}/locations/[a-z0-9-]+/services/[a-z0-9-]+/revisions"
QUEUED = rf"/tpu/v2/projects/{PROJECT}/locations/us-east5-a/queuedResources/gemma-tpu-v6e-vllm"
NODE = rf"/tpu/v2/projects/{PROJECT}/locations/us-east5-a/nodes/gemma-tpu-v6e-vllm"


def _now() -> datetime:
    return datetime(2026, 11, 23, 11, 30, tzinfo=UTC)


def _service_in(stack: str, name: str) -> Body:
    """The fixture service, re-homed for another GPU stack (region and labels as deploy.py sets them)."""
    body = fixture(name)
    if stack == "rtx6000":
        text = json.dumps(body).replace("us-east4", "us-central1").replace("gemma-l4", "gemma-rtx6000")
        body = json.loads(text)
        body["labels"]["stack"] = "rtx6000"
    return body


def _list(*services: Body) -> Body:
    return {"services": list(services)}


def status(fake: FakeGoogle, stack: str, probe: object = None) -> StatusReport:
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_status(ops_stack(stack), apis, probe=probe, now=_now)  # type: ignore[arg-type]


def _ready_probe(calls: list[tuple[str, str]]) -> object:
    def probe(endpoint: str, auth: str) -> Readiness:
        calls.append((endpoint, auth))
        return Readiness(status="pass", summary="ready")

    return probe


@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_cloud_run_ready_reports_revision_traffic_and_readiness(fake: FakeGoogle, stack: str) -> None:
    """A ready service: its revision, 100% traffic, instances, URL, and the readiness line with an ID token."""
    other = dict(fixture("run_service_ready.json"), name="projects/proj-1/locations/x/services/unrelated", labels={})
    fake.route("GET", SERVICES, _list(other, _service_in(stack, "run_service_ready.json")))
    calls: list[tuple[str, str]] = []
    report = status(fake, stack, _ready_probe(calls))
    assert report.state is RolloutState.READY
    assert report.exit_code == 0
    assert report.cloud_run is not None
    assert report.cloud_run.latest_ready_revision == report.cloud_run.latest_created_revision
    assert report.cloud_run.traffic == ["100% latest"]
    assert (report.cloud_run.min_instances, report.cloud_run.max_instances) == (0, 1)
    assert calls == [(report.cloud_run.url, "google")]
    assert report.readiness == Readiness(status="pass", summary="ready")


@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_revision_failing_its_startup_probe_is_failed_with_reason_and_message(fake: FakeGoogle, stack: str) -> None:
    """The new revision never passed its startup probe: status says which, why, and where traffic stayed."""
    fake.route("GET", SERVICES, _list(_service_in(stack, "run_service_failed.json")))
    revisions = fixture("run_revisions_failed.json")
    if stack == "rtx6000":
        revisions = json.loads(
            json.dumps(revisions).replace("gemma-l4", "gemma-rtx6000").replace("us-east4", "us-central1")
        )
    fake.route("GET", REVISIONS, revisions)
    calls: list[tuple[str, str]] = []
    report = status(fake, stack, _ready_probe(calls))
    assert report.state is RolloutState.FAILED
    assert report.exit_code == 1
    run = report.cloud_run
    assert run is not None
    prefix = f"gemma-{stack}-vllm-service-3f2a1b7"
    assert run.failing_revision == f"{prefix}-00003-q9p"
    assert run.failing_reason == "Ready REVISION_FAILED"
    assert "failed the configured startup probe checks" in (run.failing_message or "")
    assert run.traffic == [f"100% {prefix}-00002-x7k"]
    assert f"traffic stays on {prefix}-00002-x7k" in report.summary
    assert report.fix == f"gemma-verify logs --stack {stack} --errors"
    assert calls == []  # no readiness poll of a failed rollout


def test_gated_candidate_is_ready_at_0_percent_and_probed_on_its_own_url(fake: FakeGoogle) -> None:
    """A gated rollout: the candidate is ready but serves nobody yet; status says so, names promote, and
    polls the candidate's tag URL (the service URL still reaches the old revision)."""
    fake.route("GET", SERVICES, _list(fixture("run_service_candidate.json")))
    calls: list[tuple[str, str]] = []
    report = status(fake, "l4", _ready_probe(calls))
    assert report.state is RolloutState.READY
    run = report.cloud_run
    assert run is not None
    assert (run.candidate_revision, run.candidate_percent) == ("gemma-l4-vllm-service-3f2a1b7-5d1e0c2a9b", 0)
    assert run.traffic == [
        "100% gemma-l4-vllm-service-3f2a1b7-3f2a9c1b7e",
        "0% gemma-l4-vllm-service-3f2a1b7-5d1e0c2a9b (tag candidate)",
    ]
    assert "0% of the traffic" in report.summary
    assert report.fix is not None
    assert "promote --stack l4" in report.fix
    assert calls == [("https://candidate---gemma-l4-vllm-service-3f2a1b7-uk.a.run.app", "google")]


def test_stack_without_a_service_is_not_deployed(fake: FakeGoogle) -> None:
    """Before the first `pulumi up` (or after a destroy) status says so and what to run, exit 1."""
    fake.route("GET", SERVICES, {})
    report = status(fake, "l4")
    assert report.state is RolloutState.NOT_DEPLOYED
    assert report.fix == "pulumi up --stack l4"
    assert report.exit_code == 1


@pytest.mark.parametrize(("stack", "path"), [("l4", SERVICES), ("rtx6000", SERVICES), ("tpu-v6e", QUEUED)])
def test_api_disabled_is_unknown_with_the_enable_command(fake: FakeGoogle, stack: str, path: str) -> None:
    """403 SERVICE_DISABLED: status could not ask (exit 2) and names the command that fixes it."""
    disabled = fixture("error_service_disabled.json")
    service = "tpu.googleapis.com" if stack == "tpu-v6e" else "run.googleapis.com"
    disabled["error"]["details"][0]["metadata"]["service"] = service
    fake.route("GET", path, disabled, status=403)
    report = status(fake, stack)
    assert report.state is RolloutState.UNKNOWN
    assert report.exit_code == 2
    assert report.fix == f"enable it: gcloud services enable {service} --project proj-1"


@pytest.mark.parametrize(("stack", "path"), [("l4", SERVICES), ("rtx6000", SERVICES), ("tpu-v6e", QUEUED)])
def test_permission_denied_is_unknown_naming_the_permission(fake: FakeGoogle, stack: str, path: str) -> None:
    """403 IAM_PERMISSION_DENIED: exit 2, and the permission Google said is missing."""
    denied = fixture("error_permission_denied.json")
    permission = "tpu.queuedresources.get" if stack == "tpu-v6e" else "run.services.list"
    denied["error"]["details"][0]["metadata"]["permission"] = permission
    fake.route("GET", path, denied, status=403)
    report = status(fake, stack)
    assert report.exit_code == 2
    assert permission in (report.fix or "")


def test_watch_follows_a_rollout_until_ready(fake: FakeGoogle) -> None:
    """--watch: rolling out, then ready; each change is reported and no real time passes."""
    answers = [
        fixture("run_service_rolling.json"),
        fixture("run_service_rolling.json"),
        fixture("run_service_ready.json"),
    ]

    def services(_m: re.Match[str], _q: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        return 200, _list(answers.pop(0) if len(answers) > 1 else answers[0])

    fake.route("GET", SERVICES, services)
    fake.route("GET", REVISIONS, {"revisions": []})
    slept: list[float] = []
    changes: list[RolloutState] = []
    with GoogleApis(tokens, api_root=fake.url) as apis:
        stack = ops_stack("l4")
        report = watch_status(
            lambda: run_status(stack, apis, now=_now),
            timeout_s=600,
            interval_s=15,
            on_change=lambda r: changes.append(r.state),
            clock=lambda: float(len(slept) * 15),
            sleep=slept.append,
        )
    assert report.state is RolloutState.READY
    assert report.exit_code == 0
    assert changes == [RolloutState.IN_PROGRESS, RolloutState.READY]
    assert slept == [15, 15]


def test_watch_gives_up_at_its_timeout(fake: FakeGoogle) -> None:
    """A rollout that never settles ends the watch at --timeout, exit 1, marked timed out."""
    fake.route("GET", SERVICES, _list(fixture("run_service_rolling.json")))
    fake.route("GET", REVISIONS, {"revisions": []})
    slept: list[float] = []
    with GoogleApis(tokens, api_root=fake.url) as apis:
        stack = ops_stack("l4")
        report = watch_status(
            lambda: run_status(stack, apis, now=_now),
            timeout_s=40,
            interval_s=15,
            clock=lambda: float(sum(slept)),
            sleep=slept.append,
        )
    assert report.timed_out
    assert report.exit_code == 1
    assert slept == [15, 15, 10]


def test_tpu_queued_resource_waiting_then_failed(fake: FakeGoogle) -> None:
    """WAITING_FOR_RESOURCES (with the time left before tpu.activeDeadline), then FAILED with Google's reason."""
    answers = [fixture("tpu_queued_waiting.json"), fixture("tpu_queued_failed.json")]
    fake.route("GET", QUEUED, lambda _m, _q, _b: (200, answers.pop(0)))
    seen: list[StatusReport] = []
    with GoogleApis(tokens, api_root=fake.url) as apis:
        stack = ops_stack("tpu-v6e")
        report = watch_status(
            lambda: run_status(stack, apis, now=_now),
            timeout_s=3600,
            interval_s=60,
            on_change=seen.append,
            clock=lambda: 0.0,
            sleep=lambda _s: None,
        )
    waiting, failed = seen
    assert waiting.state is RolloutState.IN_PROGRESS
    assert waiting.tpu is not None
    assert waiting.tpu.state == "WAITING_FOR_RESOURCES"
    assert waiting.tpu.deadline_left_s == 30 * 60  # created 10:00, activeDeadline 2h, now 11:30
    assert "30 min left before tpu.activeDeadline" in waiting.summary
    assert "asia-northeast1-b" in (waiting.fix or "")
    assert waiting.tpu.valid_until == "2026-11-23T16:00:00Z"
    assert failed is report
    assert report.state is RolloutState.FAILED
    assert report.exit_code == 1
    assert "There is no more capacity in the zone" in report.summary
    assert "pulumi up --refresh --stack tpu-v6e" in (report.fix or "")


def test_tpu_active_node_ready_reports_endpoint_and_probes_without_credentials(fake: FakeGoogle) -> None:
    """ACTIVE + READY/HEALTHY: the internal endpoint on the stack's port, /health polled without a key."""
    fake.route("GET", QUEUED, fixture("tpu_queued_active.json"))
    fake.route("GET", NODE, fixture("tpu_node_ready.json"))
    calls: list[tuple[str, str]] = []
    report = status(fake, "tpu-v6e", _ready_probe(calls))
    assert report.state is RolloutState.READY
    assert report.tpu is not None
    assert (report.tpu.node_state, report.tpu.node_health) == ("READY", "HEALTHY")
    assert report.tpu.endpoint == "http://10.202.0.7:8000"
    assert calls == [("http://10.202.0.7:8000", "none")]


def test_tpu_preempted_node_is_failed(fake: FakeGoogle) -> None:
    """A spot node Google took back is a failed deployment, with how to queue again."""
    node = dict(fixture("tpu_node_ready.json"), state="PREEMPTED", health="HEALTH_UNSPECIFIED")
    fake.route("GET", QUEUED, fixture("tpu_queued_active.json"))
    fake.route("GET", NODE, node)
    report = status(fake, "tpu-v6e")
    assert report.state is RolloutState.FAILED
    assert "pulumi up --refresh" in (report.fix or "")


def test_tpu_without_a_queued_resource_is_not_deployed(fake: FakeGoogle) -> None:
    """404 on the queued resource: nothing queued (or a finished flex-start run was deleted)."""
    report = status(fake, "tpu-v6e")
    assert report.state is RolloutState.NOT_DEPLOYED
    assert report.exit_code == 1


async def test_readiness_probe_uses_verify_healths_readiness_line() -> None:
    """The real probe: one /health poll against a vLLM-shaped server, classified as verify health does."""
    async with FakeVllm() as server:
        result = await asyncio.to_thread(probe_readiness, server.url, "none")
    assert result.status == "pass"
    assert result.summary == "ready"


def test_readiness_probe_reports_an_endpoint_that_does_not_answer() -> None:
    """An internal TPU endpoint seen from a laptop: the line says unreachable instead of hanging."""
    result = probe_readiness("http://127.0.0.1:9", "none")
    assert result.status == "unreachable"
