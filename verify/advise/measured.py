"""Measurements decide: which trusted speed record answers a candidate at a replica count, and its verdict.

Why: a record measured on the very deployment is better than any estimate, both ways: it can bring back a row the
estimate excluded (a probe once sent a user to a $2,379/month option where a measurement showed a $1,037 one would
do) and exclude a row the estimate admitted. It must be the very deployment: the same model, variant and shape,
the vLLM release the project deploys, and every serving argument that changes speed (MTP and its draft tokens, the
KV cache dtype, max-num-seqs where the load reaches it, the token budget per step, tensor parallelism). A
percentile SLO is judged on the record's percentile, never on its mean, and only where the cell's 95% interval on
it lies on one side of the SLO (a record with no sample count never decides one); a record that lacks the figure an SLO
names does not judge that SLO. Records answer a rate load too: a closed loop of ``c`` users that sustained ``X``
requests/s at its latencies answers a per-replica rate at most ``X`` (at the smallest such ``c``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from serving.speed_records import SpeedRecord, matching
from serving.vllm_facts import vllm_facts
from verify.advise.options import AdviseOptions
from verify.bench.confidence import PERCENTILE_STATS, min_samples

# The serving arguments a record states and the row's value each must equal (absent: vLLM's default).
_DEFAULT_KV_CACHE_DTYPE = "auto"


@dataclass(frozen=True)
class Cell:
    """What a candidate deploys, as a record is keyed: the arguments that change its speed."""

    model: str
    variant: str
    shape: str
    tensor_parallel: int
    max_num_seqs: int
    batched_tokens: int
    speculative_tokens: int
    kv_cache_dtype: str


@dataclass(frozen=True)
class Verdict:
    """A record's answer for one replica count: whether the SLO holds, the figures, and the record."""

    meets: bool
    record: SpeedRecord
    figures: dict[str, float]
    how: str


def _int_arg(record: SpeedRecord, flag: str) -> int | None:
    value = record.serving_args.get(flag)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def same_deployment(record: SpeedRecord, cell: Cell, load: int) -> bool:
    """Whether the record was served as the cell would be: release, MTP, KV dtype, TP, token budget, and the
    sequence cap where ``load`` (its users or in-flight requests) reaches either side's."""
    if record.vllm_version != vllm_facts().release or record.speculative_tokens != cell.speculative_tokens:
        return False
    if record.serving_args.get("--kv-cache-dtype", _DEFAULT_KV_CACHE_DTYPE) != cell.kv_cache_dtype:
        return False
    if (_int_arg(record, "--tensor-parallel-size") or 1) != cell.tensor_parallel:
        return False
    budget = _int_arg(record, "--max-num-batched-tokens")
    if budget is not None and budget != cell.batched_tokens:
        return False
    seqs = _int_arg(record, "--max-num-seqs")
    return seqs is None or min(seqs, load) == min(cell.max_num_seqs, load)


def _figures(record: SpeedRecord, replicas: int) -> dict[str, float]:
    return {
        key: value
        for key, value in {
            "p95_ttft_ms": record.p95_ttft_ms,
            "mean_ttft_ms": record.mean_ttft_ms,
            "tpot_ms": record.p95_tpot_ms if record.p95_tpot_ms is not None else record.mean_tpot_ms,
            "requests_per_s": record.request_throughput * replicas,
        }.items()
        if value is not None
    }


def percentile_decision(record: SpeedRecord, field: str, slo_ms: float) -> bool | str:
    """Whether the record's ``field`` (a p95 in ms) meets ``slo_ms``, decided on the cell's 95% interval
    (verify/bench/confidence.py): its upper bound at or under the SLO meets it, its lower bound over it misses;
    otherwise (or with no count, or too few samples for an interval to exist) why the record does not decide.

    Why: a p95 from 20 requests is about the 19th-slowest of 20; one just under the SLO says little about the
    deployment's real p95, and admitting a row on it sends a user to a deployment that misses the SLO."""
    value = getattr(record, field)
    if value is None:
        return f"not decided: the record has no {field}"
    if record.completed is None:
        return f"not decided: the record carries no sample count (p95 {value:,.0f} ms), so no interval"
    needed = min_samples(PERCENTILE_STATS["p95"])
    interval = record.ci.get(field)
    if interval is None or len(interval) != 2:
        short = f", fewer than the {needed} a p95 interval needs" if record.completed < needed else ", no interval"
        return f"not decided ({record.completed} samples{short}; p95 {value:,.0f} ms)"
    low, high = interval
    if high <= slo_ms:
        return True
    if low > slo_ms:
        return False
    return f"not decided ({record.completed} samples, interval {low:,.0f}-{high:,.0f} ms against {slo_ms:,.0f} ms)"


def judged(record: SpeedRecord, options: AdviseOptions, replicas: int) -> bool | str:
    """Whether the record meets the SLO at ``replicas`` (True/False), or why it does not decide: it lacks a figure
    an SLO names (a p95 TPOT SLO is never judged on a mean TPOT), or its interval straddles a percentile SLO."""
    slo = options.effective_slo
    checks: list[bool] = []
    for field, limit in (("p95_ttft_ms", slo.p95_ttft_ms), ("p95_tpot_ms", slo.p95_tpot_ms)):
        if limit is None:
            continue
        decision = percentile_decision(record, field, limit)
        if isinstance(decision, str):
            return f"{field.removesuffix('_ms').replace('_', ' ')} {decision}"
        checks.append(decision)
    if slo.goodput is not None:
        checks.append(0.95 * record.request_throughput * replicas >= slo.goodput)
    return all(checks)


def verdict(records: list[SpeedRecord], cell: Cell, options: AdviseOptions, replicas: int) -> Verdict | str | None:
    """The newest matching record's verdict at ``replicas`` (users: at the per-replica users; rate: the smallest
    closed loop that sustained the per-replica rate); why the newest matching record did not decide (the estimate
    stands); or None where no record matches."""
    workload = matching(records, cell.model, cell.variant, cell.shape, options.prompt_tokens, options.output_tokens)
    if options.users is not None:
        load = math.ceil(options.users / replicas)
        found = [r for r in workload if r.concurrency == load and same_deployment(r, cell, load)]
        how = f"{load} users a replica"
    else:
        assert options.rate is not None
        rate = options.rate / replicas
        sustained = [r for r in workload if r.request_throughput >= rate and same_deployment(r, cell, r.concurrency)]
        least = min((r.concurrency for r in sustained), default=None)
        found = [r for r in sustained if r.concurrency == least]
        how = f"{rate:.3g} req/s a replica, answered by a closed loop of {least} users that sustained more"
    undecided: str | None = None
    for record in sorted(found, key=lambda r: r.measured_at, reverse=True):
        meets = judged(record, options, replicas)
        if isinstance(meets, bool):
            return Verdict(meets, record, _figures(record, replicas), how)
        undecided = undecided or (
            f"speed record at {replicas} replica(s) ({how}): {meets}; the estimate stands ({record.cite()})"
        )
    return undecided


def measured_replica_counts(records: list[SpeedRecord], cell: Cell, options: AdviseOptions, limit: int) -> list[int]:
    """The replica counts some record answers for the cell (users: those whose per-replica users a record ran;
    rate: every count from 1, since a record answers every rate below its throughput), ascending, up to ``limit``."""
    workload = [
        r
        for r in matching(records, cell.model, cell.variant, cell.shape, options.prompt_tokens, options.output_tokens)
        if r.speculative_tokens == cell.speculative_tokens
    ]
    if not workload:
        return []
    if options.rate is not None:
        return list(range(1, limit + 1))
    assert options.users is not None
    counts = {max(1, math.ceil(options.users / r.concurrency)) for r in workload}
    # ceil(users / replicas) == concurrency may hold for a run of counts; its least member is what matters.
    exact = {n for n in counts if n <= limit and math.ceil(options.users / n) in {r.concurrency for r in workload}}
    return sorted(exact)
