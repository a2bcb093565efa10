"""The stack file's side of Cloud Run's upper limits: serving/cloud_run_limits.py's checks under cloudRun.* keys.

Why apart from the facts: the startup probe's window here is derived from cloudRun.modelLoadSeconds, so
its message names that key; the component gets a resolved threshold and checks only the cap.
"""

from __future__ import annotations

from serving.cloud_run_limits import (
    FAR_BEYOND_NEW_QUOTA,
    GPU_STARTUP_PROBE_MAX_SECONDS,
    NEW_PROJECT_GPU_QUOTA,
    LimitKeys,
    instance_limit_problems,
    startup_window_problem,
)
from serving.shapes import ResolvedShape
from stacks.cloud_run import CloudRunSettings


def startup_probe_problem(run: CloudRunSettings, prefix: str) -> str | None:
    """A startup probe window (failureThreshold x periodSeconds) beyond Cloud Run's cap for GPU services."""
    threshold = run.startup_failure_threshold()
    period = run.startup_probe.period_seconds
    if run.startup_probe.failure_threshold is not None:
        return startup_window_problem(
            failure_threshold=threshold, period_seconds=period, key=f"{prefix}startupProbe.failureThreshold"
        )
    if threshold * period <= GPU_STARTUP_PROBE_MAX_SECONDS:
        return None
    longest = run.startup_probe.initial_delay_seconds + GPU_STARTUP_PROBE_MAX_SECONDS
    return (
        f"{prefix}modelLoadSeconds: {run.load_seconds()} needs a startup probe of {threshold} x {period} s = "
        f"{threshold * period} s, above Cloud Run's {GPU_STARTUP_PROBE_MAX_SECONDS} s cap (failureThreshold x "
        f"periodSeconds) for a GPU service; allowed: at most {longest} with this probe (initialDelaySeconds "
        f"{run.startup_probe.initial_delay_seconds} + {GPU_STARTUP_PROBE_MAX_SECONDS}); a model that loads slower "
        "needs faster storage, not a longer probe"
    )


def gpu_service_problems(
    shape: ResolvedShape, run: CloudRunSettings, *, max_num_seqs: int, prefix: str, seqs_key: str
) -> list[str]:
    """Every Cloud Run upper limit these settings break, each naming its key and what is allowed."""
    keys = LimitKeys(
        cpu=f"{prefix}cpu",
        memory_gib=f"{prefix}memoryGib",
        max_instances=f"{prefix}maxInstances",
        env=f"{prefix}env",
        seqs=seqs_key,
    )
    probe = startup_probe_problem(run, prefix)
    return [
        *instance_limit_problems(
            shape,
            cpu=run.cpu,
            memory_gib=run.memory_gib,
            max_instances=run.max_instances,
            env=run.env,
            max_num_seqs=max_num_seqs,
            keys=keys,
        ),
        *([probe] if probe else []),
    ]


def quota_warning(shape: ResolvedShape, run: CloudRunSettings) -> str | None:
    """A plan warning when maxInstances is far beyond a new project's GPU quota (allowed, but it will stall)."""
    if run.max_instances <= FAR_BEYOND_NEW_QUOTA:
        return None
    redundancy = "without" if run.gpu_zonal_redundancy_disabled else "with"
    return (
        f"cloudRun.maxInstances {run.max_instances} needs {run.max_instances} {shape.display_name} GPUs of quota "
        f"{redundancy} zonal redundancy in this region, and a new project has {NEW_PROJECT_GPU_QUOTA}: instances "
        "past the granted quota never start, so under load requests queue and fail with 429 instead of scaling "
        f"out. Request 'Total {shape.display_name} GPU allocation {redundancy} zonal redundancy, per project per "
        "region' (IAM & Admin > Quotas) for the number you mean to reach, or lower maxInstances to it"
    )
