"""`verify metrics` against a hostile or broken /metrics body: never a crash, never an impossible number.

Red team: a malformed histogram crashed `verify metrics` (a bucket bound `le="abc"`, a draft position
`position="x"`), a negative `_sum` reported a mean TTFT of -10,000 ms, and `position="1000000000"` asked the
report for a list of a billion rates. Each case is reported as an unreadable histogram, named, and the rest of
the report stands.
"""

from __future__ import annotations

import datetime
import io
import math
from collections.abc import AsyncIterator

import httpx
import pytest

from verify.metrics.cli import print_report
from verify.metrics.histograms import Histogram, problem_of
from verify.metrics.reading import (
    MAX_METRICS_BYTES,
    SPEC_POSITIONS,
    MetricsReadError,
    parse_snapshot,
    read_snapshot,
    report_of,
)

T0 = datetime.datetime(2026, 11, 26, 19, 0, tzinfo=datetime.UTC)
RUNNING = '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m"} 1.0\n'
TTFT = "vllm:time_to_first_token_seconds"


def ttft(buckets: list[tuple[str, str]], total: str, count: str) -> str:
    lines = [f"# TYPE {TTFT} histogram"]
    lines += [f'{TTFT}_bucket{{le="{le}",model_name="m"}} {value}' for le, value in buckets]
    lines += [f'{TTFT}_count{{model_name="m"}} {count}', f'{TTFT}_sum{{model_name="m"}} {total}']
    return RUNNING + "\n".join(lines) + "\n"


GOOD = [("0.1", "5.0"), ("1.0", "9.0"), ("+Inf", "10.0")]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (ttft(GOOD, "-100.0", "10.0"), "sum is -100.0"),
        (ttft(GOOD, "NaN", "10.0"), "sum is nan"),
        (ttft(GOOD, "+Inf", "10.0"), "sum is inf"),
        (ttft([("0.1", "9.0"), ("1.0", "5.0"), ("+Inf", "10.0")], "3.0", "10.0"), "not cumulative"),
        (ttft([("0.1", "-5.0"), ("1.0", "9.0"), ("+Inf", "10.0")], "3.0", "10.0"), "not a finite count"),
        (ttft([("0.1", "NaN"), ("1.0", "9.0"), ("+Inf", "10.0")], "3.0", "10.0"), "not a finite count"),
        (ttft([("0.1", "5.0"), ("1.0", "9.0"), ("+Inf", "7.0")], "3.0", "10.0"), "not cumulative"),
        (ttft([("0.1", "5.0"), ("1.0", "9.0"), ("+Inf", "12.0")], "3.0", "10.0"), "differs from its count"),
        (ttft([("0.1", "5.0"), ("1.0", "10.0")], "3.0", "10.0"), "no \\+Inf bucket"),
        (ttft([("abc", "5.0"), ("+Inf", "10.0")], "3.0", "10.0"), "le='abc' is not a number"),
        (ttft([("NaN", "5.0"), ("+Inf", "10.0")], "3.0", "10.0"), "bound is NaN"),
        (ttft(GOOD, "3.0", "-10.0"), "count is -10.0"),
        (ttft([("+Inf", "0.0")], "10000.0", "0.0"), "over no observations"),
    ],
)
def test_a_histogram_that_cannot_be_one_is_named_unreadable_and_never_averaged(body: str, why: str) -> None:
    """The report names the histogram and why; no mean or percentile is made from it; nothing crashes."""
    report = report_of("http://x", parse_snapshot(body, model="m", read_at=T0), None)
    assert "ttft" not in report.latency
    assert report.unreadable["ttft"].startswith(TTFT)
    assert why.replace("\\", "") in report.unreadable["ttft"] or pytest.fail(report.unreadable["ttft"])
    out = io.StringIO()
    print_report(report, out)
    assert "time to first token    unreadable, left out: vllm:time_to_first_token_seconds" in out.getvalue()


def test_a_negative_sum_no_longer_reads_as_a_mean_of_minus_ten_thousand_ms() -> None:
    """The exact red-team case: _sum -100 over 10 observations was reported as a mean TTFT of -10,000 ms."""
    report = report_of("http://x", parse_snapshot(ttft(GOOD, "-100.0", "10.0"), model="m", read_at=T0), None)
    out = io.StringIO()
    print_report(report, out)
    assert "-10,000" not in out.getvalue()
    assert "-10000" not in report.model_dump_json()


def test_a_good_histogram_beside_a_bad_one_is_still_reported() -> None:
    good = ttft(GOOD, "3.0", "10.0")
    bad_queue = (
        "# TYPE vllm:request_queue_time_seconds histogram\n"
        'vllm:request_queue_time_seconds_bucket{le="+Inf",model_name="m"} 4.0\n'
        'vllm:request_queue_time_seconds_count{model_name="m"} 4.0\n'
        'vllm:request_queue_time_seconds_sum{model_name="m"} -1.0\n'
    )
    report = report_of("http://x", parse_snapshot(good + bad_queue, model="m", read_at=T0), None)
    assert report.latency["ttft"].mean_ms == pytest.approx(300)
    assert set(report.unreadable) == {"queue"}


def test_a_window_whose_difference_is_not_a_histogram_is_not_reported_negative() -> None:
    """Two reads where a bucket went down (a restart, or a lying server) must not give negative counts or means:
    the later read stands alone."""
    before = parse_snapshot(ttft(GOOD, "3.0", "10.0"), model="m", read_at=T0)
    after = parse_snapshot(
        ttft([("0.1", "2.0"), ("1.0", "11.0"), ("+Inf", "12.0")], "1.0", "12.0"),
        model="m",
        read_at=T0 + datetime.timedelta(seconds=30),
    )
    report = report_of("http://x", after, before, window_s=30)
    ttft_window = report.latency["ttft"]
    assert ttft_window.count == 12
    assert ttft_window.mean_ms is not None
    assert ttft_window.mean_ms >= 0


@pytest.mark.parametrize("position", ["1000000000", "x", "-1", "²", "64"])
def test_a_draft_position_that_is_not_a_small_whole_number_is_unreadable(position: str) -> None:
    """A billion-entry list (or int('x')) from one label: refused, named; speculative decoding still reported."""
    body = RUNNING + (
        "# TYPE vllm:spec_decode_num_draft_tokens_total counter\n"
        'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 10.0\n'
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter\n"
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="m",position="{position}"}} 5.0\n'
    )
    report = report_of("http://x", parse_snapshot(body, model="m", read_at=T0), None)
    assert SPEC_POSITIONS in report.unreadable
    assert report.spec_decode is not None
    assert report.spec_decode.acceptance_by_position == []


def test_a_model_name_label_cannot_drive_the_terminal_or_forge_a_line() -> None:
    """`metrics` printed model_name labels raw: ESC sequences cleared the screen, a newline forged a line."""
    body = '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="m\\u001b[2J\\nFAKE"} 1.0\n'
    body = body.replace("\\u001b", "\x1b")
    report = report_of("http://x", parse_snapshot(body, model=None, read_at=T0), None)
    out = io.StringIO()
    print_report(report, out)
    printed = out.getvalue()
    assert "\x1b" not in printed
    assert "\nFAKE" not in printed
    assert "\\x1b[2J\\x0aFAKE" in printed


def test_the_rules_accept_every_real_histogram_shape() -> None:
    """The checks must not refuse what vLLM really exports: empty, all in +Inf, and ordinary."""
    assert problem_of(Histogram(buckets=((0.3, 0.0), (math.inf, 0.0)), total=0.0, count=0.0)) is None
    assert problem_of(Histogram(buckets=((0.3, 0.0), (math.inf, 4.0)), total=9.0, count=4.0)) is None
    assert problem_of(Histogram(buckets=((0.1, 1.0), (0.3, 3.0), (math.inf, 4.0)), total=0.5, count=4.0)) is None


async def test_an_endless_metrics_body_is_refused_not_read_into_memory() -> None:
    """A server answering /metrics with a body that never ends: read up to the bound, then refused (exit 1)."""
    sent = {"bytes": 0}

    async def endless() -> AsyncIterator[bytes]:
        chunk = b"# HELP x y\n" * 100_000
        while True:
            sent["bytes"] += len(chunk)
            yield chunk

    transport = httpx.MockTransport(lambda _request: httpx.Response(200, content=endless()))
    async with httpx.AsyncClient(base_url="http://vllm.test", transport=transport) as client:
        with pytest.raises(MetricsReadError, match="more than 32 MiB"):
            await read_snapshot(client, model=None)
    assert sent["bytes"] <= MAX_METRICS_BYTES + 2 * len(b"# HELP x y\n" * 100_000)
