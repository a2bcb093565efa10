"""Cloud Run's job-task table (serving/cloud_run_jobs.py), which the bench settings and BenchJobArgs share."""

from __future__ import annotations

from serving.cloud_run_jobs import JOB_CPUS, MAX_TASK_MEMORY_GIB, TASK_MEMORY_GIB, JobKeys, job_problems

KEYS = JobKeys(tasks="t", cpu="c", memory_gib="m", timeout_seconds="s")


def test_the_cpu_sizes_a_stack_may_ask_for_all_have_a_memory_range() -> None:
    """Guards against a vCPU count the stack file accepts but the memory table lacks (a KeyError, not a message)."""
    assert tuple(TASK_MEMORY_GIB) == JOB_CPUS
    assert MAX_TASK_MEMORY_GIB == 32


def test_the_edges_of_each_range_are_allowed_and_one_past_them_is_not() -> None:
    """Guards against an off-by-one that refuses a size Cloud Run allows (or lets one through it refuses)."""
    for cpu, memory in TASK_MEMORY_GIB.items():
        for gib in (memory.least, memory.most):
            assert job_problems(tasks=1, cpu=cpu, memory_gib=gib, timeout_seconds=60, keys=KEYS) == []
        too_big = job_problems(tasks=1, cpu=cpu, memory_gib=memory.most + 1, timeout_seconds=60, keys=KEYS)
        (problem,) = too_big
        assert f"above Cloud Run's maximum of {memory.most} GiB for {cpu} vCPU" in problem
    assert job_problems(tasks=10_001, cpu=4, memory_gib=8, timeout_seconds=168 * 3600 + 1, keys=KEYS) == [
        "t: 10001; allowed: 1-10000 tasks per job",
        "s: 604801; allowed: 1-604800 seconds (168 hours)",
    ]
