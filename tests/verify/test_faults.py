"""verify against servers that misbehave on purpose, and against bad command lines.

Every case asserts the exit code, the one-line cause a user reads, and (for bench) what the results
file keeps: no hang past the limits the user gave, no traceback, no cell lost and none faked.
The CLI runs in-process (``verify.cli.main``); the server runs in its own thread (tests/fault_server.py).
"""

from __future__ import annotations

import csv
import json
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig
from tests.fault_server import Faults, FaultyVllm, ServerThread, serving
from verify import streaming
from verify.bench.results import CellRecord, load_results
from verify.cli import main
from verify.health import readiness

SWEEP = ["--concurrency", "1,2", "--context", "16,32", "--max-tokens", "3", "--requests", "3", "--no-progress"]
ONE_CELL = ["--concurrency", "1", "--context", "16", "--max-tokens", "3", "--requests", "2", "--warmup", "0"]


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    """The CLI as a user runs it; argparse's own exit (bad flags) becomes the code."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(str(exit_.code))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return Run(code, captured.out, captured.err)


def health(capsys: pytest.CaptureFixture[str], server: FakeVllm, *flags: str) -> tuple[int, dict[str, dict[str, str]]]:
    """``verify health --json``: the exit code and each check's document by name."""
    result = run(capsys, "health", "--url", server.url, "--model", "tiny-gemma", "--wait", "5", "--json", *flags)
    document = json.loads(result.out)
    assert document["exit_code"] == result.code
    return result.code, {check["name"]: check for check in document["checks"]}


def bench(capsys: pytest.CaptureFixture[str], url: str, output: Path, *flags: str) -> Run:
    return run(capsys, "bench", "--url", url, "--model", "tiny-gemma", "--output", str(output), *flags)


def generations(server: FakeVllm) -> int:
    return sum(1 for seen in server.requests if seen.path == CHAT_PATH)


# --- health -----------------------------------------------------------------------------------------


def test_health_stops_reading_a_stream_that_never_ends(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a server that streams tokens forever hanging `verify health` for ever."""
    with serving(FaultyVllm(Faults(endless_stream="text"))) as server:
        code, checks = health(capsys, server, "--max-tokens", "4")
    assert code == 1
    stream = checks["chat-stream"]
    assert stream["status"] == "fail"
    assert stream["got"].startswith("too_many_tokens: 5 text chunks (at least one token each) for max_tokens 4")
    assert "ignores max_tokens" in stream["cause"]


def test_health_gives_up_on_an_endless_stream_at_the_deadline(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against keep-alive comments without end outliving every limit (--timeout is never hit)."""
    started = time.perf_counter()
    with serving(FaultyVllm(Faults(endless_stream="comments"))) as server:
        code, checks = health(capsys, server, "--deadline", "0.5")
    assert time.perf_counter() - started < 10
    assert code == 1
    assert checks["chat-stream"]["got"].startswith("deadline_exceeded: the request did not end within 0.5 s")
    assert "--deadline" in checks["chat-stream"]["cause"]


def test_health_silence_before_done_is_a_read_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a server that stops talking without closing holding the check until the deadline."""
    with serving(FaultyVllm(Faults(silent_after_last_token="before_done"))) as server:
        code, checks = health(capsys, server, "--timeout", "0.5")
    assert code == 1
    assert checks["chat-stream"]["got"].startswith("read_timeout")
    assert "--timeout" in checks["chat-stream"]["cause"]


def test_health_silence_after_done_still_passes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against failing a complete answer because the server kept the connection open after [DONE]."""
    # The drain after [DONE] gives up after this grace whatever it is (1 s in use): the test need not wait it.
    monkeypatch.setattr(streaming, "DRAIN_GRACE_S", 0.05)
    with serving(FaultyVllm(Faults(silent_after_last_token="after_done"))) as server:
        code, checks = health(capsys, server, "--timeout", "30")
    assert code == 0
    assert float(checks["chat-stream"]["duration_s"]) < 5


def test_health_wrong_schema_json_is_not_blamed_on_the_chat_template(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against valid JSON of another API being reported as empty output from a broken template."""
    with serving(FaultyVllm(Faults(wrong_schema=True))) as server:
        code, checks = health(capsys, server)
    assert code == 1
    assert checks["chat"]["got"].startswith("200 but not a chat completion with choices")
    stream = checks["chat-stream"]
    assert stream["got"].startswith("malformed_stream: not a completion chunk")
    assert "not vLLM's SSE stream" in stream["cause"]
    assert "template" not in stream["cause"]


@pytest.mark.parametrize(
    ("path", "failing", "cause"),
    [
        ("/v1/models", "models", "not in the OpenAI/vLLM shape"),
        ("/version", "version", "not in the OpenAI/vLLM shape"),
        (CHAT_PATH, "chat", "not in the OpenAI/vLLM shape"),
        ("/metrics", "metrics", "/metrics is not vLLM's"),
    ],
)
def test_health_non_json_body_on_each_endpoint_names_the_check(
    capsys: pytest.CaptureFixture[str], path: str, failing: str, cause: str
) -> None:
    """Guards against a proxy's HTML page on one path being a traceback or a misleading cause."""
    with serving(FaultyVllm(Faults(not_json=frozenset({path})))) as server:
        code, checks = health(capsys, server)
    assert code == 1
    assert checks[failing]["status"] == "fail"
    assert cause in checks[failing]["cause"]
    assert "It works!" in checks[failing]["got"]


def test_health_html_on_health_is_still_ready(capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against judging /health's body: vLLM answers an empty 200 and only the status counts."""
    with serving(FaultyVllm(Faults(not_json=frozenset({"/health"})))) as server:
        code, checks = health(capsys, server)
    assert code == 0
    assert checks["readiness"]["status"] == "pass"


def test_health_wait_bounds_a_server_that_accepts_and_never_answers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards against one 30 s readiness poll outliving --wait (the kernel accepts, nobody answers)."""
    # A poll's floor (1 s in use, so that --wait 0 still looks once) scaled down with --wait: the bound is the same.
    monkeypatch.setattr(readiness, "MIN_POLL_S", 0.2)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        started = time.perf_counter()
        result = run(capsys, "health", "--url", url, "--wait", "0.2", "--json")
        took = time.perf_counter() - started
    assert result.code == 2
    ready = json.loads(result.out)["checks"][0]
    assert ready["status"] == "unreachable"
    assert ready["summary"].startswith("not ready after 0 s: no answer in time")
    assert took < 5


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--wait", "nan"], "--wait takes a finite number, got 'nan'"),
        (["--wait", "inf"], "--wait takes a finite number, got 'inf'"),
        (["--wait", "-1"], "--wait must be 0 seconds or more"),
        (["--timeout", "nan"], "--timeout takes a finite number"),
        (["--deadline", "0"], "--deadline must be more than 0 seconds"),
    ],
)
def test_health_unbounded_or_impossible_limits_are_refused(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """Guards against `--wait nan` polling a dead port for ever: every limit must be a finite number."""
    result = run(capsys, "health", "--url", "http://127.0.0.1:9", *flags)
    assert result.code == 2
    assert message in result.err


@pytest.mark.parametrize("command", ["health", "bench"])
def test_a_port_out_of_range_is_named(capsys: pytest.CaptureFixture[str], command: str, tmp_path: Path) -> None:
    """Guards against `--url http://host:99999` being answered "scheme is not http or https"."""
    extra = ["--output", str(tmp_path / "r.jsonl")] if command == "bench" else []
    result = run(capsys, command, "--url", "http://127.0.0.1:99999", *extra)
    assert result.code == 2
    assert "--url has a port outside 1-65535 (or not a number), got 'http://127.0.0.1:99999'" in result.err
    assert "scheme" not in result.err


# --- bench: what a cell records under faults ----------------------------------------------------------


@pytest.mark.parametrize(
    ("faults", "flags", "kind"),
    [
        (Faults(endless_stream="text"), [], "too_many_tokens"),
        (Faults(endless_stream="comments"), ["--deadline", "0.3"], "deadline_exceeded"),
        (Faults(wrong_schema=True), [], "malformed_stream"),
        (Faults(not_json=frozenset({CHAT_PATH})), [], "malformed_stream"),
    ],
)
def test_bench_counts_misbehaving_streams_and_fails_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, faults: Faults, flags: list[str], kind: str
) -> None:
    """Guards against endless or malformed streams hanging a sweep or passing as measurements."""
    output = tmp_path / "r.jsonl"
    with serving(FaultyVllm(faults)) as server:
        result = bench(capsys, server.url, output, *ONE_CELL, *flags)
    assert result.code == 1
    assert "failed SLO violated context 16 x concurrency 1: success_rate = 0 (SLO >= 1)" in result.err
    (record,) = load_results(output).records
    assert record.measured
    assert (record.completed, record.failed, record.errors) == (0, 2, {kind: 2})


def test_bench_without_tokenize_falls_back_to_probes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Guards against a /tokenize that answers HTML stopping a sweep that usage probes can calibrate."""
    output = tmp_path / "r.jsonl"
    with serving(FaultyVllm(Faults(not_json=frozenset({"/tokenize"})))) as server:
        result = bench(capsys, server.url, output, *ONE_CELL)
    assert result.code == 0, result.err
    (record,) = load_results(output).records
    assert record.prompt_length_source == "usage-probe"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/v1/models", "/v1/models did not answer a model list: <html>"),
        ("/version", None),
        ("/metrics", None),
    ],
)
def test_bench_non_json_discovery_bodies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: str, message: str | None
) -> None:
    """Guards against a proxy page on a discovery path being a traceback: fatal only where it must be."""
    output = tmp_path / "r.jsonl"
    with serving(FaultyVllm(Faults(not_json=frozenset({path})))) as server:
        result = bench(capsys, server.url, output, *ONE_CELL)
    if message is None:
        assert result.code == 0, result.err
        assert len(load_results(output).records) == 1
    else:
        assert result.code == 2
        assert message in result.err
        assert not output.exists()


def test_bench_fails_by_default_when_every_request_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Guards against a rollout whose every request fails passing CI because no --slo was given."""
    config = FakeVllmConfig(count_prompt_words=True, always_status={CHAT_PATH: 503})
    with serving(FakeVllm(config)) as server:
        failing = bench(capsys, server.url, tmp_path / "default.jsonl", *ONE_CELL)
        overridden = bench(capsys, server.url, tmp_path / "override.jsonl", *ONE_CELL, "--slo", "success_rate=0")
    assert failing.code == 1
    assert "success_rate = 0 (SLO >= 1)" in failing.err
    assert overridden.code == 0, overridden.err
    for name in ("default", "override"):
        (record,) = load_results(tmp_path / f"{name}.jsonl").records
        assert (record.failed, record.errors) == (2, {"http_503": 2})


def test_bench_that_measured_nothing_fails_and_writes_no_empty_reports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Guards against a green gate with no data: every cell skipped (context above max_model_len)."""
    output = tmp_path / "r.jsonl"
    with serving(FakeVllm(FakeVllmConfig(count_prompt_words=True))) as server:
        result = bench(capsys, server.url, output, *ONE_CELL[:2], "--context", "4096", *ONE_CELL[4:], "--allow-skipped")
        assert generations(server) == 0
    assert result.code == 1
    assert (
        "no cell was measured (prompt 4096 + max tokens 3 exceeds the server's max_model_len 2048): nothing to "
        "judge, so the run fails"
    ) in result.err
    assert {path.name for path in tmp_path.iterdir()} == {"r.jsonl", "r.metrics.json"}
    assert [record.status for record in load_results(output).records] == ["skipped"]


def test_bench_with_some_cells_skipped_fails_unless_allowed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Guards against a gate judged on part of the workload without the user saying that is fine."""
    cells = ["--concurrency", "1", "--context", "16,2046", "--max-tokens", "3", "--requests", "2", "--warmup", "0"]
    with serving(FakeVllm(FakeVllmConfig(count_prompt_words=True))) as server:
        strict = bench(capsys, server.url, tmp_path / "strict.jsonl", *cells, "--no-progress")
        allowed = bench(capsys, server.url, tmp_path / "allowed.jsonl", *cells, "--no-progress", "--allow-skipped")
    assert strict.code == 1
    assert "1 of 2 cells were not measured (prompt 2046 + max tokens 3 exceeds" in strict.err
    assert "pass --allow-skipped to accept that" in strict.err
    assert allowed.code == 0, allowed.err
    assert (tmp_path / "allowed.csv").exists()


# --- bench: unusable --output, found before anything is measured ----------------------------------------


def _directory(tmp_path: Path) -> Path:
    (tmp_path / "results").mkdir()
    return tmp_path / "results"


def _under_a_file(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("x")
    return tmp_path / "notes.txt" / "r.jsonl"


def _binary(tmp_path: Path) -> Path:
    (tmp_path / "r.jsonl").write_bytes(bytes(range(256)))
    return tmp_path / "r.jsonl"


def _report_is_a_directory(tmp_path: Path) -> Path:
    (tmp_path / "r.csv").mkdir()
    return tmp_path / "r.jsonl"


def _under_proc(_tmp_path: Path) -> Path:
    return Path("/proc/verify-bench-test/r.jsonl")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_directory, "is a directory; name a results file such as run.jsonl"),
        (_under_a_file, "notes.txt is a file, not a directory"),
        (_binary, "is not a results file of verify bench (not UTF-8 text)"),
        (_report_is_a_directory, "r.csv is a directory"),
        (_under_proc, "cannot create the directory /proc/verify-bench-test"),
    ],
)
def test_bench_refuses_an_unusable_output_before_measuring(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, make: object, message: str
) -> None:
    """Guards against measuring for hours and then failing (or losing the first cell) on --output."""
    output = make(tmp_path)  # type: ignore[operator]
    with serving(FakeVllm(FakeVllmConfig(count_prompt_words=True))) as server:
        result = bench(capsys, server.url, output, *ONE_CELL)
        assert server.requests == []
    assert result.code == 2
    assert result.err.startswith("python -m verify bench: error: --output ")
    assert message in result.err
    assert result.err.count("\n") == 1


# --- bench: the server dying mid-run, then coming back -------------------------------------------------


def _cells(records: list[CellRecord]) -> list[tuple[int, int, str, int, int]]:
    return [(r.requested_context, r.max_concurrency, r.status, r.completed, r.failed) for r in records]


def _csv_cells(path: Path) -> list[tuple[str, str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [(row["context_size"], row["concurrency"], row["success_rate"]) for row in csv.DictReader(handle)]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sweep's results from a server that never dies (read-only: what a cut and resumed sweep must match)."""
    output = tmp_path_factory.mktemp("reference") / "r.jsonl"
    with serving(FaultyVllm(Faults())) as healthy:
        assert main(["bench", "--url", healthy.url, "--model", "tiny-gemma", "--output", str(output), *SWEEP]) == 0
    return output


@pytest.mark.parametrize(
    ("die_after", "kept", "cause"),
    [
        # 1 warm-up + 3 measured at concurrency 1: the server dies after cell (16, 1).
        (4, 1, "context 16 x concurrency 2 was not measured: every request failed to connect (connect_error"),
        # ... and after (16, 2), 2 + 3 more: the next cell's prompts cannot be calibrated.
        (9, 2, "context 32 x concurrency 1 was not measured: prompts could not be calibrated: connect_error"),
    ],
)
def test_a_sweep_cut_by_the_server_dying_resumes_to_the_same_reports(  # noqa: PLR0917 - fixtures and the case's columns
    capsys: pytest.CaptureFixture[str], tmp_path: Path, reference: Path, die_after: int, kept: int, cause: str
) -> None:
    """Guards against a dead server's cells being written as measured (0 of N, never re-measured by
    --resume), a traceback instead of the cause, and lost reports for the cells that were measured."""
    output = tmp_path / "cut" / "r.jsonl"
    thread = ServerThread()
    try:
        dying = thread.start(FaultyVllm(Faults(die_after_generations=die_after)))
        cut = bench(capsys, dying.url, output, *SWEEP)
        assert cut.code == 2
        assert [line for line in cut.err.splitlines() if "error:" in line] == [cut.err.splitlines()[-1]]
        assert f"the endpoint stopped answering: {cause}" in cut.err
        assert f"{kept} measured cells are kept in {output}" in cut.err
        assert "--resume" in cut.err
        assert _cells(load_results(output).records) == _cells(load_results(reference).records)[:kept]
        assert len(_csv_cells(output.with_suffix(".csv"))) == kept  # the measured cells' reports are written
        thread.stop(dying)

        back = thread.start(FaultyVllm(Faults(), port=dying.port))
        resumed = bench(capsys, back.url, output, *SWEEP, "--resume")
        assert resumed.code == 0, resumed.err
        assert f"{4 - kept} cells to measure, {kept} already in" in resumed.err
        assert generations(back) == sum((1 + 3, 2 + 3)[i % 2] for i in range(kept, 4))
        thread.stop(back)
    finally:
        thread.close()
    assert _cells(load_results(output).records) == _cells(load_results(reference).records)
    assert {p.name for p in output.parent.iterdir()} == {p.name for p in reference.parent.iterdir()}
    assert _csv_cells(output.with_suffix(".csv")) == _csv_cells(reference.with_suffix(".csv"))
    assert load_results(output).unreadable_lines == []
