"""Typed wire builders for a Cloud Run service's containers: pulumi-gcp's own input types, at no import cost.

Why: the wire resources (components/wire/gcp.py) take `**inputs: Any`, so mypy saw none of the keys a
component wrote, and a misspelt `initial_delay_secconds` reached the provider. Each builder here takes the
keyword arguments of pulumi-gcp's generated `*ArgsDict` for that block (imported for the type checker only,
so the plan never loads `pulumi_gcp.cloudrunv2`), and returns the block in wire form (camelCase, None
fields left out) exactly as `wire` does: the plan is unchanged, the keys and their value types are checked.
The value is typed as the `*ArgsDict` its fields were checked against, so a block nests in its parent's
builder; it is in wire form, to be read by the provider, not by code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.cloudrunv2._inputs import (
        ServiceTemplateContainerArgsDict,
        ServiceTemplateContainerEnvArgsDict,
        ServiceTemplateContainerLivenessProbeArgsDict,
        ServiceTemplateContainerLivenessProbeHttpGetArgsDict,
        ServiceTemplateContainerPortsArgsDict,
        ServiceTemplateContainerResourcesArgsDict,
        ServiceTemplateContainerStartupProbeArgsDict,
        ServiceTemplateContainerStartupProbeHttpGetArgsDict,
        ServiceTemplateContainerVolumeMountArgsDict,
    )


def _wired(fields: Any) -> Any:  # noqa: ANN401 - a block's fields, checked by each builder's signature
    return wire(**fields)


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


def volume_mounts(mounts: list[dict[str, Any]] | None) -> list[ServiceTemplateContainerVolumeMountArgsDict] | None:
    """`containers[].volumeMounts`, as components/weight_access.py builds them in wire form for services and
    jobs alike (a job's mounts have the same two fields): typed here, unchanged."""
    return cast("list[ServiceTemplateContainerVolumeMountArgsDict] | None", mounts)
