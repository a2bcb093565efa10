"""Typed wire builders for a Cloud Run service's blocks: pulumi-gcp's own input types, at no import cost.

Why: the wire resources (components/wire/gcp.py) took `**inputs: Any`, so mypy saw none of the keys a
component wrote, and a misspelt `initial_delay_secconds` reached the provider. Each builder here takes the
keyword arguments of pulumi-gcp's generated `*ArgsDict` for that block of `gcp.cloudrunv2.Service` (its revision
template, scaling, traffic, volumes, VPC access, containers and their probes; imported for the type checker
only, so the plan never loads `pulumi_gcp.cloudrunv2`), and returns the block in wire form (camelCase, None
fields left out) exactly as `wire` does: the plan is unchanged, the keys and their value types are checked.
The value is typed as the `*ArgsDict` its fields were checked against, so a block nests in its parent's
builder and the service's typed inputs (components/wire/gcp_inputs.py); it is in wire form, to be read by the
provider, not by code. A Cloud Run job's blocks are other types: components/wire/cloud_run_job.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack, cast

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


def _wired(fields: Any) -> Any:  # noqa: ANN401 - a block's fields, checked by each builder's signature
    return wire(**fields)


def template(**fields: Unpack[ServiceTemplateArgsDict]) -> ServiceTemplateArgsDict:
    """`template`: the revision template, everything a revision is made of."""
    return cast("ServiceTemplateArgsDict", _wired(fields))


def scaling(**fields: Unpack[ServiceTemplateScalingArgsDict]) -> ServiceTemplateScalingArgsDict:
    """`template.scaling`: the revision's instance counts."""
    return cast("ServiceTemplateScalingArgsDict", _wired(fields))


def node_selector(**fields: Unpack[ServiceTemplateNodeSelectorArgsDict]) -> ServiceTemplateNodeSelectorArgsDict:
    """`template.nodeSelector`: the GPU an instance gets."""
    return cast("ServiceTemplateNodeSelectorArgsDict", _wired(fields))


def traffic(**fields: Unpack[ServiceTrafficArgsDict]) -> ServiceTrafficArgsDict:
    """`traffics[]`: one revision's (or the latest's) share of the requests, and its tag."""
    return cast("ServiceTrafficArgsDict", _wired(fields))


def volume(**fields: Unpack[ServiceTemplateVolumeArgsDict]) -> ServiceTemplateVolumeArgsDict:
    """`template.volumes[]`: one volume the containers may mount."""
    return cast("ServiceTemplateVolumeArgsDict", _wired(fields))


def volume_gcs(**fields: Unpack[ServiceTemplateVolumeGcsArgsDict]) -> ServiceTemplateVolumeGcsArgsDict:
    """`volumes[].gcs`: a Cloud Storage FUSE volume."""
    return cast("ServiceTemplateVolumeGcsArgsDict", _wired(fields))


def volume_secret(**fields: Unpack[ServiceTemplateVolumeSecretArgsDict]) -> ServiceTemplateVolumeSecretArgsDict:
    """`volumes[].secret`: a Secret Manager secret as files."""
    return cast("ServiceTemplateVolumeSecretArgsDict", _wired(fields))


def volume_secret_item(
    **fields: Unpack[ServiceTemplateVolumeSecretItemArgsDict],
) -> ServiceTemplateVolumeSecretItemArgsDict:
    """`volumes[].secret.items[]`: which version of the secret, at which path."""
    return cast("ServiceTemplateVolumeSecretItemArgsDict", _wired(fields))


def vpc_access(**fields: Unpack[ServiceTemplateVpcAccessArgsDict]) -> ServiceTemplateVpcAccessArgsDict:
    """`template.vpcAccess`: Direct VPC egress."""
    return cast("ServiceTemplateVpcAccessArgsDict", _wired(fields))


def network_interface(
    **fields: Unpack[ServiceTemplateVpcAccessNetworkInterfaceArgsDict],
) -> ServiceTemplateVpcAccessNetworkInterfaceArgsDict:
    """`vpcAccess.networkInterfaces[]`: the network and subnet the egress goes through."""
    return cast("ServiceTemplateVpcAccessNetworkInterfaceArgsDict", _wired(fields))


def container(**fields: Unpack[ServiceTemplateContainerArgsDict]) -> ServiceTemplateContainerArgsDict:
    """`template.containers[]`: one container of the service's revision."""
    return cast("ServiceTemplateContainerArgsDict", _wired(fields))


def env(**fields: Unpack[ServiceTemplateContainerEnvArgsDict]) -> ServiceTemplateContainerEnvArgsDict:
    """`containers[].envs[]`: one environment variable."""
    return cast("ServiceTemplateContainerEnvArgsDict", _wired(fields))


def ports(**fields: Unpack[ServiceTemplateContainerPortsArgsDict]) -> ServiceTemplateContainerPortsArgsDict:
    """`containers[].ports`: the port Cloud Run sends requests to."""
    return cast("ServiceTemplateContainerPortsArgsDict", _wired(fields))


def resources(
    **fields: Unpack[ServiceTemplateContainerResourcesArgsDict],
) -> ServiceTemplateContainerResourcesArgsDict:
    """`containers[].resources`: limits, CPU idling and the startup boost."""
    return cast("ServiceTemplateContainerResourcesArgsDict", _wired(fields))


def startup_probe(
    **fields: Unpack[ServiceTemplateContainerStartupProbeArgsDict],
) -> ServiceTemplateContainerStartupProbeArgsDict:
    """`containers[].startupProbe`: how long Cloud Run waits for the container to answer."""
    return cast("ServiceTemplateContainerStartupProbeArgsDict", _wired(fields))


def startup_http_get(
    **fields: Unpack[ServiceTemplateContainerStartupProbeHttpGetArgsDict],
) -> ServiceTemplateContainerStartupProbeHttpGetArgsDict:
    """`startupProbe.httpGet`: the path and port the startup probe asks."""
    return cast("ServiceTemplateContainerStartupProbeHttpGetArgsDict", _wired(fields))


def liveness_probe(
    **fields: Unpack[ServiceTemplateContainerLivenessProbeArgsDict],
) -> ServiceTemplateContainerLivenessProbeArgsDict:
    """`containers[].livenessProbe`: when Cloud Run restarts a container that stopped answering."""
    return cast("ServiceTemplateContainerLivenessProbeArgsDict", _wired(fields))


def liveness_http_get(
    **fields: Unpack[ServiceTemplateContainerLivenessProbeHttpGetArgsDict],
) -> ServiceTemplateContainerLivenessProbeHttpGetArgsDict:
    """`livenessProbe.httpGet`: the path and port the liveness probe asks."""
    return cast("ServiceTemplateContainerLivenessProbeHttpGetArgsDict", _wired(fields))


def volume_mount(
    **fields: Unpack[ServiceTemplateContainerVolumeMountArgsDict],
) -> ServiceTemplateContainerVolumeMountArgsDict:
    """`containers[].volumeMounts[]`: where a container sees one of the template's volumes."""
    return cast("ServiceTemplateContainerVolumeMountArgsDict", _wired(fields))
