"""What a results line read back from a file must satisfy before any of its numbers is used again.

Why: ``--resume``, ``compare`` and the MCP tools read files that people copy, edit and concatenate. A
line verify wrote obeys the arithmetic of its own samples (the success rate is completed over completed
plus failed, a throughput is a count over the duration, no TTFT exceeds its request's end-to-end
latency...); a forged or damaged line does not, and its numbers used to come out again, judged and
even trusted (a ``success_rate`` of 1.0 over 0 completed and 4 failed passed a 0.99 gate). Each rule
below names the fields it read, so the refusal says which number is impossible and why.

These checks run only on lines parsed from a file (``CellRecord.model_validate_json(..., context=
{STORED: True})``); a record the sweep builds comes straight from its samples.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from verify.bench.results import CellRecord

# The validation context key that marks a record as read from a file.
STORED = "stored"
# Files round nothing, but hand-made fixtures and other tools do: a throughput within 0.1% of count over
# duration is consistent (a doubled or edited number is far outside it).
RELATIVE_SLACK = 1e-3
ABSOLUTE_SLACK = 1e-6
_QUANTILES = ("median", "p90", "p95", "p99")
# A rate is over a bandwidth ceiling only by more than this share (verify/bench/ceilings.py uses the same).
CEILING_MARGIN = 1.05


def _close(value: float, expected: float) -> bool:
    return math.isclose(value, expected, rel_tol=RELATIVE_SLACK, abs_tol=ABSOLUTE_SLACK)


def _at_most(low: float | None, high: float | None) -> bool:
    return low is None or high is None or low <= high * (1 + RELATIVE_SLACK) + ABSOLUTE_SLACK


def _negatives(record: CellRecord) -> list[str]:
    found = []
    for name in type(record).model_fields:
        value = getattr(record, name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            found.append(f"{name} is {value:g}, below 0")
    found += [f"errors[{kind}] is {count}, below 0" for kind, count in record.errors.items() if count < 0]
    return found


def _counts(record: CellRecord) -> list[str]:
    problems = []
    asked = record.completed + record.failed
    if record.success_rate is not None and asked and not _close(record.success_rate, record.completed / asked):
        problems.append(
            f"success_rate {record.success_rate:g} does not follow from completed {record.completed} and failed "
            f"{record.failed} ({record.completed / asked:g})"
        )
    if record.success_rate is not None and not 0 <= record.success_rate <= 1:
        problems.append(f"success_rate {record.success_rate:g} is not between 0 and 1")
    if asked > record.num_prompts:
        problems.append(
            f"completed {record.completed} + failed {record.failed} is more than the {record.num_prompts} "
            "requests the cell asked for (num_prompts)"
        )
    if sum(record.errors.values()) != record.failed:
        problems.append(f"errors count {sum(record.errors.values())} failures, but failed is {record.failed}")
    if record.total_output_tokens > record.completed * record.max_tokens:
        problems.append(
            f"total_output_tokens {record.total_output_tokens} is more than completed {record.completed} x "
            f"max_tokens {record.max_tokens}"
        )
    return problems


def _rates(record: CellRecord) -> list[str]:
    duration = record.duration
    tokens = record.total_input_tokens + record.total_output_tokens
    pairs = (
        ("request_throughput", record.request_throughput, record.completed),
        ("output_throughput", record.output_throughput, record.total_output_tokens),
        ("total_token_throughput", record.total_token_throughput, tokens),
    )
    problems = []
    for name, rate, count in pairs:
        if rate is None:
            continue
        if not duration:
            if rate > 0:
                problems.append(f"{name} {rate:g} with no measured duration")
            continue
        if not _close(rate, count / duration):
            problems.append(f"{name} {rate:g} is not {count} over duration {duration:g} s ({count / duration:g})")
    if above_ceiling(record) != record.exceeds_ceiling:
        problems.append(
            f"exceeds_ceiling is {str(record.exceeds_ceiling).lower()} but request_throughput "
            f"{record.request_throughput} against ceiling_request_throughput {record.ceiling_request_throughput}, "
            f"output_throughput {record.output_throughput} against ceiling_output_throughput "
            f"{record.ceiling_output_throughput} and mean_tpot_ms {record.mean_tpot_ms} against "
            f"ceiling_stream_tokens_per_s {record.ceiling_stream_tokens_per_s} say otherwise"
        )
    return problems


def above_ceiling(record: CellRecord) -> bool:
    """Whether the cell's rates exceed the ceilings it records: requests/s over the compute ceiling, output
    tokens/s over the batch's bandwidth ceiling, or one stream faster than one stream can decode."""
    ceiling = record.ceiling_request_throughput
    compute = ceiling is not None and record.request_throughput is not None and record.request_throughput > ceiling
    total, batch = record.output_throughput, record.ceiling_output_throughput
    output = total is not None and batch is not None and total > batch * CEILING_MARGIN
    stream, one = record.mean_tpot_ms, record.ceiling_stream_tokens_per_s
    streaming = stream is not None and stream > 0 and one is not None and 1000.0 / stream > one * CEILING_MARGIN
    return compute or output or streaming


def _latencies(record: CellRecord) -> list[str]:
    problems = []
    for metric in ("ttft", "tpot", "itl", "e2el"):
        values = [(q, getattr(record, f"{q}_{metric}_ms")) for q in _QUANTILES]
        present = [(q, v) for q, v in values if v is not None]
        problems += [
            f"{low}_{metric}_ms {a:g} is above {high}_{metric}_ms {b:g}"
            for (low, a), (high, b) in itertools.pairwise(present)
            if not _at_most(a, b)
        ]
    # Every request's first token comes no later than its end, so each statistic of TTFT is at most E2EL's.
    for statistic in ("mean", *_QUANTILES):
        ttft, e2el = getattr(record, f"{statistic}_ttft_ms"), getattr(record, f"{statistic}_e2el_ms")
        if not _at_most(ttft, e2el):
            problems.append(f"{statistic}_ttft_ms {ttft:g} is above {statistic}_e2el_ms {e2el:g}")
    return problems


def problems_of(record: CellRecord) -> list[str]:
    """Why this line cannot be one verify wrote (empty when it can)."""
    problems = _negatives(record)
    if not record.measured:
        if record.completed or record.failed:
            problems.append(f"a skipped cell with completed {record.completed} and failed {record.failed}")
        return problems
    if record.completed + record.failed == 0:
        problems.append("a measured cell with no request (completed 0 and failed 0)")
    return problems + _counts(record) + _rates(record) + _latencies(record)
