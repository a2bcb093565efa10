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

import pulumi_gcp as gcp

from serving.collectors import (
    RUN_GMP_CONFIG_DIR,
    RUN_GMP_CONFIG_FILE,
    RUN_GMP_LIVENESS_PATH,
    RUN_GMP_LIVENESS_PORT,
    RUN_GMP_SIDECAR_IMAGE,
    SIDECAR_SHARE,
    SidecarShare,
)

SIDECAR_NAME = "collector"
CONFIG_VOLUME = "rungmp-config"


@dataclass(frozen=True)
class MetricsSidecar:
    """The sidecar of one service: its image and the Secret Manager secret (id) holding its config."""

    config_secret: str
    image: str = RUN_GMP_SIDECAR_IMAGE
    share: SidecarShare = SIDECAR_SHARE


def vllm_limits(cpu: int, memory_gib: int, sidecar: MetricsSidecar | None) -> dict[str, str]:
    """vLLM's container limits: the whole instance, less the sidecar's share when there is one."""
    if sidecar is None:
        return {"cpu": str(cpu), "memory": f"{memory_gib}Gi", "nvidia.com/gpu": "1"}
    share = sidecar.share
    return {
        "cpu": str(cpu - share.cpu),
        "memory": f"{memory_gib * 1024 - share.memory_mib}Mi",
        "nvidia.com/gpu": "1",
    }


def sidecar_problems(cpu: int, memory_gib: int, sidecar: MetricsSidecar | None, key: str) -> list[str]:
    if sidecar is None:
        return []
    share = sidecar.share
    if cpu - share.cpu >= 1 and memory_gib * 1024 - share.memory_mib >= 1024:
        return []
    return [f"{key}: the metrics sidecar takes {share.cpu} CPU and {share.memory_mib} MiB; too little is left for vLLM"]


def sidecar_containers(
    sidecar: MetricsSidecar | None, *, serving_container: str
) -> list[gcp.cloudrunv2.ServiceTemplateContainerArgs]:
    if sidecar is None:
        return []
    share = sidecar.share
    return [
        gcp.cloudrunv2.ServiceTemplateContainerArgs(
            name=SIDECAR_NAME,
            image=sidecar.image,
            depends_ons=[serving_container],
            resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(
                limits={"cpu": str(share.cpu), "memory": f"{share.memory_mib}Mi"}, cpu_idle=False
            ),
            liveness_probe=gcp.cloudrunv2.ServiceTemplateContainerLivenessProbeArgs(
                http_get=gcp.cloudrunv2.ServiceTemplateContainerLivenessProbeHttpGetArgs(
                    path=RUN_GMP_LIVENESS_PATH, port=RUN_GMP_LIVENESS_PORT
                ),
                period_seconds=30,
                timeout_seconds=30,
            ),
            volume_mounts=[
                gcp.cloudrunv2.ServiceTemplateContainerVolumeMountArgs(
                    name=CONFIG_VOLUME, mount_path=RUN_GMP_CONFIG_DIR
                )
            ],
        )
    ]


def sidecar_volumes(sidecar: MetricsSidecar | None) -> list[gcp.cloudrunv2.ServiceTemplateVolumeArgs]:
    if sidecar is None:
        return []
    return [
        gcp.cloudrunv2.ServiceTemplateVolumeArgs(
            name=CONFIG_VOLUME,
            secret=gcp.cloudrunv2.ServiceTemplateVolumeSecretArgs(
                secret=sidecar.config_secret,
                items=[gcp.cloudrunv2.ServiceTemplateVolumeSecretItemArgs(path=RUN_GMP_CONFIG_FILE, version="latest")],
            ),
        )
    ]
