"""Typed wire builders for Cloud Run job blocks: pulumi-gcp's `cloudrunv2` `JobTemplate*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`. A job's template (the execution, its task
template, containers and volumes) has types of its own, not the service's (components/wire/cloud_run.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.cloudrunv2 import _inputs as cloudrunv2


def template(**fields: Unpack[cloudrunv2.JobTemplateArgsDict]) -> cloudrunv2.JobTemplateArgsDict:
    """`template`: one execution of the job (how many tasks, how many at once)."""
    return cast("cloudrunv2.JobTemplateArgsDict", wire(**fields))


def task_template(**fields: Unpack[cloudrunv2.JobTemplateTemplateArgsDict]) -> cloudrunv2.JobTemplateTemplateArgsDict:
    """`template.template`: what each task runs, as whom, for how long and how often retried."""
    return cast("cloudrunv2.JobTemplateTemplateArgsDict", wire(**fields))


def container(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateContainerArgsDict],
) -> cloudrunv2.JobTemplateTemplateContainerArgsDict:
    """`template.template.containers[]`: one container of a task."""
    return cast("cloudrunv2.JobTemplateTemplateContainerArgsDict", wire(**fields))


def env(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateContainerEnvArgsDict],
) -> cloudrunv2.JobTemplateTemplateContainerEnvArgsDict:
    """`containers[].envs[]`: one environment variable, a value or a secret's."""
    return cast("cloudrunv2.JobTemplateTemplateContainerEnvArgsDict", wire(**fields))


def env_value_source(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateContainerEnvValueSourceArgsDict],
) -> cloudrunv2.JobTemplateTemplateContainerEnvValueSourceArgsDict:
    """`envs[].valueSource`: where a variable's value comes from."""
    return cast("cloudrunv2.JobTemplateTemplateContainerEnvValueSourceArgsDict", wire(**fields))


def secret_key_ref(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateContainerEnvValueSourceSecretKeyRefArgsDict],
) -> cloudrunv2.JobTemplateTemplateContainerEnvValueSourceSecretKeyRefArgsDict:
    """`valueSource.secretKeyRef`: a Secret Manager secret's version."""
    return cast("cloudrunv2.JobTemplateTemplateContainerEnvValueSourceSecretKeyRefArgsDict", wire(**fields))


def resources(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateContainerResourcesArgsDict],
) -> cloudrunv2.JobTemplateTemplateContainerResourcesArgsDict:
    """`containers[].resources`: a task's CPU and memory limits."""
    return cast("cloudrunv2.JobTemplateTemplateContainerResourcesArgsDict", wire(**fields))


def volume_mount(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateContainerVolumeMountArgsDict],
) -> cloudrunv2.JobTemplateTemplateContainerVolumeMountArgsDict:
    """`containers[].volumeMounts[]`: where a container sees one of the task's volumes."""
    return cast("cloudrunv2.JobTemplateTemplateContainerVolumeMountArgsDict", wire(**fields))


def volume(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateVolumeArgsDict],
) -> cloudrunv2.JobTemplateTemplateVolumeArgsDict:
    """`template.template.volumes[]`: one volume the task's containers may mount."""
    return cast("cloudrunv2.JobTemplateTemplateVolumeArgsDict", wire(**fields))


def volume_gcs(
    **fields: Unpack[cloudrunv2.JobTemplateTemplateVolumeGcsArgsDict],
) -> cloudrunv2.JobTemplateTemplateVolumeGcsArgsDict:
    """`volumes[].gcs`: a Cloud Storage FUSE volume."""
    return cast("cloudrunv2.JobTemplateTemplateVolumeGcsArgsDict", wire(**fields))
