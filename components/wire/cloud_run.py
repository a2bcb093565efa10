"""Typed wire builders for Cloud Run service blocks: pulumi-gcp's `cloudrunv2` `Service*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`. A Cloud Run job's blocks are other types
(`JobTemplate*ArgsDict`: a task has `max_retries`, a revision `scaling`): components/wire/cloud_run_job.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.cloudrunv2._inputs import (
        ServiceTemplateArgsDict,
        ServiceTemplateContainerArgsDict,
        ServiceTemplateContainerEnvArgsDict,
        ServiceTemplateContainerLivenessProbeArgsDict,
        ServiceTemplateContainerLivenessProbeHttpGetArgsDict,
        ServiceTemplateContainerPortsArgsDict,
        ServiceTemplateContainerResourcesArgsDict,
        ServiceTemplateContainerStartupProbeArgsDict,
        ServiceTemplateContainerStartupProbeHttpGetArgsDict,
        ServiceTemplateContainerVolumeMountArgsDict,
        ServiceTemplateNodeSelectorArgsDict,
        ServiceTemplateScalingArgsDict,
        ServiceTemplateVolumeArgsDict,
        ServiceTemplateVolumeGcsArgsDict,
        ServiceTemplateVolumeSecretArgsDict,
        ServiceTemplateVolumeSecretItemArgsDict,
        ServiceTemplateVpcAccessArgsDict,
        ServiceTemplateVpcAccessNetworkInterfaceArgsDict,
        ServiceTrafficArgsDict,
    )


def template(**fields: Unpack[ServiceTemplateArgsDict]) -> ServiceTemplateArgsDict:
    """`template`: the revision template, everything a revision is made of."""
    return cast("ServiceTemplateArgsDict", wire(**fields))


def scaling(**fields: Unpack[ServiceTemplateScalingArgsDict]) -> ServiceTemplateScalingArgsDict:
    """`template.scaling`: the revision's instance counts."""
    return cast("ServiceTemplateScalingArgsDict", wire(**fields))


def node_selector(**fields: Unpack[ServiceTemplateNodeSelectorArgsDict]) -> ServiceTemplateNodeSelectorArgsDict:
    """`template.nodeSelector`: the GPU an instance gets."""
    return cast("ServiceTemplateNodeSelectorArgsDict", wire(**fields))


def traffic(**fields: Unpack[ServiceTrafficArgsDict]) -> ServiceTrafficArgsDict:
    """`traffics[]`: one revision's (or the latest's) share of the requests, and its tag."""
    return cast("ServiceTrafficArgsDict", wire(**fields))


def volume(**fields: Unpack[ServiceTemplateVolumeArgsDict]) -> ServiceTemplateVolumeArgsDict:
    """`template.volumes[]`: one volume the containers may mount."""
    return cast("ServiceTemplateVolumeArgsDict", wire(**fields))


def volume_gcs(**fields: Unpack[ServiceTemplateVolumeGcsArgsDict]) -> ServiceTemplateVolumeGcsArgsDict:
    """`volumes[].gcs`: a Cloud Storage FUSE volume."""
    return cast("ServiceTemplateVolumeGcsArgsDict", wire(**fields))


def volume_secret(**fields: Unpack[ServiceTemplateVolumeSecretArgsDict]) -> ServiceTemplateVolumeSecretArgsDict:
    """`volumes[].secret`: a Secret Manager secret as files."""
    return cast("ServiceTemplateVolumeSecretArgsDict", wire(**fields))


def volume_secret_item(
    **fields: Unpack[ServiceTemplateVolumeSecretItemArgsDict],
) -> ServiceTemplateVolumeSecretItemArgsDict:
    """`volumes[].secret.items[]`: which version of the secret, at which path."""
    return cast("ServiceTemplateVolumeSecretItemArgsDict", wire(**fields))


def vpc_access(**fields: Unpack[ServiceTemplateVpcAccessArgsDict]) -> ServiceTemplateVpcAccessArgsDict:
    """`template.vpcAccess`: Direct VPC egress."""
    return cast("ServiceTemplateVpcAccessArgsDict", wire(**fields))


def network_interface(
    **fields: Unpack[ServiceTemplateVpcAccessNetworkInterfaceArgsDict],
) -> ServiceTemplateVpcAccessNetworkInterfaceArgsDict:
    """`vpcAccess.networkInterfaces[]`: the network and subnet the egress goes through."""
    return cast("ServiceTemplateVpcAccessNetworkInterfaceArgsDict", wire(**fields))


def container(**fields: Unpack[ServiceTemplateContainerArgsDict]) -> ServiceTemplateContainerArgsDict:
    """`template.containers[]`: one container of the service's revision."""
    return cast("ServiceTemplateContainerArgsDict", wire(**fields))


def env(**fields: Unpack[ServiceTemplateContainerEnvArgsDict]) -> ServiceTemplateContainerEnvArgsDict:
    """`containers[].envs[]`: one environment variable."""
    return cast("ServiceTemplateContainerEnvArgsDict", wire(**fields))


def ports(**fields: Unpack[ServiceTemplateContainerPortsArgsDict]) -> ServiceTemplateContainerPortsArgsDict:
    """`containers[].ports`: the port Cloud Run sends requests to."""
    return cast("ServiceTemplateContainerPortsArgsDict", wire(**fields))


def resources(
    **fields: Unpack[ServiceTemplateContainerResourcesArgsDict],
) -> ServiceTemplateContainerResourcesArgsDict:
    """`containers[].resources`: limits, CPU idling and the startup boost."""
    return cast("ServiceTemplateContainerResourcesArgsDict", wire(**fields))


def startup_probe(
    **fields: Unpack[ServiceTemplateContainerStartupProbeArgsDict],
) -> ServiceTemplateContainerStartupProbeArgsDict:
    """`containers[].startupProbe`: how long Cloud Run waits for the container to answer."""
    return cast("ServiceTemplateContainerStartupProbeArgsDict", wire(**fields))


def startup_http_get(
    **fields: Unpack[ServiceTemplateContainerStartupProbeHttpGetArgsDict],
) -> ServiceTemplateContainerStartupProbeHttpGetArgsDict:
    """`startupProbe.httpGet`: the path and port the startup probe asks."""
    return cast("ServiceTemplateContainerStartupProbeHttpGetArgsDict", wire(**fields))


def liveness_probe(
    **fields: Unpack[ServiceTemplateContainerLivenessProbeArgsDict],
) -> ServiceTemplateContainerLivenessProbeArgsDict:
    """`containers[].livenessProbe`: when Cloud Run restarts a container that stopped answering."""
    return cast("ServiceTemplateContainerLivenessProbeArgsDict", wire(**fields))


def liveness_http_get(
    **fields: Unpack[ServiceTemplateContainerLivenessProbeHttpGetArgsDict],
) -> ServiceTemplateContainerLivenessProbeHttpGetArgsDict:
    """`livenessProbe.httpGet`: the path and port the liveness probe asks."""
    return cast("ServiceTemplateContainerLivenessProbeHttpGetArgsDict", wire(**fields))


def volume_mount(
    **fields: Unpack[ServiceTemplateContainerVolumeMountArgsDict],
) -> ServiceTemplateContainerVolumeMountArgsDict:
    """`containers[].volumeMounts[]`: where a container sees one of the template's volumes."""
    return cast("ServiceTemplateContainerVolumeMountArgsDict", wire(**fields))
