"""A Cloud Run revision template as the tests read it: vLLM's container, and the instance all containers make.

Why: with the metrics sidecar a GPU service has two containers; the GPU, the probes and the model mount
are vLLM's, while the instance Cloud Run sizes and bills (the stack's cpu/memoryGib) is their sum.
"""

from __future__ import annotations

from typing import Any

from serving.naming import GPU_SERVING_CONTAINER

_MIB = {"Mi": 1, "Gi": 1024}


def vllm_container(template: dict[str, Any]) -> dict[str, Any]:
    (container,) = [c for c in template["containers"] if c.get("name") == GPU_SERVING_CONTAINER]
    return dict(container)


def instance_size(template: dict[str, Any]) -> tuple[float, float]:
    """The instance's CPU and memory (GiB): the sum of its containers' limits."""
    cpu = memory_mib = 0.0
    for container in template["containers"]:
        limits = container["resources"]["limits"]
        cpu += float(limits["cpu"])
        memory_mib += int(limits["memory"][:-2]) * _MIB[limits["memory"][-2:]]
    return cpu, memory_mib / 1024
