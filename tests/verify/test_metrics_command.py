"""`verify metrics`: vLLM's /metrics read once or over a window, with latency from its histograms.

The fixtures are two reads of a real vLLM 0.32.0 (CPU build) with ngram speculative decoding, 30 s
apart in spirit (see tests/verify/fixtures/README.md); the CLI runs against the local fake server.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import json
import math
from pathlib import Path

import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig, free_port
from tests.fault_server import serving
from verify import cli
from verify.endpoint import AuthKind, Target
from verify.metrics.cli import print_report
from verify.metrics.histograms import Histogram, distribution
from verify.metrics.reading import Snapshot, parse_snapshot, report_of
from verify.metrics.run import MAX_WINDOW_S, MetricsOptions, run_metrics
from verify.prom import MetricsParseError

FIXTURES = Path(__file__).parent / "fixtures"
T0 = datetime.datetime(2026, 11, 24, 7, 14, tzinfo=datetime.UTC)


def _real(name: str, seconds: float = 0.0) -> Snapshot:
    text = (FIXTURES / f"vllm-0.32-cpu-ngram-metrics-{name}.txt").read_text(encoding="utf-8")
    return parse_snapshot(text, model="tiny-gemma", read_at=T0 + datetime.timedelta(seconds=seconds))


def test_one_read_of_a_real_server_reports_since_start_with_exact_means() -> None:
    """Means come from _sum/_count exactly; the report says the numbers run since the server started."""
    report = report_of("http://x", _real("before"), None)
    assert report.window.kind == "since the server started"
    ttft = report.latency["ttft"]
    assert ttft.count == 4
    assert ttft.mean_ms == pytest.approx(2.4518485069274902 / 4 * 1000)
    assert set(report.latency) == {"ttft", "queue", "itl", "e2e", "prefill", "decode"}
    assert report.prompt_tokens == 108
    assert report.generation_tokens == 160
    assert report.running == 0


def test_two_reads_report_only_the_window_between_them() -> None:
    """A window must subtract counters and histograms, else a busy hour hides in a month of history."""
    report = report_of("http://x", _real("after", 30), _real("before"), window_s=30)
    assert report.window.kind == "window"
    assert report.window.seconds == 30
    assert report.latency["ttft"].count == 3
    assert report.latency["ttft"].mean_ms == pytest.approx((2.481804847717285 - 2.4518485069274902) / 3 * 1000)
    assert report.generation_tokens == 180
    assert report.prompt_tokens == 60
    assert "over 30 s" in report.window.describe()


def test_spec_decode_acceptance_overall_and_per_position_from_the_real_server() -> None:
    """ngram drafts on random text are all rejected: the real zeros must be reported, not hidden as missing."""
    report = report_of("http://x", _real("after", 30), _real("before"), window_s=30)
    assert report.spec_decode is not None
    assert report.spec_decode.drafts == 3
    assert report.spec_decode.draft_tokens == 7
    assert report.spec_decode.acceptance_rate == 0
    assert report.spec_decode.acceptance_by_position == [0.0, 0.0, 0.0]


TWO_ENGINES_WITH_ACCEPTANCE = """\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2.0
vllm:num_requests_running{engine="1",model_name="m"} 1.0
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 60.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 40.0
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 180.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"} 120.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 90.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 60.0
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 50.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="0"} 30.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 30.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="1"} 20.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="2"} 10.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="2"} 10.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 50.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 98.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 100.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 100.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 30.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="1.0",model_name="m"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="m"} 100.0
vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 100.0
vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 500.0
"""


def test_engines_are_summed_and_acceptance_per_position_is_accepted_over_drafts() -> None:
    """Data-parallel engines must add up; position k's rate is vLLM's: accepted at k / drafts."""
    report = report_of("http://x", parse_snapshot(TWO_ENGINES_WITH_ACCEPTANCE, model="m", read_at=T0), None)
    assert report.running == 3
    assert report.spec_decode is not None
    assert report.spec_decode.acceptance_rate == pytest.approx(0.5)
    assert report.spec_decode.mean_acceptance_length == pytest.approx(2.5)
    assert report.spec_decode.acceptance_by_position == pytest.approx([0.8, 0.5, 0.2])
    ttft = report.latency["ttft"]
    assert ttft.count == 200
    assert ttft.mean_ms == pytest.approx(2650)
    # 92 of 200 observations are above the last finite bound: p90 and p99 cannot be bounded.
    assert ttft.percentiles_at_most_ms == {"p50": 1000.0, "p90": None, "p99": None}
    out = io.StringIO()
    print_report(report, out)
    assert "p50 <=1,000, p90 >1,000, p99 >1,000" in out.getvalue()
    assert "by position 0: 80.0%, 1: 50.0%, 2: 20.0%" in out.getvalue()


def test_a_percentile_is_the_bucket_it_falls_in_not_an_interpolation_inside_it() -> None:
    """vLLM's queue buckets start at 300 ms: a 0.03 ms queue must not read as a 150 ms median."""
    queue = Histogram(buckets=((0.3, 4.0), (0.5, 4.0), (math.inf, 4.0)), total=0.00012, count=4.0)
    found = distribution(queue)
    assert found.mean_ms == pytest.approx(0.03)
    assert found.percentiles_at_most_ms["p50"] == pytest.approx(300)
    empty = distribution(Histogram(buckets=((0.3, 0.0), (math.inf, 0.0)), total=0.0, count=0.0))
    assert empty.mean_ms is None
    assert empty.percentiles_at_most_ms == {"p50": None, "p90": None, "p99": None}


def test_a_server_restart_inside_the_window_reports_the_new_totals() -> None:
    """Counters that went down mean a restart: the later read is all the window can say, never negative."""
    report = report_of("http://x", _real("before", 30), _real("after"), window_s=30)
    assert report.latency["ttft"].count == 4
    assert report.generation_tokens == 160


def test_text_that_is_not_prometheus_is_refused() -> None:
    with pytest.raises(MetricsParseError):
        parse_snapshot("<html>502 Bad Gateway</html>\n{", model=None, read_at=T0)


async def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(cli.main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


async def test_the_command_reads_a_server_and_prints_the_window(capsys: pytest.CaptureFixture[str]) -> None:
    async with FakeVllm() as server:
        code, out, err = await _cli(capsys, "metrics", "--url", server.url, "--model", "tiny-gemma")
        json_code, json_out, _ = await _cli(capsys, "metrics", "--url", server.url, "--json", "--window", "0.05")
        reads = [seen.path for seen in server.requests]
    assert code == 0, err
    assert "window: since the server started" in out
    assert "speculative decoding: off" in out
    assert json_code == 0
    assert json.loads(json_out)["window"]["seconds"] == 0.05
    assert reads.count("/metrics") == 3


@pytest.mark.parametrize(
    ("config", "code", "message"),
    [
        (FakeVllmConfig(metrics_body="# TYPE up gauge\nup 1.0\n"), 1, "not a vLLM server"),
        (FakeVllmConfig(front_door_status=403), 2, "answered 403"),
        (FakeVllmConfig(always_status={"/metrics": 404}), 1, "answered 404"),
    ],
)
async def test_what_is_not_vllms_metrics_is_named_with_its_exit_code(
    capsys: pytest.CaptureFixture[str], config: FakeVllmConfig, code: int, message: str
) -> None:
    async with FakeVllm(config) as server:
        got, _, err = await _cli(capsys, "metrics", "--url", server.url)
    assert got == code
    assert message in err


async def test_an_unreachable_server_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = await _cli(capsys, "metrics", "--url", f"http://127.0.0.1:{free_port()}")
    assert code == 2
    assert "connect_error" in err


def test_a_window_beyond_an_hour_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["metrics", "--url", "http://127.0.0.1:1", "--window", "7200"])
    assert "--window must be at most 3600" in capsys.readouterr().err


def test_the_typed_function_reads_once_or_over_a_window() -> None:
    """Guards against a tool (no argv) reading differently from `verify metrics`: one read reports since the
    server started, a window reads twice (the wait injected) and reports that window only; a window past the
    limit is refused by name."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    with serving(FakeVllm()) as server:
        target = Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.NONE, source="url")
        once = run_metrics(target, MetricsOptions())
        windowed = run_metrics(target, MetricsOptions(window_s=30), sleep=sleep)
    assert once.base_url == server.url
    assert once.window.kind == "since the server started"
    assert windowed.window.kind == "window"
    assert slept == [30]
    with pytest.raises(ValueError, match="window_s"):
        MetricsOptions(window_s=MAX_WINDOW_S + 1)
