"""Cloud Run's upper limits for a GPU service, checked before a deploy that Cloud Run would refuse.

Why a module of its own: the minimums (serving/cloud_run_rules.py) kept too-small instances out, but an L4
instance with 100 CPU, 100000 instances, a batch of 2048 behind Cloud Run's 1000-request ceiling or a
two-hour startup probe all passed the preview and failed at deploy time. The settings and the
VllmGpuServiceArgs component both call `instance_limit_problems` with plain values (each under its own
key names), so the two agree word for word; the source of each limit sits beside its number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from serving.shapes import ResolvedShape

# Source: https://cloud.google.com/run/docs/about-concurrency (maximum concurrency per instance 1000).
MAX_CONCURRENCY = 1000


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


def _size_problems(shape: ResolvedShape, *, cpu: int, memory_gib: int, cpu_key: str, memory_key: str) -> list[str]:
    ceiling = shape.instance_maximum  # the shapes table's instanceMaximum, with its source
    problems = []
    if cpu > ceiling.vcpu:
        problems.append(
            f"{cpu_key}: {cpu} is above what a Cloud Run instance with an {shape.display_name} may have; "
            f"allowed: {shape.host_vcpu}-{ceiling.vcpu} ({ceiling.basis})"
        )
    if memory_gib > ceiling.memory_gib:
        problems.append(
            f"{memory_key}: {memory_gib} is above what a Cloud Run instance with an {shape.display_name} "
            f"may have; allowed: {shape.host_memory_gib:g}-{ceiling.memory_gib} ({ceiling.basis})"
        )
    return problems


def _scale_problems(*, max_instances: int, instances_key: str, max_num_seqs: int, seqs_key: str) -> list[str]:
    problems = []
    if max_instances > MAX_INSTANCES_PER_SERVICE:
        problems.append(
            f"{instances_key}: {max_instances} is beyond Cloud Run's per-service maximum; allowed: "
            f"1-{MAX_INSTANCES_PER_SERVICE} (and only as many GPUs as the project's quota grants)"
        )
    if max_num_seqs > MAX_CONCURRENCY:
        problems.append(
            f"{seqs_key}: {max_num_seqs} needs a Cloud Run concurrency of {max_num_seqs} (concurrency follows "
            f"maxNumSeqs and may not be below it), above Cloud Run's maximum of {MAX_CONCURRENCY} requests per "
            f"instance; allowed on Cloud Run: 1-{MAX_CONCURRENCY}"
        )
    return problems


def _env_problems(env: Iterable[str], env_key: str) -> list[str]:
    return [
        f"{env_key}.{name}: Cloud Run sets this variable itself and refuses it in a revision; allowed: any "
        f"name but {', '.join(sorted(RESERVED_ENV))} and {RESERVED_ENV_PREFIX}*"
        for name in env
        if name in RESERVED_ENV or name.startswith(RESERVED_ENV_PREFIX)
    ]


def startup_window_problem(*, failure_threshold: int, period_seconds: int, key: str) -> str | None:
    """An explicit startup probe threshold whose window (x periodSeconds) is beyond Cloud Run's GPU cap."""
    window = failure_threshold * period_seconds
    if window <= GPU_STARTUP_PROBE_MAX_SECONDS:
        return None
    return (
        f"{key}: {failure_threshold} x periodSeconds {period_seconds} = {window} s, above Cloud Run's "
        f"{GPU_STARTUP_PROBE_MAX_SECONDS} s cap for a GPU service's startup probe; allowed: at most "
        f"{GPU_STARTUP_PROBE_MAX_SECONDS // period_seconds}"
    )


def instance_limit_problems(
    shape: ResolvedShape,
    *,
    cpu: int,
    memory_gib: int,
    max_instances: int,
    env: Iterable[str],
    max_num_seqs: int,
    keys: LimitKeys,
) -> list[str]:
    """Every Cloud Run upper limit on size, scale and environment these values break, under the caller's keys."""
    return [
        *_size_problems(shape, cpu=cpu, memory_gib=memory_gib, cpu_key=keys.cpu, memory_key=keys.memory_gib),
        *_scale_problems(
            max_instances=max_instances, instances_key=keys.max_instances, max_num_seqs=max_num_seqs, seqs_key=keys.seqs
        ),
        *_env_problems(env, keys.env),
    ]


@dataclass(frozen=True)
class LimitKeys:
    """The names a caller reports each value under (a stack file's camelCase keys, or a component's fields)."""

    cpu: str
    memory_gib: str
    max_instances: str
    env: str
    seqs: str
