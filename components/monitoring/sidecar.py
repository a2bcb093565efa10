"""The Managed Service for Prometheus sidecar of a Cloud Run GPU service, as the revision template's pieces.

Why here and not inside the service component: the sidecar is one optional container, one secret volume
and a share of the instance; keeping its shape in one module leaves VllmGpuService a one-line change per
place it appears. Shape per GoogleCloudPlatform/run-gmp-sidecar (run-service.yaml): the collector depends
on the serving container (it starts once vLLM's startup probe passed), reads its RunMonitoring config
from a Secret Manager volume at /etc/rungmp/config.yaml, has a liveness probe on :13133/liveness, and
takes no GPU (Cloud Run attaches the one GPU to one container: vLLM's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.wire import cloud_run
from serving.cloud_run_containers import ContainerSize, split_instance, split_problem
from serving.collectors import (
    RUN_GMP_CONFIG_DIR,
    RUN_GMP_CONFIG_FILE,
    RUN_GMP_LIVENESS_PATH,
    RUN_GMP_LIVENESS_PERIOD_SECONDS,
    RUN_GMP_LIVENESS_PORT,
    RUN_GMP_LIVENESS_TIMEOUT_SECONDS,
    RUN_GMP_SIDECAR_IMAGE,
)
from serving.naming import CLOUD_RUN_COLLECTOR_CONTAINER
from serving.shapes import ResolvedShape

if TYPE_CHECKING:
    from pulumi_gcp.cloudrunv2._inputs import ServiceTemplateContainerArgsDict, ServiceTemplateVolumeArgsDict

CONFIG_VOLUME = "rungmp-config"


@dataclass(frozen=True)
class MetricsSidecar:
    """The sidecar of one service: its image and the Secret Manager secret (id) holding its config."""

    config_secret: str
    image: str = RUN_GMP_SIDECAR_IMAGE


def vllm_limits(gpu: ResolvedShape, cpu: int, memory_gib: int, sidecar: MetricsSidecar | None) -> dict[str, str]:
    """vLLM's container limits: its share of the instance (serving/cloud_run_containers.py), and the GPU."""
    return {**_vllm_size(gpu, cpu, memory_gib, sidecar).limits(), "nvidia.com/gpu": "1"}


def sidecar_size(gpu: ResolvedShape, cpu: int, memory_gib: int) -> ContainerSize:
    split = split_instance(gpu, cpu=cpu, memory_gib=memory_gib, with_sidecar=True)
    if split is None or split.sidecar is None:  # pragma: no cover - the Args refuse such a size first
        raise ValueError(f"no allowed split of {cpu} CPU / {memory_gib} GiB with a sidecar")
    return split.sidecar


def _vllm_size(gpu: ResolvedShape, cpu: int, memory_gib: int, sidecar: MetricsSidecar | None) -> ContainerSize:
    split = split_instance(gpu, cpu=cpu, memory_gib=memory_gib, with_sidecar=sidecar is not None)
    if split is None:  # pragma: no cover - the Args refuse such a size first
        raise ValueError(f"no allowed split of {cpu} CPU / {memory_gib} GiB")
    return split.vllm


def sizing_problem(
    gpu: ResolvedShape, cpu: int, memory_gib: int, sidecar: MetricsSidecar | None, *, cpu_key: str, memory_key: str
) -> str | None:
    return split_problem(
        gpu, cpu=cpu, memory_gib=memory_gib, with_sidecar=sidecar is not None, cpu_key=cpu_key, memory_key=memory_key
    )


def sidecar_containers(
    sidecar: MetricsSidecar | None, *, serving_container: str, gpu: ResolvedShape, cpu: int, memory_gib: int
) -> list[ServiceTemplateContainerArgsDict]:
    if sidecar is None:
        return []
    return [
        cloud_run.container(
            name=CLOUD_RUN_COLLECTOR_CONTAINER,
            image=sidecar.image,
            depends_ons=[serving_container],
            resources=cloud_run.resources(limits=sidecar_size(gpu, cpu, memory_gib).limits(), cpu_idle=False),
            liveness_probe=cloud_run.liveness_probe(
                http_get=cloud_run.liveness_http_get(path=RUN_GMP_LIVENESS_PATH, port=RUN_GMP_LIVENESS_PORT),
                period_seconds=RUN_GMP_LIVENESS_PERIOD_SECONDS,
                timeout_seconds=RUN_GMP_LIVENESS_TIMEOUT_SECONDS,
            ),
            volume_mounts=[cloud_run.volume_mount(name=CONFIG_VOLUME, mount_path=RUN_GMP_CONFIG_DIR)],
        )
    ]


def sidecar_volumes(sidecar: MetricsSidecar | None) -> list[ServiceTemplateVolumeArgsDict]:
    if sidecar is None:
        return []
    return [
        cloud_run.volume(
            name=CONFIG_VOLUME,
            secret=cloud_run.volume_secret(
                secret=sidecar.config_secret,
                items=[cloud_run.volume_secret_item(path=RUN_GMP_CONFIG_FILE, version="latest")],
            ),
        )
    ]
