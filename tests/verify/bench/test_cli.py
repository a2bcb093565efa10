"""`python -m verify bench` / `compare` end to end: files written, exit codes, usage errors.

The CLI runs its own event loop (asyncio.run), so the fake server runs in a thread with its own
(``tests.fault_server.serving``).
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.fake_vllm import CHAT_PATH, FakeVllm, FakeVllmConfig, free_port
from tests.fault_server import serving
from verify.bench.results import load_results
from verify.cli import main

DATA = Path(__file__).parent / "data"
SMALL = ["--concurrency", "1,2", "--context", "16,32", "--max-tokens", "3", "--requests", "3", "--no-progress"]


def running(config: FakeVllmConfig | None = None) -> AbstractContextManager[FakeVllm]:
    return serving(FakeVllm(config or FakeVllmConfig(count_prompt_words=True, chat_template_tokens=3)))


def bench(server_url: str, output: Path, *extra: str) -> int:
    return main(["bench", "--url", server_url, "--model", "tiny-gemma", *SMALL, "--output", str(output), *extra])


def test_bench_writes_results_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a sweep whose results or reports a user cannot find afterwards."""
    output = tmp_path / "run.jsonl"
    with running() as server:
        code = bench(server.url, output, "--json")
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed) == 4
    assert {p.name for p in tmp_path.iterdir()} == {"run.jsonl", "run.csv", "run.md", "run.png", "run.metrics.json"}
    records = load_results(output).records
    assert [(r.requested_context, r.max_concurrency) for r in records] == [(16, 1), (16, 2), (32, 1), (32, 2)]
    assert all(r.success_rate == 1.0 and r.vllm_version == "0.32.0" for r in records)
    assert all(r.transport == "aiohttp" for r in records)
    snapshots = json.loads((tmp_path / "run.metrics.json").read_text())
    assert snapshots["before"]["running"] == 0.0
    assert "prefix-cache hit rate" in (tmp_path / "run.md").read_text()


def test_violated_slo_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against CI passing a deploy whose latency breaks the SLO."""
    config = FakeVllmConfig(count_prompt_words=True, ttft_s=0.03)
    one_cell = ["--context", "16", "--concurrency", "1"]
    with running(config) as server:
        # --allow-untrusted: on a busy machine the cell may be untrusted, and then it is "not judged" instead
        code = bench(
            server.url,
            tmp_path / "r.jsonl",
            *one_cell,
            "--slo",
            "mean_ttft_ms=20",
            "--slo",
            "success_rate=1",
            "--allow-untrusted",
        )
    assert code == 1
    assert "SLO violated" in capsys.readouterr().err


def test_existing_results_need_resume_and_resume_sends_nothing_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Guards against silently mixing two sweeps in one file, and --resume re-measuring done cells."""
    output = tmp_path / "r.jsonl"
    with running() as server:
        assert bench(server.url, output) == 0
        sent = sum(1 for r in server.requests if r.path == CHAT_PATH)
        assert bench(server.url, output) == 2
        assert "pass --resume" in capsys.readouterr().err
        before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
        assert bench(server.url, output, "--resume") == 0
        assert sum(1 for r in server.requests if r.path == CHAT_PATH) == sent
    assert "0 cells to measure, 4 already in" in capsys.readouterr().err
    # a resume that measures nothing changes no file (no empty metrics window, no rewritten report)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (FakeVllmConfig(front_door_status=401), "answered 401"),
        (FakeVllmConfig(served_name="other"), "does not serve 'tiny-gemma'; it serves ['other']"),
    ],
)
def test_unusable_endpoint_exits_2_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: FakeVllmConfig, message: str
) -> None:
    """Guards against a results file full of failures when the endpoint could never have answered."""
    with running(config) as server:
        assert bench(server.url, tmp_path / "r.jsonl") == 2
        assert not any(r.path == CHAT_PATH for r in server.requests)
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_unreachable_endpoint_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a stopped server being reported as a benchmark with 0% success."""
    assert bench(f"http://127.0.0.1:{free_port()}", tmp_path / "r.jsonl", "--connect-timeout", "2") == 2
    err = capsys.readouterr().err
    assert "is unreachable: connect_error (ClientConnectorError" in err  # refused, not "ConnectTimeout"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--concurrency", "0"], "--concurrency needs numbers of at least 1"),
        (["--context", "1k"], "--context takes comma-separated whole numbers"),
        (["--slo", "ttft=1"], "--slo key 'ttft' is not one of"),
        (["--accelerator", "h100"], "--accelerator 'h100' is not one of"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """Guards against a typo in a flag running a different sweep than the one asked for."""
    argv = ["bench", "--url", "http://127.0.0.1:9", "--output", str(tmp_path / "r.jsonl"), *flags]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(str(exit_.code))
    assert code == 2
    assert message in capsys.readouterr().err


def test_compare_prints_and_writes_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against `compare` needing anything but two results files."""
    markdown = tmp_path / "cmp.md"
    code = main(["compare", str(DATA / "l4-mtp-off.jsonl"), str(DATA / "l4-mtp-on.jsonl"), "--markdown", str(markdown)])
    assert code == 0
    assert "l4-mtp-off (A)" in capsys.readouterr().out
    assert "| 128 x 1 | 0.5 → 0.8 (+60%) ▲ |" in markdown.read_text()
    assert main(["compare", str(tmp_path / "missing.jsonl"), str(DATA / "l4-mtp-on.jsonl")]) == 2
