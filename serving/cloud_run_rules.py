"""Rules a Cloud Run GPU service must obey, shared by the settings and the component that deploys them.

Why one place: the settings check a stack file, the component checks its Args (it can be used without
a stack file); both must enforce the same limits with the same wording.
"""

from __future__ import annotations

from serving.shapes import ResolvedShape


def gpu_sizing_problems(shape: ResolvedShape, *, cpu: int, memory_gib: int, cpu_key: str, memory_key: str) -> list[str]:
    """CPU and memory below the GPU's per-instance minimum (the Cloud Run shape's host figures)."""
    problems = []
    if cpu < shape.host_vcpu:
        problems.append(
            f"{cpu_key}: {cpu} is below the {shape.display_name} minimum of {shape.host_vcpu} CPU per instance"
        )
    if memory_gib < shape.host_memory_gib:
        problems.append(
            f"{memory_key}: {memory_gib} is below the {shape.display_name} minimum of {shape.host_memory_gib:g} GiB "
            "per instance"
        )
    return problems


def request_concurrency(concurrency: int | None, *, max_num_seqs: int) -> int:
    """Requests one instance admits at once: the stated concurrency, or else vLLM's batch (`maxNumSeqs`).

    The default follows the batch so that Cloud Run never caps what vLLM could serve at once, and never
    sends an instance more than it batches (the rest would queue inside vLLM, invisible to autoscaling).
    """
    return concurrency if concurrency is not None else max_num_seqs


def concurrency_problem(*, concurrency: int, max_num_seqs: int, key: str) -> str | None:
    """Cloud Run concurrency below vLLM's batch makes Cloud Run, not the model, the throughput ceiling."""
    if concurrency >= max_num_seqs:
        return None
    return (
        f"{key}: {concurrency} is below vllm.maxNumSeqs ({max_num_seqs}); Cloud Run would queue or reject (429) "
        f"requests vLLM could batch. Allowed: at least {max_num_seqs} (or leave it unset to follow maxNumSeqs)"
    )


def region_problem(shape: ResolvedShape, region: str, *, key: str) -> str | None:
    if region in shape.zones:  # a Cloud Run shape's places are regions
        return None
    return f"{key}: {region!r} has no Cloud Run {shape.display_name}; allowed: {', '.join(shape.zones)}"
