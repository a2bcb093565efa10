"""Cloud Run's limits on a job's tasks (count, vCPU, memory, timeout), checked before a deploy Cloud Run would refuse.

Why a module of its own: the stack file's `bench` block (stacks/bench.py) and `BenchJobArgs` (the component,
built by any caller) both size a job; with Cloud Run's table here once, both accept and refuse the same
shapes, each message under the caller's own key names (as serving/cloud_run_limits.py does for the GPU
service). Memory is in whole GiB, the unit every stack file and component here uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

# Source: https://cloud.google.com/run/docs/configuring/jobs/parallelism (at most 10,000 tasks per job).
MAX_TASKS = 10_000

# Whole vCPUs a task may have: 1, 2, 4, 6 or 8 (https://cloud.google.com/run/docs/configuring/jobs/cpu,
# "vCPU and memory table", read 2026-11). Fractions below 1 are left out: the load generator runs one
# worker process per whole vCPU.
JobCpu = Literal[1, 2, 4, 6, 8]
JOB_CPUS: tuple[int, ...] = get_args(JobCpu)


@dataclass(frozen=True)
class TaskMemory:
    """The memory Cloud Run allows a task with this many vCPU, in whole GiB."""

    least: int
    most: int


# Same source and table: 1 vCPU 128 MiB-4 GiB, 2 vCPU 128 MiB-8 GiB, 4 vCPU 2-16 GiB, 6 vCPU 4-24 GiB,
# 8 vCPU 4-32 GiB. In whole GiB the smallest for 1 and 2 vCPU is 1 (512 MiB would be too little for the
# thousands of open streams a load-generator worker holds anyway).
TASK_MEMORY_GIB: dict[int, TaskMemory] = {
    1: TaskMemory(least=1, most=4),
    2: TaskMemory(least=1, most=8),
    4: TaskMemory(least=2, most=16),
    6: TaskMemory(least=4, most=24),
    8: TaskMemory(least=4, most=32),
}
# "The maximum amount of memory you can configure is 32 GiB" (https://cloud.google.com/run/docs/configuring/jobs/memory-limits).
MAX_TASK_MEMORY_GIB = max(memory.most for memory in TASK_MEMORY_GIB.values())

# Source: https://cloud.google.com/run/docs/configuring/task-timeout ("up to 168 hours (7 days)", read 2026-11).
MAX_TASK_TIMEOUT_SECONDS = 168 * 3600


@dataclass(frozen=True)
class JobKeys:
    """The names a caller reports each value under (a stack file's camelCase keys, or a component's fields)."""

    tasks: str
    cpu: str
    memory_gib: str
    timeout_seconds: str


def task_size_problems(*, cpu: int, memory_gib: int, cpu_key: str, memory_key: str) -> list[str]:
    """A vCPU count Cloud Run's jobs do not offer, or memory outside what it allows with that vCPU count."""
    memory = TASK_MEMORY_GIB.get(cpu)
    if memory is None:
        sizes = ", ".join(str(count) for count in JOB_CPUS)
        return [f"{cpu_key}: {cpu} vCPU is not a size Cloud Run gives a job's task; allowed: {sizes}"]
    allowed = f"allowed: {memory.least}-{memory.most}"
    if memory_gib < memory.least:
        below = f"{memory_key}: {memory_gib} is below Cloud Run's minimum of {memory.least} GiB for {cpu} vCPU"
        return [f"{below}; {allowed}"]
    if memory_gib > memory.most:
        above = f"{memory_key}: {memory_gib} is above Cloud Run's maximum of {memory.most} GiB for {cpu} vCPU"
        return [f"{above}; {allowed} (or more vCPU per task)"]
    return []


def job_problems(*, tasks: int, cpu: int, memory_gib: int, timeout_seconds: int, keys: JobKeys) -> list[str]:
    """Every Cloud Run limit on a job's tasks these values break, under the caller's keys."""
    problems = []
    if not 1 <= tasks <= MAX_TASKS:
        problems.append(f"{keys.tasks}: {tasks}; allowed: 1-{MAX_TASKS} tasks per job")
    problems += task_size_problems(cpu=cpu, memory_gib=memory_gib, cpu_key=keys.cpu, memory_key=keys.memory_gib)
    if not 1 <= timeout_seconds <= MAX_TASK_TIMEOUT_SECONDS:
        problems.append(
            f"{keys.timeout_seconds}: {timeout_seconds}; allowed: 1-{MAX_TASK_TIMEOUT_SECONDS} seconds (168 hours)"
        )
    return problems
