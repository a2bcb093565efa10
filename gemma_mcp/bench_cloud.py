"""The bench tool's caps, and what it takes to run a sweep on the stack's Cloud Run load-generator job.

Why a separate set of caps: from the agent's machine a sweep is bounded to what a laptop can generate
honestly (128 users); the stack's load-generator job (components/bench_job.py, `verify bench
--on-cloud-run`) runs beside the service in its region and sweeps to the 2048 users the hand-made
deployments measured. That run costs money (the job's tasks, and the service scaled out to its
maxInstances) and loads the service, so it needs both the server's --allow-changes and the call's
confirm=<stack name>, like every tool that changes what the user pays for.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemma_mcp.change_gate import confirmed_stack_change
from gemma_mcp.context import ServerContext


@dataclass(frozen=True, slots=True)
class BenchCaps:
    max_users: int
    max_cells: int
    max_requests_per_cell: int
    max_output_tokens: int
    max_wall_s: float

    def as_dict(self, wall_time_s: float) -> dict[str, float]:
        return {
            "max_users": self.max_users,
            "max_cells": self.max_cells,
            "max_requests_per_cell": self.max_requests_per_cell,
            "max_output_tokens": self.max_output_tokens,
            "wall_time_s": wall_time_s,
        }


LOCAL = BenchCaps(max_users=128, max_cells=12, max_requests_per_cell=256, max_output_tokens=1024, max_wall_s=900.0)
# The users the hand-made deployments swept; a job run of 12 cells at that size takes hours.
CLOUD_RUN_JOB = BenchCaps(
    max_users=2048, max_cells=24, max_requests_per_cell=8192, max_output_tokens=4096, max_wall_s=4 * 3600.0
)


def cloud_run_job_stack(ctx: ServerContext, stack: str | None, url: str | None, confirm: str | None) -> str:
    """The stack whose job runs the sweep, once the server allows changes and the call confirmed it."""
    return confirmed_stack_change(
        ctx,
        stack,
        url,
        confirm,
        action="on_cloud_run",
        what_it_changes="starts the stack's load-generator job, which costs money and loads the service",
        why_a_stack="the job is part of the stack",
        refusal="on_cloud_run runs stack {name}'s load-generator job against its service (billed, and it loads "
        "the service)",
    )
