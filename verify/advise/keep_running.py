"""What a platform can keep running: the gaps, risks and cold starts a steady SLO meets on each kind of capacity.

Why: rows were counted as meeting a steady SLO that the platform cannot keep up. A flex-start TPU was priced at
730 hours a month for a node Google deletes at its maxRunDuration; spot rows ignored preemption; scale-to-zero rows
ignored the cold start the first request after an idle gap pays (minutes, for a model's weights). Here each row of a
steady answer gets what its capacity means: a flex-start row its restart gap and the availability it leaves, a spot
row its risk and the fallback the stack can use, a scale-to-zero row the share of requests that meet a cold start
at the workload's idle gaps, added to its p95 TTFT where that share is above 5 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from serving.tpu_offers import FLEX_START_MAX_RUN_SECONDS
from verify.advise.batch import TPU_START_S

# Cloud Run keeps an idle instance for up to about 15 minutes before it scales in (cloud.google.com/run/docs/
# about-instance-autoscaling, "idle instances"; recalled, not re-read offline: unconfirmed).
CLOUD_RUN_IDLE_S = 15 * 60
# The share of requests beyond which a p95 includes what they meet.
TAIL_SHARE = 0.05
# A month's active hours below 730 are taken as one active window a day (the idle gap before each is a cold start).
WINDOWS_A_MONTH = 30


def restart_gap(provisioning: str, platform: str) -> str | None:
    """A flex-start row's restart plan and the gap it leaves, or None for capacity that is not deleted on a clock."""
    if provisioning != "flex-start":
        return None
    run_h = FLEX_START_MAX_RUN_SECONDS / 3600
    gap_s = TPU_START_S
    availability = run_h * 3600 / (run_h * 3600 + gap_s)
    where = "the TPU VM" if platform == "tpu" else "the node"
    return (
        f"flex-start: Google deletes {where} at its maxRunDuration (7 days at most): steady service means a new "
        f"request every run, and each restart leaves a gap of at least {gap_s / 60:.0f} minutes (grant to ready) "
        f"plus the queue's wait with no replica serving: at best {availability:.2%} of the month, less with the "
        "wait; bridge it with a second placement or replica started before the first ends"
    )


def spot_risk(provisioning: str, platform: str) -> str | None:
    """A spot row's preemption risk and the fallback the stack would use, or None for other capacity."""
    if provisioning != "spot":
        return None
    fallback = {
        "tpu": "list a flex-start or another zone in tpu.placements so the next request falls back there",
        "gke": "GKE recreates the node when capacity returns; keep minNodes >= 2 across zones, or an on-demand pool "
        "for the floor, so one reclaim leaves replicas serving",
    }.get(platform, "keep an on-demand fallback")
    return f"spot: Google can reclaim the capacity at any time, with no replica until it is back; fallback: {fallback}"


@dataclass(frozen=True)
class ColdStarts:
    """How often a scale-to-zero row's requests meet a cold start, and what that does to its p95 TTFT."""

    share: float
    cold_start_s: float
    stays_warm_above_rps: float

    @property
    def in_p95(self) -> bool:
        return self.share > TAIL_SHARE

    def describe(self) -> str:
        where = "in its p95 TTFT" if self.in_p95 else "beyond its p95"
        return (
            f"scale to zero: {self.share:.1%} of requests (the first after each idle gap) wait the ~"
            f"{self.cold_start_s:.0f} s cold start ({where}); it stays warm above {self.stays_warm_above_rps:.2g} "
            f"req/s with traffic every hour, or with minInstances >= 1 (billed all month)"
        )


def cold_starts(rate_total: float, active_hours: float, cold_start_s: float) -> ColdStarts:
    """The share of requests that arrive to a scaled-in service: one cold start an active window when the month has
    idle hours, and, for sparse traffic, every request that comes after a gap longer than Cloud Run keeps an idle
    instance (Poisson arrivals: ``exp(-rate x idle)``)."""
    idle_windows = WINDOWS_A_MONTH if active_hours < 730 else 0
    requests = max(rate_total * active_hours * 3600, 1.0)
    at_window_starts = min(1.0, idle_windows * max(rate_total * cold_start_s, 1.0) / requests)
    after_gaps = math.exp(-rate_total * CLOUD_RUN_IDLE_S)
    return ColdStarts(
        share=max(at_window_starts, after_gaps),
        cold_start_s=cold_start_s,
        stays_warm_above_rps=math.log(1 / TAIL_SHARE) / CLOUD_RUN_IDLE_S,
    )
