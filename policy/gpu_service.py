"""What every Cloud Run v2 service that requests a GPU must get right, or its rollout fails or crawls.

Each rule below is a mistake a hand-made deployment made and paid a failed rollout (or a throughput
collapse) for; see docs and the stack settings for the longer story:
- `cpuIdle` left true: Cloud Run refuses a GPU without instance-based billing.
- a GPU limit without a matching `nodeSelector.accelerator` (or the reverse, or a count other than 1).
- concurrency below vLLM's `--max-num-seqs`: Cloud Run queues or 429s requests vLLM could batch
  (the L4 deployment with concurrency 4 flattened at about 3 req/s).
- a GCS FUSE mount without `uid=`/`gid=`: files owned by root, "Permission denied" for a non-root server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from policy.guardrail import Guardrail
from policy.props import field, mappings, number, strings
from policy.vllm_args import flag_values, looks_like_vllm, tokens

CLOUD_RUN_SERVICE = "gcp:cloudrunv2/service:Service"
GPU_RESOURCE = "nvidia.com/gpu"
# Cloud Run's `template.node_selector.accelerator` values for GPUs it offers (source:
# https://cloud.google.com/run/docs/configuring/services/gpu, checked 2026-11; the same values as
# serving/data/shapes.json, which a test keeps in step).
CLOUD_RUN_GPU_ACCELERATORS = frozenset({"nvidia-l4", "nvidia-rtx-pro-6000"})
# Cloud Run attaches exactly one GPU to an instance (same source).
GPUS_PER_INSTANCE = 1

_MOUNT_ID_OPTION = {key: re.compile(rf"^{key}=\d+$") for key in ("uid", "gid")}


def _containers(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(mappings(field(props, "template", "containers")))


def _gpu_limit(container: Mapping[str, Any]) -> Any:  # noqa: ANN401 - "1" as written, or a float
    return field(container, "resources", "limits", GPU_RESOURCE)


def _accelerator(props: Mapping[str, Any]) -> Any:  # noqa: ANN401 - untyped by nature: a policy/API property value of any shape
    return field(props, "template", "nodeSelector", "accelerator")


def requests_gpu(props: Mapping[str, Any]) -> bool:
    """A service asks for a GPU through a container limit or through the template's node selector."""
    return _accelerator(props) is not None or any(_gpu_limit(c) is not None for c in _containers(props))


def _gpu_containers(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The containers that hold the GPU; when none declares it, all of them are suspects."""
    containers = _containers(props)
    holders = [c for c in containers if _gpu_limit(c) is not None]
    return holders or containers


def _label(container: Mapping[str, Any], index: int) -> str:
    name = field(container, "name")
    return f"container {name!r}" if isinstance(name, str) and name else f"containers[{index}]"


def _argv(container: Mapping[str, Any]) -> list[str]:
    return tokens([*strings(field(container, "commands")), *strings(field(container, "args"))])


def check_cpu_always_allocated(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not requests_gpu(props):
        return
    for index, container in enumerate(_gpu_containers(props)):
        cpu_idle = field(container, "resources", "cpuIdle")
        if cpu_idle is not False:
            yield (
                f"{_label(container, index)}: resources.cpuIdle is {cpu_idle!r}; a GPU service needs "
                "instance-based billing, so set cpuIdle to false explicitly (gcloud --no-cpu-throttling)"
            )


def check_gpu_matches_accelerator(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not requests_gpu(props):
        return
    accelerator = _accelerator(props)
    holders = [(i, c) for i, c in enumerate(_containers(props)) if _gpu_limit(c) is not None]
    allowed = ", ".join(sorted(CLOUD_RUN_GPU_ACCELERATORS))
    if accelerator is None:
        yield (
            f"a container requests {GPU_RESOURCE} but template.nodeSelector.accelerator is not set; "
            f"set it to the GPU type ({allowed})"
        )
    elif accelerator not in CLOUD_RUN_GPU_ACCELERATORS:
        yield f"template.nodeSelector.accelerator {accelerator!r} is not a Cloud Run GPU; allowed: {allowed}"
    if not holders:
        yield (
            f"template.nodeSelector.accelerator is {accelerator!r} but no container sets resources.limits"
            f"[{GPU_RESOURCE!r}]; give the serving container limit {GPU_RESOURCE}: '{GPUS_PER_INSTANCE}'"
        )
    if len(holders) > 1:
        names = ", ".join(_label(c, i) for i, c in holders)
        yield f"{GPU_RESOURCE} is requested by several containers ({names}); the GPU belongs to one container"
    for index, container in holders:
        count = number(_gpu_limit(container))
        if count != GPUS_PER_INSTANCE:
            yield (
                f"{_label(container, index)}: resources.limits[{GPU_RESOURCE!r}] is {_gpu_limit(container)!r}; "
                f"Cloud Run attaches exactly {GPUS_PER_INSTANCE} GPU per instance, write '{GPUS_PER_INSTANCE}'"
            )


def check_concurrency_covers_batch(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not requests_gpu(props):
        return
    concurrency = number(field(props, "template", "maxInstanceRequestConcurrency"))
    for index, container in enumerate(_gpu_containers(props)):
        argv = _argv(container)
        image = field(container, "image")
        if not looks_like_vllm(image if isinstance(image, str) else None, argv):
            continue
        label = _label(container, index)
        values = flag_values(argv, "--max-num-seqs")
        if not values:
            yield (
                f"{label}: vLLM runs without --max-num-seqs, so its batch size depends on the GPU and the "
                "vLLM version; state --max-num-seqs so that Cloud Run concurrency can be checked against it"
            )
            continue
        try:
            max_num_seqs = int(values[-1])
        except ValueError:
            yield f"{label}: --max-num-seqs {values[-1]!r} is not a whole number"
            continue
        if concurrency is None:
            yield (
                f"{label}: template.maxInstanceRequestConcurrency is not set (Cloud Run's default depends on "
                f"how the service was created); set it to at least --max-num-seqs ({max_num_seqs})"
            )
        elif concurrency < max_num_seqs:
            yield (
                f"{label}: template.maxInstanceRequestConcurrency {concurrency:g} is below vLLM's --max-num-seqs "
                f"{max_num_seqs}; Cloud Run would queue or reject (429) requests vLLM could batch; raise it to "
                f"at least {max_num_seqs}"
            )


def _streams_weights_from_gcs(props: Mapping[str, Any]) -> bool:
    """vLLM reads weights straight from gs:// (`--load-format runai_streamer`), so no mount is needed."""
    for container in _gpu_containers(props):
        argv = _argv(container)
        if "runai_streamer" in flag_values(argv, "--load-format") and any(t.startswith("gs://") for t in argv):
            return True
    return False


def check_model_mount_owner(_type: str, props: Mapping[str, Any], _config: Mapping[str, Any]) -> Iterator[str]:
    if not requests_gpu(props):
        return
    gcs_volumes = [
        (index, volume)
        for index, volume in enumerate(mappings(field(props, "template", "volumes")))
        if field(volume, "gcs") is not None
    ]
    if not gcs_volumes and not _streams_weights_from_gcs(props):
        yield (
            "the GPU service mounts no GCS volume for its model and does not stream it from gs:// "
            "(--load-format runai_streamer); mount the model bucket read-only with uid=/gid= mount options"
        )
    for index, volume in gcs_volumes:
        name = field(volume, "name")
        label = f"volume {name!r}" if isinstance(name, str) else f"volumes[{index}]"
        options = strings(field(volume, "gcs", "mountOptions"))
        for key, pattern in _MOUNT_ID_OPTION.items():
            if not any(pattern.match(option.strip()) for option in options):
                yield (
                    f"{label}: gcs.mountOptions {options!r} has no {key}=<number>; without it the files are "
                    f"owned by root and a non-root server gets 'Permission denied' (e.g. {key}=1001, one list "
                    "item per option)"
                )


_GPU_SERVICE = frozenset({CLOUD_RUN_SERVICE})

GPU_CPU_ALWAYS_ALLOCATED = Guardrail(
    name="gpu-service-cpu-always-allocated",
    description="A Cloud Run GPU service sets resources.cpuIdle to false (instance-based billing).",
    resource_types=_GPU_SERVICE,
    check=check_cpu_always_allocated,
)

GPU_MATCHES_ACCELERATOR = Guardrail(
    name="gpu-service-limit-matches-accelerator",
    description="A Cloud Run GPU service requests nvidia.com/gpu '1' in one container and names a Cloud Run "
    "GPU in template.nodeSelector.accelerator.",
    resource_types=_GPU_SERVICE,
    check=check_gpu_matches_accelerator,
)

GPU_CONCURRENCY_COVERS_BATCH = Guardrail(
    name="gpu-service-concurrency-covers-batch",
    description="A Cloud Run vLLM GPU service admits at least --max-num-seqs concurrent requests per instance.",
    resource_types=_GPU_SERVICE,
    check=check_concurrency_covers_batch,
)

GPU_MODEL_MOUNT_OWNER = Guardrail(
    name="gpu-service-model-mount-uid-gid",
    description="A Cloud Run GPU service mounts its model bucket with uid= and gid= mount options.",
    resource_types=_GPU_SERVICE,
    check=check_model_mount_owner,
)
