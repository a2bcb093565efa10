"""Cloud Run's upper limits for a GPU service, checked before a deploy that Cloud Run would refuse.

Why a module of its own: the minimums (serving/cloud_run_rules.py) kept too-small instances out, but an L4
instance with 100 CPU, 100000 instances, a batch of 2048 behind Cloud Run's 1000-request ceiling or a
two-hour startup probe all passed the preview and failed at deploy time. The settings and the
VllmGpuServiceArgs component both call `gpu_service_problems`, so the two agree word for word; the
source of each limit sits beside its number.
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.accelerators import Accelerator, CloudRunGpu
from stacks.cloud_run import MAX_CONCURRENCY, CloudRunSettings


@dataclass(frozen=True)
class InstanceMaximum:
    """The largest instance Cloud Run gives a service with this GPU."""

    cpu: int
    memory_gib: int
    source: str


INSTANCE_MAXIMUM: dict[Accelerator, InstanceMaximum] = {
    # Cloud Run's instance maxima, which the GPU page leaves in force for L4 (it sets only the 4 CPU /
    # 16 GiB minimum): "The maximum amount of vCPU you can configure is 8 vCPU"
    # (https://cloud.google.com/run/docs/configuring/services/cpu) and "The maximum amount of memory you
    # can configure is 32 GiB" (https://cloud.google.com/run/docs/configuring/services/memory-limits), 2026-11.
    Accelerator.NVIDIA_L4: InstanceMaximum(cpu=8, memory_gib=32, source="Cloud Run's 8 vCPU / 32 GiB instance maximum"),
    # The RTX PRO 6000 minimum (20 CPU / 80 GiB) is above the general maximum, and no Cloud Run page read
    # (2026-11) states this GPU's maximum. The bound used is the one-GPU host it runs on, Compute
    # Engine's g4-standard-48 (48 vCPU, 180 GB = 167 GiB; https://cloud.google.com/compute/docs/gpus):
    # an instance cannot be larger than its host. Tighten it when Google documents the real figure.
    Accelerator.NVIDIA_RTX_PRO_6000: InstanceMaximum(
        cpu=48, memory_gib=167, source="the one-GPU g4-standard-48 host (48 vCPU, 180 GB)"
    ),
}

# The most instances one Cloud Run service (revision) may scale to: "Maximum number of container
# instances: 1000" at the smallest instance size, lower for larger ones, raised only by a quota request
# (https://cloud.google.com/run/quotas, 2026-11).
MAX_INSTANCES_PER_SERVICE = 1000

# Environment variables Cloud Run sets itself and refuses in a revision: PORT, K_SERVICE, K_REVISION,
# K_CONFIGURATION, and any name starting X_GOOGLE_
# (https://cloud.google.com/run/docs/configuring/services/environment-variables, 2026-11).
RESERVED_ENV = frozenset({"PORT", "K_SERVICE", "K_REVISION", "K_CONFIGURATION"})
RESERVED_ENV_PREFIX = "X_GOOGLE_"

# A new project's Cloud Run GPU quota: "By default, there is no quota for GPUs with or without zonal
# redundancy; you must request it" (https://cloud.google.com/run/docs/configuring/services/gpu-zonal-redundancy,
# "Request quota", read 2026-11). Every GPU stack needs a request (the plan's notes say so); beyond this
# many instances the warning below says what a stack asking for far more than a first request gets
# means. 10 is this project's judgment of "far beyond", not a Google figure.
NEW_PROJECT_GPU_QUOTA = 0
FAR_BEYOND_NEW_QUOTA = 10

# "failureThreshold * periodSeconds ... can't exceed 600 seconds (1800 for GPU)" for a startup probe
# (https://cloud.google.com/run/docs/configuring/healthchecks and the jobs page, 2026-11);
# initialDelaySeconds (at most 240) comes on top.
GPU_STARTUP_PROBE_MAX_SECONDS = 1800


def _size_problems(gpu: CloudRunGpu, run: CloudRunSettings, prefix: str) -> list[str]:
    ceiling = INSTANCE_MAXIMUM[gpu.accelerator]
    problems = []
    if run.cpu > ceiling.cpu:
        problems.append(
            f"{prefix}cpu: {run.cpu} is above what a Cloud Run instance with an {gpu.display_name} may have; "
            f"allowed: {gpu.min_cpu}-{ceiling.cpu} ({ceiling.source})"
        )
    if run.memory_gib > ceiling.memory_gib:
        problems.append(
            f"{prefix}memoryGib: {run.memory_gib} is above what a Cloud Run instance with an {gpu.display_name} "
            f"may have; allowed: {gpu.min_memory_gib}-{ceiling.memory_gib} ({ceiling.source})"
        )
    return problems


def _scale_problems(run: CloudRunSettings, prefix: str, *, max_num_seqs: int, seqs_key: str) -> list[str]:
    problems = []
    if run.max_instances > MAX_INSTANCES_PER_SERVICE:
        problems.append(
            f"{prefix}maxInstances: {run.max_instances} is beyond Cloud Run's per-service maximum; allowed: "
            f"1-{MAX_INSTANCES_PER_SERVICE} (and only as many GPUs as the project's quota grants)"
        )
    if max_num_seqs > MAX_CONCURRENCY:
        problems.append(
            f"{seqs_key}: {max_num_seqs} needs a Cloud Run concurrency of {max_num_seqs} (concurrency follows "
            f"maxNumSeqs and may not be below it), above Cloud Run's maximum of {MAX_CONCURRENCY} requests per "
            f"instance; allowed on Cloud Run: 1-{MAX_CONCURRENCY}"
        )
    return problems


def _env_problems(run: CloudRunSettings, prefix: str) -> list[str]:
    return [
        f"{prefix}env.{name}: Cloud Run sets this variable itself and refuses it in a revision; allowed: any "
        f"name but {', '.join(sorted(RESERVED_ENV))} and {RESERVED_ENV_PREFIX}*"
        for name in run.env
        if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIX)
    ]


def startup_probe_problem(run: CloudRunSettings, prefix: str) -> str | None:
    """A startup probe window (failureThreshold x periodSeconds) beyond Cloud Run's cap for GPU services."""
    threshold = run.startup_failure_threshold()
    period = run.startup_probe.period_seconds
    if threshold * period <= GPU_STARTUP_PROBE_MAX_SECONDS:
        return None
    longest = run.startup_probe.initial_delay_seconds + GPU_STARTUP_PROBE_MAX_SECONDS
    if run.startup_probe.failure_threshold is not None:
        return (
            f"{prefix}startupProbe.failureThreshold: {threshold} x periodSeconds {period} = {threshold * period} s, "
            f"above Cloud Run's {GPU_STARTUP_PROBE_MAX_SECONDS} s cap for a GPU service's startup probe; allowed: "
            f"at most {GPU_STARTUP_PROBE_MAX_SECONDS // period}"
        )
    return (
        f"{prefix}modelLoadSeconds: {run.model_load_seconds} needs a startup probe of {threshold} x {period} s = "
        f"{threshold * period} s, above Cloud Run's {GPU_STARTUP_PROBE_MAX_SECONDS} s cap (failureThreshold x "
        f"periodSeconds) for a GPU service; allowed: at most {longest} with this probe (initialDelaySeconds "
        f"{run.startup_probe.initial_delay_seconds} + {GPU_STARTUP_PROBE_MAX_SECONDS}); a model that loads slower "
        "needs faster storage, not a longer probe"
    )


def gpu_service_problems(
    gpu: CloudRunGpu, run: CloudRunSettings, *, max_num_seqs: int, prefix: str, seqs_key: str
) -> list[str]:
    """Every Cloud Run upper limit these settings break, each naming its key and what is allowed."""
    probe = startup_probe_problem(run, prefix)
    return [
        *_size_problems(gpu, run, prefix),
        *_scale_problems(run, prefix, max_num_seqs=max_num_seqs, seqs_key=seqs_key),
        *_env_problems(run, prefix),
        *([probe] if probe else []),
    ]


def quota_warning(gpu: CloudRunGpu, run: CloudRunSettings) -> str | None:
    """A plan warning when maxInstances is far beyond a new project's GPU quota (allowed, but it will stall)."""
    if run.max_instances <= FAR_BEYOND_NEW_QUOTA:
        return None
    redundancy = "without" if run.gpu_zonal_redundancy_disabled else "with"
    return (
        f"cloudRun.maxInstances {run.max_instances} needs {run.max_instances} {gpu.display_name} GPUs of quota "
        f"{redundancy} zonal redundancy in this region, and a new project has {NEW_PROJECT_GPU_QUOTA}: instances "
        "past the granted quota never start, so under load requests queue and fail with 429 instead of scaling "
        f"out. Request 'Total {gpu.display_name} GPU allocation {redundancy} zonal redundancy, per project per "
        "region' (IAM & Admin > Quotas) for the number you mean to reach, or lower maxInstances to it"
    )
