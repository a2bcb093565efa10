"""Batch jobs: how many replicas finish ``--batch REQUESTS`` within ``--within HOURS``, and for how long they run.

Why: a nightly job of 200,000 documents was turned into a rate by hand and then billed 730 hours a month on every
TPU and GKE row, so a flex-start v6e that runs 6 hours a night lost to rows it should beat. A batch is priced for
the hours its job runs: the start (weights and engine, billed too) plus the requests at the replicas' sustained
rate, each run, times the runs a month; flex-start and spot capacity bill only while the job runs, and the cold
start is part of every run on every platform.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from serving.catalog import CatalogModel
from serving.cold_start import FUSE_SEQUENTIAL, ColdStartEstimate
from serving.latency import Replica, Requests, saturation_rate
from serving.shapes import accelerator_facts
from serving.tpu_offers import FLEX_START_MAX_RUN_SECONDS

# A job's client keeps the replicas below saturation: it drives them at this share of the rate they sustain
# (queues stay short; the latency model's saturation is an estimate with its stated error).
BATCH_UTILIZATION = 0.8
# A TPU VM or node is about ten minutes from granted to vLLM ready (weights and XLA compile: serving/tpu_offers.py).
TPU_START_S = 600.0


@dataclass(frozen=True)
class BatchRun:
    """One run of the job on a candidate: its replicas, the hours it bills, and its start."""

    replicas: int
    run_hours: float
    start_s: float
    per_replica_rate: float

    def describe(self, requests: int) -> str:
        return (
            f"{requests:,} requests at {self.per_replica_rate * self.replicas:.3g} req/s over {self.replicas} "
            f"replica(s) ({BATCH_UTILIZATION:.0%} of the rate each sustains) + a {self.start_s / 60:.0f}-minute start: "
            f"{self.run_hours:.2f} h a run"
        )


def start_seconds(model: CatalogModel, variant: str, accelerator: str) -> float:
    """What a run spends before its first request: a TPU's grant-to-ready time, else the GPU cold start
    (serving/cold_start.py: engine, the weights over a plain FUSE mount, compile)."""
    if accelerator_facts(accelerator).family == "tpu":
        return TPU_START_S
    return ColdStartEstimate(model.variant(variant).weights.bytes, FUSE_SEQUENTIAL).total_s


def plan_run(
    replica: Replica,
    requests: Requests,
    *,
    batch: int,
    within_hours: float,
    start_s: float,
    at_least: int,
    limit: int,
    flex_start_tpu: bool,
) -> BatchRun | str:
    """The fewest replicas (``at_least`` or more: the SLO's) that finish the batch in time, or why none do."""
    rate = BATCH_UTILIZATION * saturation_rate(replica, requests)
    window = within_hours * 3600 - start_s
    if window <= 0 or rate <= 0:
        return f"its {start_s / 60:.0f}-minute start leaves no time within {within_hours:g} h"
    replicas = max(at_least, math.ceil(batch / (rate * window)))
    if replicas > limit:
        return f"needs {replicas} replicas to finish in {within_hours:g} h (its platform's limit is {limit})"
    run_s = start_s + batch / (rate * replicas)
    if flex_start_tpu and run_s > FLEX_START_MAX_RUN_SECONDS:
        return f"a {run_s / 3600:.0f}-hour run is longer than flex-start's 7 days"
    return BatchRun(replicas, run_s / 3600, start_s, rate)


def caveat(provisioning: str) -> tuple[str, ...]:
    """What a batch user must plan for on spot and flex-start capacity."""
    if provisioning == "spot":
        return (
            (
                "spot: Google can reclaim the capacity at any time mid-job; the bench client's results file records "
                "each finished request, so rerun the rest (or fall back to flex-start or on-demand)"
            ),
        )
    if provisioning == "flex-start":
        return (
            (
                "flex-start: capacity is granted when available (it can wait hours): start the job with slack "
                "before its deadline; it then runs until its maxRunDuration"
            ),
        )
    return ()
