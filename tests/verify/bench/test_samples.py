"""Metrics from the union of raw samples: the same numbers however many processes measured them."""

from __future__ import annotations

import pytest

from verify.bench.metrics import cell_metrics
from verify.bench.samples import (
    PhaseShare,
    Sample,
    measured_window,
    pooled_samples,
    split_counts,
    split_users,
    union_metrics,
)
from verify.bench.stall import StallSummary
from verify.streaming import FailureKind, StreamFailure, StreamResult

QUIET = StallSummary(1.0, 0.0, 100, 0.2)


def result(index: int) -> StreamResult:
    """A varied, deterministic request: TTFT and gaps spread so percentiles differ between subsets."""
    if index % 11 == 5:
        return StreamResult(
            ttft_s=None,
            itl_s=(),
            e2el_s=0.01 * index,
            output_tokens=None,
            prompt_tokens=None,
            finish_reason=None,
            text="",
            content_chunks=0,
            failure=StreamFailure(FailureKind.HTTP_503, f"overloaded {index % 3}", 503),
        )
    ttft = 0.05 + (index * 37 % 101) / 1000.0
    gaps = tuple(0.008 + ((index + k) * 13 % 7) / 1000.0 for k in range(7))
    return StreamResult(
        ttft_s=ttft,
        itl_s=gaps,
        e2el_s=ttft + sum(gaps),
        output_tokens=8,
        prompt_tokens=100 + index % 3,
        finish_reason="length",
        text="x" * 8,
        content_chunks=8,
    )


SAMPLES = [Sample(sent_at=10.0 + index * 0.013, result=result(index)) for index in range(97)]


def test_one_process_and_several_give_identical_metrics() -> None:
    """Guards against per-worker summaries being averaged (a p99 of p99s is not the p99) or the merge
    depending on how the users were split: every metric must equal the single-process one exactly."""
    single = [PhaseShare(9.9, 12.0, tuple(SAMPLES), QUIET, 12)]
    # The same requests measured by three workers, interleaved as closed loops interleave them.
    split = [
        PhaseShare(9.9, 11.4, tuple(SAMPLES[0::3]), QUIET, 4),
        PhaseShare(9.95, 12.0, tuple(SAMPLES[1::3]), QUIET, 4),
        PhaseShare(9.92, 11.9, tuple(reversed(SAMPLES[2::3])), QUIET, 4),
    ]
    one, many = union_metrics(single), union_metrics(split)
    assert one == many
    assert one.completed + one.failed == len(SAMPLES)
    assert one.failed > 0
    # ...and the merge really pools raw samples: averaging the workers' p99 TTFTs gives another number.
    per_worker_p99 = [union_metrics([share]).ttft.percentiles[99] for share in split]
    assert sum(per_worker_p99) / 3 != pytest.approx(one.ttft.percentiles[99], rel=1e-6)


def test_single_process_union_equals_the_plain_cell_metrics() -> None:
    """Guards against the worker path computing metrics differently from the definitions in metrics.py."""
    share = PhaseShare(9.9, 12.0, tuple(SAMPLES), QUIET, 12)
    assert union_metrics([share]) == cell_metrics([sample.result for sample in SAMPLES], 12.0 - 9.9)


def test_throughput_is_over_the_common_window() -> None:
    """Guards against req/s divided by one worker's phase (too high) or by the sum of the phases (too low)."""
    shares = [
        PhaseShare(100.0, 104.0, tuple(SAMPLES[:40]), QUIET, 2),
        PhaseShare(100.5, 105.0, tuple(SAMPLES[40:]), QUIET, 2),
    ]
    assert measured_window(shares) == pytest.approx(5.0)
    metrics = union_metrics(shares)
    assert metrics.request_throughput == pytest.approx(metrics.completed / 5.0)
    assert measured_window([]) == 0.0


def test_pooled_samples_are_in_send_order() -> None:
    """Guards against the merged order (and so the failure examples kept) depending on the split."""
    shares = [PhaseShare(0, 1, tuple(SAMPLES[1::2]), QUIET, 1), PhaseShare(0, 1, tuple(SAMPLES[0::2]), QUIET, 1)]
    assert pooled_samples(shares) == SAMPLES


def test_slim_samples_drop_only_the_text() -> None:
    """Guards against a worker sending megabytes of generated text, or losing a timing on the way."""
    slim = SAMPLES[0].slim()
    assert slim.result.text == ""
    assert slim.result.itl_s == SAMPLES[0].result.itl_s
    assert slim.sent_at == SAMPLES[0].sent_at


@pytest.mark.parametrize(
    ("users", "workers", "expected"),
    [(1, 4, [1]), (8, 2, [4, 4]), (10, 4, [3, 3, 2, 2]), (2048, 16, [128] * 16), (3, 3, [1, 1, 1])],
)
def test_users_are_split_evenly_and_no_worker_idles(users: int, workers: int, expected: list[int]) -> None:
    """Guards against a worker with zero users (a phase that never starts) or a lopsided split."""
    assert split_users(users, workers) == expected
    assert sum(expected) == users


def test_requests_follow_the_users() -> None:
    """Guards against requests lost or invented when a cell's requests are shared out."""
    assert split_counts(32, [3, 3, 2]) == [12, 12, 8]
    assert sum(split_counts(33, [3, 3, 2])) == 33
    assert split_counts(0, [1, 1]) == [0, 0]
    with pytest.raises(ValueError, match="users and workers"):
        split_users(0, 2)
