"""How the vLLM container reaches its weights: a Cloud Storage FUSE volume, or gs:// over Direct VPC egress.

Why a module of its own: the revision template's volumes, volume mounts and VPC access all follow from that
one choice (`model.load` in the stack file). With a mount, the bucket is a read-only gcsfuse volume; when
vLLM streams (`--load-format runai_streamer`), there is no volume, and the instance's egress goes through a
subnet with Private Google Access so the streamer reaches storage.googleapis.com quickly and privately
(Google's Gemma 4 on Cloud Run pattern: docs.cloud.google.com/run/docs/run-gemma-on-cloud-run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pulumi

from components.wire import cloud_run

if TYPE_CHECKING:
    from pulumi_gcp.cloudrunv2._inputs import (
        ServiceTemplateContainerVolumeMountArgsDict,
        ServiceTemplateVolumeArgsDict,
        ServiceTemplateVpcAccessArgsDict,
    )

MODEL_VOLUME = "models"
# The read-write volume of the compile cache (compileCache.keep): the bucket again, narrowed to the cache's
# folder by gcsfuse's only-dir, which the serving identity may write (serving/compile_cache.py).
CACHE_VOLUME = "compile-cache"
# Cloud Run's Direct VPC egress value that sends every outbound request through the VPC network
# (https://cloud.google.com/run/docs/configuring/vpc-direct-vpc, `--vpc-egress=all-traffic`; the Admin API's
# VpcAccess.egress enum). Google's Gemma 4 pattern uses it, so the streamer's reads stay on Google's network.
ALL_TRAFFIC = "ALL_TRAFFIC"
_NAME = re.compile(r"^(projects/\S+/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class StreamedWeights:
    """vLLM reads gs:// itself: no volume; Direct VPC egress on this network and subnet."""

    network: str
    subnet: str

    def problems(self, key: str) -> list[str]:
        return [
            f"{key}.{name}: {value!r} is not a VPC {name} name or path"
            for name, value in (("network", self.network), ("subnet", self.subnet))
            if not _NAME.match(value)
        ]


def model_volumes(
    bucket_name: pulumi.Input[str], options: list[str], streamed: StreamedWeights | None
) -> list[ServiceTemplateVolumeArgsDict] | None:
    """The bucket as a read-only gcsfuse volume, or none when vLLM streams from gs://."""
    if streamed is not None:
        return None
    return [
        cloud_run.volume(
            name=MODEL_VOLUME,
            gcs=cloud_run.volume_gcs(bucket=bucket_name, read_only=True, mount_options=options),
        )
    ]


def model_volume_mounts(
    mount_path: str, streamed: StreamedWeights | None
) -> list[ServiceTemplateContainerVolumeMountArgsDict] | None:
    if streamed is not None:
        return None
    return [cloud_run.volume_mount(name=MODEL_VOLUME, mount_path=mount_path)]


def vpc_access(streamed: StreamedWeights | None) -> ServiceTemplateVpcAccessArgsDict | None:
    """Direct VPC egress (a network interface on the subnet, all traffic) when vLLM streams; else none."""
    if streamed is None:
        return None
    return cloud_run.vpc_access(
        egress=ALL_TRAFFIC,
        network_interfaces=[cloud_run.network_interface(network=streamed.network, subnetwork=streamed.subnet)],
    )


@dataclass(frozen=True)
class CacheMount:
    """vLLM's compile cache kept in the bucket: `prefix` mounted read-write at `mount_path` (VLLM_CACHE_ROOT)."""

    prefix: str
    mount_path: str
    # uid/gid as the model mount's, so the server's user owns what it writes.
    owner_options: tuple[str, ...]

    def options(self) -> list[str]:
        # implicit-dirs: directories another instance created appear without their own placeholder objects.
        return [*self.owner_options, f"only-dir={self.prefix.rstrip('/')}", "implicit-dirs"]


def cache_volumes(bucket_name: pulumi.Input[str], cache: CacheMount | None) -> list[ServiceTemplateVolumeArgsDict]:
    """The cache folder as a read-write gcsfuse volume; none when the cache is not kept."""
    if cache is None:
        return []
    return [
        cloud_run.volume(
            name=CACHE_VOLUME,
            gcs=cloud_run.volume_gcs(bucket=bucket_name, read_only=False, mount_options=cache.options()),
        )
    ]


def cache_volume_mounts(cache: CacheMount | None) -> list[ServiceTemplateContainerVolumeMountArgsDict]:
    if cache is None:
        return []
    return [cloud_run.volume_mount(name=CACHE_VOLUME, mount_path=cache.mount_path)]
