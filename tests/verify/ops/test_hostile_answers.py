"""A misbehaving Google API: every odd answer ends in "could not check" (exit 2), never a hang, a traceback
or a confident wrong verdict ("not deployed", a BLOCKER) built from an answer that could not be read."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from remote.google_client import MAX_PAGES, GoogleApis
from remote.google_errors import CannotCheckError
from tests.verify.ops.google_fake import Body, FakeGoogle, fixture, tokens
from tests.verify.ops.scenarios import PROJECT, ROOT, Project, ops_stack
from tests.verify.ops.test_logs import ENTRIES, entry, logs
from tests.verify.ops.test_status import NODE, QUEUED, SERVICES, status
from verify.cli import main
from verify.ops import google as ops_google
from verify.ops.findings import EXIT_CANNOT_CHECK, Verdict
from verify.ops.google import API_ROOT_ENV
from verify.ops.logs import run_logs
from verify.ops.preflight import run_preflight
from verify.ops.status import RolloutState, StatusReport, run_status


def _endless_empty_pages(_m: re.Match[str], _q: dict[str, list[str]], body: Body) -> tuple[int, Body]:
    """Cloud Logging's answer to a slow search: no entries yet, and a token for the next page, forever."""
    return 200, {"nextPageToken": f"t{body.get('pageToken', 't0')}"}


def test_logs_stop_after_a_bounded_number_of_empty_pages(fake: FakeGoogle) -> None:
    """Empty pages with a nextPageToken used to be followed forever (the CLI hung, the MCP thread too)."""
    fake.route("POST", ENTRIES, _endless_empty_pages)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_logs(ops_stack("l4"), apis)
    assert report.exit_code == EXIT_CANNOT_CHECK
    assert "stopped reading" in (report.problem or "")
    assert len([seen for seen in fake.seen if seen.path == ENTRIES]) == MAX_PAGES


def test_a_service_past_the_page_bound_is_could_not_check_not_not_deployed(fake: FakeGoogle) -> None:
    """A project whose stack service sits on page 21 must not be told "not deployed, run pulumi up"."""

    def pages(_m: re.Match[str], query: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        page = int(query.get("pageToken", ["0"])[0])
        other = dict(fixture("run_service_ready.json"), name=f"projects/{PROJECT}/locations/x/services/o{page}")
        return 200, {"services": [dict(other, labels={})], "nextPageToken": str(page + 1)}

    fake.route("GET", SERVICES, pages)
    report = status(fake, "l4")
    assert report.state is RolloutState.UNKNOWN
    assert report.exit_code == EXIT_CANNOT_CHECK
    assert "more than 20 pages" in report.summary


def test_a_quota_list_past_the_page_bound_is_unchecked_not_a_blocker(fake: FakeGoogle) -> None:
    """Quota lists cut at the bound made the GPU quota "missing", a BLOCKER; it is UNCHECKED now."""
    Project().install(fake)

    def pages(_m: re.Match[str], query: dict[str, list[str]], _b: Body) -> tuple[int, Body]:
        page = int(query.get("pageToken", ["0"])[0])
        return 200, {"quotaInfos": [{"quotaId": f"Other{page}"}], "nextPageToken": str(page + 1)}

    fake.route(
        "GET", rf"/cloudquotas/v1/projects/{PROJECT}/locations/global/services/run\.googleapis\.com/quotaInfos", pages
    )
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("l4"), apis)
    quota = [finding for finding in report.findings if finding.area == "quota"]
    assert [finding.verdict for finding in quota] == [Verdict.UNCHECKED]
    assert report.exit_code == EXIT_CANNOT_CHECK


@pytest.mark.parametrize(
    ("route", "answer"),
    [
        pytest.param(SERVICES, [1, 2, 3], id="a JSON array instead of an object"),
        pytest.param(SERVICES, {"services": "gemma"}, id="services not a list"),
        pytest.param(
            SERVICES, {"services": [dict(fixture("run_service_ready.json"), labels="stack=l4")]}, id="labels a string"
        ),
        pytest.param(
            SERVICES,
            {
                "services": [
                    dict(
                        fixture("run_service_ready.json"),
                        trafficStatuses=[{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": "ten"}],
                    )
                ]
            },
            id="percent ten",
        ),
    ],
)
def test_a_wrong_shape_is_could_not_check_not_not_deployed(fake: FakeGoogle, route: str, answer: object) -> None:
    """A body of the wrong shape was read as `{}`: "not deployed, run pulumi up" (exit 1), or a traceback."""
    fake.route("GET", route, answer)  # type: ignore[arg-type]
    report = status(fake, "l4")
    assert report.state is RolloutState.UNKNOWN
    assert report.exit_code == EXIT_CANNOT_CHECK
    assert "run API" in report.summary


def test_a_tpu_node_of_the_wrong_shape_is_could_not_check(fake: FakeGoogle) -> None:
    """A node whose endpoints are a string must not crash `status` of a TPU stack."""
    fake.route("GET", QUEUED, fixture("tpu_queued_active.json"))
    fake.route("GET", NODE, dict(fixture("tpu_node_ready.json"), networkEndpoints="10.0.0.2"))
    report = status(fake, "tpu-v6e")
    assert report.exit_code == EXIT_CANNOT_CHECK


def test_a_usage_value_that_is_not_a_number_is_unchecked(fake: FakeGoogle) -> None:
    """Monitoring answering `int64Value: "abc"` crashed preflight with a traceback."""
    Project().install(fake)
    series = {"timeSeries": [{"points": [{"value": {"int64Value": "abc"}}]}]}
    fake.route("GET", rf"/monitoring/v3/projects/{PROJECT}/timeSeries", series)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(ops_stack("l4"), apis)
    quota = [finding for finding in report.findings if finding.area == "quota"]
    assert quota
    assert {finding.verdict for finding in quota} == {Verdict.UNCHECKED}
    assert "monitoring API answered in an unexpected shape" in quota[0].detail


def test_a_google_error_with_a_code_that_is_not_a_number_is_still_an_error(fake: FakeGoogle) -> None:
    """`{"error": {"code": "abc"}}` crashed the error parser; the status line is used instead."""
    fake.route("GET", SERVICES, {"error": {"code": "abc", "message": "x"}}, status=503)
    report = status(fake, "l4")
    assert report.exit_code == EXIT_CANNOT_CHECK
    assert "503" in report.summary


@pytest.fixture
def trickle() -> Iterator[str]:
    """An HTTP server that sends its answer one byte at a time, 50 ms apart (a 1-byte-per-2-s server, faster)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                for _ in range(100000):
                    if stop.is_set():
                        break
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        break
                    time.sleep(0.05)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(timeout=2)
    listener.close()


def test_a_trickling_answer_is_given_up_at_the_calls_deadline(trickle: str) -> None:
    """A 1-byte-per-2-s answer held `status` for 67 s: each call now has one overall deadline."""
    started = time.monotonic()
    with (
        GoogleApis(tokens, api_root=trickle, deadline_s=0.5, stall_s=0.3) as apis,
        pytest.raises(CannotCheckError, match=r"did not finish answering within 0\.5 s"),
    ):
        apis.get("run", "projects/x/locations/y/services")
    # The whole answer would take 100000 x 50 ms (83 min); the bound is loose for a loaded 2-core machine.
    assert time.monotonic() - started < 10


def test_status_with_a_trickling_api_exits_2_within_the_deadline(trickle: str) -> None:
    """The same through `status`: "unknown" (exit 2) with the reason, not a hang."""
    with GoogleApis(tokens, api_root=trickle, deadline_s=0.3, stall_s=0.2) as apis:
        report = run_status(ops_stack("l4"), apis)
    assert report.exit_code == EXIT_CANNOT_CHECK
    assert "did not finish answering" in report.summary


def test_an_oversized_answer_is_not_read(fake: FakeGoogle) -> None:
    """An answer larger than the cap is refused instead of filling memory."""
    fake.route("GET", SERVICES, {"services": [], "padding": "x" * 4096})
    with GoogleApis(tokens, api_root=fake.url, max_body_bytes=1024) as apis:
        report = run_status_with(apis)
    assert report.exit_code == EXIT_CANNOT_CHECK
    assert "more than 1024 bytes" in report.summary


def run_status_with(apis: GoogleApis) -> StatusReport:
    return run_status(ops_stack("l4"), apis)


# --- hostile text: control sequences and tokens in what Google supplies --------------------------------

CLEAR_AND_HIDE = "\x1b[2J\x1b[1A\x1b[2K\x1b]52;c;aGVsbG8=\x07\x9b31m"
HF = "hf_" + "Z9y8X7w6V5" * 4


def test_control_sequences_in_log_lines_are_escaped(fake: FakeGoogle) -> None:
    """Clear-screen, cursor-up-and-erase (hiding a CUDA OOM line) and OSC 52 clipboard writes reach no terminal."""
    report = logs(fake, "l4", [entry("l4", f"torch.OutOfMemoryError: CUDA out of memory{CLEAR_AND_HIDE}")])
    text = report.lines[0].text
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "\x9b" not in text
    assert "\\x1b[2J" in text
    assert report.lines[0].signature == "cuda-oom"  # still recognised


def test_a_condition_message_with_control_sequences_is_escaped(fake: FakeGoogle) -> None:
    """A revision's condition message from Google is text for a terminal: escaped before it is shown."""
    service = fixture("run_service_ready.json")
    service["terminalCondition"] = {"state": "CONDITION_FAILED", "message": f"boom{CLEAR_AND_HIDE}"}
    fake.route("GET", SERVICES, {"services": [service]})
    report = status(fake, "l4")
    assert "\x1b" not in report.model_dump_json()
    assert "\\x1b[2J" in report.summary


def test_a_megabytes_long_log_line_is_cut_and_marked(fake: FakeGoogle) -> None:
    """A 5 MB line was printed whole (15 M characters); it keeps its start and says how much was cut."""
    report = logs(fake, "l4", [entry("l4", "A" * 1_000_000)])
    text = report.lines[0].text
    assert len(text) < 5000
    assert text.endswith("[... cut: 996000 more characters]")


def test_two_adversarial_200kb_lines_are_scrubbed_quickly(fake: FakeGoogle) -> None:
    """Two 200 KB lines took 38 s in a quadratic credential regex (a hang for the CLI and the agent)."""
    started = time.monotonic()
    report = logs(fake, "l4", [entry("l4", "a" * 200_000), entry("l4", "eyJ-" * 50_000, second=1)])
    assert len(report.lines) == 2
    assert time.monotonic() - started < 10  # linear: milliseconds; the quadratic one took tens of seconds


def test_verify_logs_in_the_terminal_scrubs_tokens_and_the_shells_own_secrets(
    fake: FakeGoogle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`verify logs` printed token-shaped strings and the shell's own secrets found in log lines."""
    own_key = "shell-own-api-key-0123"
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(API_ROOT_ENV, fake.url)
    monkeypatch.setattr(ops_google, "adc_tokens", lambda: tokens)
    monkeypatch.setenv("VLLM_API_KEY", own_key)
    fake.route("POST", ENTRIES, {"entries": [entry("l4", f"loaded {HF} with key {own_key} {CLEAR_AND_HIDE}")]})
    for extra in ([], ["--json"]):
        main(["logs", "--stack", "l4", "--project", PROJECT, *extra])
        out = capsys.readouterr().out
        assert HF not in out
        assert own_key not in out
        assert "[redacted]" in out
        assert "\x1b[2J" not in out


# --- hostile input: flags ------------------------------------------------------------------------------


@pytest.mark.parametrize("project", ["victim:setIamPolicy?x=", "../../other", "a", "Proj-1", "proj-1/x", "p 1"])
def test_a_project_that_is_not_a_project_id_is_refused_before_any_call(
    fake: FakeGoogle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], project: str
) -> None:
    """`--project victim:setIamPolicy?x=` turned preflight's read into a POST to `...:setIamPolicy`."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv(API_ROOT_ENV, fake.url)
    monkeypatch.setattr(ops_google, "adc_tokens", lambda: tokens)
    assert main(["preflight", "--stack", "l4", "--project", project]) == 2
    assert "is not a Google Cloud project ID" in capsys.readouterr().err
    assert fake.seen == []


@pytest.mark.parametrize("project", ["my-project-123", "123456789012"])
def test_project_ids_and_numbers_are_accepted(project: str) -> None:
    """The refusal must not catch real IDs or project numbers."""
    from verify.ops.stack import load_ops_stack

    assert load_ops_stack("l4", root=ROOT, project=project).project == project


def test_since_beyond_cloud_loggings_retention_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """`--since 999999999d` overflowed into a traceback; it is capped at what Cloud Logging keeps."""
    with pytest.raises(SystemExit) as exited:
        main(["logs", "--stack", "l4", "--project", PROJECT, "--since", "999999999d"])
    assert exited.value.code == 2
    assert "at most 3650d" in capsys.readouterr().err
