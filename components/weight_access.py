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

import pulumi
import pulumi_gcp as gcp

MODEL_VOLUME = "models"
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
) -> list[gcp.cloudrunv2.ServiceTemplateVolumeArgs] | None:
    """The bucket as a read-only gcsfuse volume, or none when vLLM streams from gs://."""
    if streamed is not None:
        return None
    return [
        gcp.cloudrunv2.ServiceTemplateVolumeArgs(
            name=MODEL_VOLUME,
            gcs=gcp.cloudrunv2.ServiceTemplateVolumeGcsArgs(bucket=bucket_name, read_only=True, mount_options=options),
        )
    ]


def model_volume_mounts(
    mount_path: str, streamed: StreamedWeights | None
) -> list[gcp.cloudrunv2.ServiceTemplateContainerVolumeMountArgs] | None:
    if streamed is not None:
        return None
    return [gcp.cloudrunv2.ServiceTemplateContainerVolumeMountArgs(name=MODEL_VOLUME, mount_path=mount_path)]


def vpc_access(streamed: StreamedWeights | None) -> gcp.cloudrunv2.ServiceTemplateVpcAccessArgs | None:
    """Direct VPC egress (a network interface on the subnet, all traffic) when vLLM streams; else none."""
    if streamed is None:
        return None
    return gcp.cloudrunv2.ServiceTemplateVpcAccessArgs(
        egress=ALL_TRAFFIC,
        network_interfaces=[
            gcp.cloudrunv2.ServiceTemplateVpcAccessNetworkInterfaceArgs(
                network=streamed.network, subnetwork=streamed.subnet
            )
        ],
    )
