"""The one place `verify preflight|status|logs` read a stack's settings, and the names its resources get.

Why one adapter: every ops command reads only `OpsStack`, so a change in the settings' shape is a change
here and nowhere else. It is a union like the settings (one variant per platform, told apart by
`platform`): what differs by platform and is a fact (permissions, zone, names, log filter, how /health is
reached) is the variant's own; each command `match`es the variant once where its checks differ.
The stack file is read exactly as the offline preview reads it (`preview.stack_file`), then validated by
`stacks.loading`, so a stack that does not preview does not preflight either, with the same messages.

Resource names come from `serving/naming.py`, the module `deploy/` names them with; every resource carries
the labels `managed-by=gemma-serving` and `stack=<stack>`.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Literal, assert_never

import pydantic

from preview.stack_file import PLACEHOLDER_PROJECT, StackFileError, project_root, read_stack_config
from serving.gke_machines import pod_resource
from serving.naming import TPU_SERVING_CONTAINER, TPU_STARTUP_LOG_PREFIX, StackNames, stack_labels
from serving.shapes import tier_zones
from stacks.gke import GkeSettings
from stacks.loading import StackConfigError, settings_from_config
from stacks.settings import CloudRunStack, GkeStack, TpuStack
from stacks.tpu import ProvisioningModel
from verify import UsageError
from verify.ops import deploy_requirements

# A project ID (https://cloud.google.com/resource-manager/docs/creating-managing-projects: 6 to 30 lowercase
# letters, digits and hyphens, starting with a letter, not ending with a hyphen) or a project number. It is
# pasted into Google API paths, so nothing else may pass: `victim:setIamPolicy?x=` would turn a read into
# another method. Legacy domain-scoped IDs (`example.com:project`) are refused for the same reason.
PROJECT_ID = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]|[1-9][0-9]{0,19}")

# How `/health` is reached: with a Google ID token (Cloud Run invokers) or bare (TPU).
HealthAuth = Literal["google", "none"]


class _OpsStackBase(pydantic.BaseModel):
    """What every ops command reads of any stack: its names, where it lives, the APIs it needs."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    project: str
    region: str
    accelerator: str
    apis: tuple[str, ...]

    @property
    def names(self) -> StackNames:
        return StackNames(self.name)

    @property
    def base_name(self) -> str:
        """What serves: the Cloud Run service, or the TPU queued resource and node."""
        return self.names.serving

    @property
    def import_job_prefix(self) -> str:
        return self.names.import_job_prefix

    @property
    def labels(self) -> dict[str, str]:
        return stack_labels(self.name)

    def _logs_after(self, since: datetime) -> str:
        """The start of every log filter, in Cloud Logging's query language
        (https://cloud.google.com/logging/docs/view/logging-query-language)."""
        return f'timestamp>="{since.strftime("%Y-%m-%dT%H:%M:%SZ")}"'


class CloudRunOpsStack(_OpsStackBase):
    """A Cloud Run GPU stack: a regional service (Cloud Run picks the zone) and its import jobs."""

    platform: Literal["cloud-run"] = "cloud-run"
    gpu: str  # Cloud Run's accelerator value, e.g. nvidia-l4
    gpu_display_name: str
    cpu: int
    memory_gib: int
    min_instances: int
    max_instances: int
    gpu_zonal_redundancy_disabled: bool
    model_load_seconds: int
    # cloudRun.maxColdStartSeconds: the budget `verify promote` holds a candidate's measured cold start to.
    max_cold_start_seconds: int | None = None
    # The checkpoint's bytes the plan estimated (model and drafter), for the measured read rate.
    weight_bytes: int | None = None

    @property
    def zone(self) -> None:
        """Cloud Run places instances itself: no zone to name."""
        return None

    @property
    def permissions(self) -> tuple[deploy_requirements.Permission, ...]:
        return deploy_requirements.BASE_PERMISSIONS + deploy_requirements.CLOUD_RUN_PERMISSIONS

    @property
    def health_auth(self) -> HealthAuth:
        """The service admits only invokers: `/health` needs a Google ID token."""
        return "google"

    def log_filter(self, since: datetime) -> str:
        """The service's revisions and the import jobs, in Cloud Logging's query language."""
        service = (
            f'resource.type="cloud_run_revision" AND resource.labels.location="{self.region}" '
            f'AND resource.labels.service_name:"{self.base_name}"'
        )
        jobs = f'resource.type="cloud_run_job" AND resource.labels.job_name:"{self.import_job_prefix}"'
        return f"{self._logs_after(since)} AND (({service}) OR ({jobs}))"


class OpsPlacement(pydantic.BaseModel):
    """One zone and tier the stack's request tries (tpu.placements, or its one zone), in order."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    zone: str
    provisioning: str  # flex-start, spot or guaranteed
    reservation: str | None = None

    @property
    def preemptible(self) -> bool:
        """Flex-start and spot draw on the preemptible TPU quota; guaranteed on the on-demand one."""
        return self.provisioning in {ProvisioningModel.FLEX_START.value, ProvisioningModel.SPOT.value}

    @property
    def label(self) -> str:
        return f"{self.zone} {self.provisioning}"


class TpuOpsStack(_OpsStackBase):
    """A TPU stack: one queued resource in one zone, whose node runs vLLM in a container."""

    platform: Literal["tpu"] = "tpu"
    zone: str
    accelerator_type: str  # e.g. v6e-1
    chips: int
    provisioning: str  # flex-start, spot or guaranteed
    reservation: str | None
    runtime_version: str
    port: int
    public_endpoint: bool
    active_deadline_seconds: int
    # A flex-start node's longest run (tpu.provisioning.maxRunDuration or its default); None otherwise.
    flex_start_run_seconds: int | None = None
    # Zones where this provisioning model can get the slice's generation at all (flex-start: only some), for
    # "try another zone".
    candidate_zones: tuple[str, ...]
    # Where `pulumi up` asks, in order: the first is `zone` with `provisioning`.
    placements: tuple[OpsPlacement, ...] = ()

    @property
    def placement_list(self) -> tuple[OpsPlacement, ...]:
        return self.placements or (
            OpsPlacement(zone=self.zone, provisioning=self.provisioning, reservation=self.reservation),
        )

    def queued_resource_in(self, zone: str) -> str:
        """The request `pulumi up` queues in one placement's zone (the same id in every zone)."""
        return self.names.queued_resource_path(self.project, zone)

    @property
    def preemptible(self) -> bool:
        """Flex-start and spot draw on the preemptible TPU quota; guaranteed on the on-demand one."""
        return self.provisioning in {ProvisioningModel.FLEX_START.value, ProvisioningModel.SPOT.value}

    @property
    def permissions(self) -> tuple[deploy_requirements.Permission, ...]:
        return deploy_requirements.BASE_PERMISSIONS + deploy_requirements.TPU_PERMISSIONS

    @property
    def health_auth(self) -> HealthAuth:
        """vLLM's `--api-key` guards /v1 only: `/health` answers without it."""
        return "none"

    @property
    def queued_resource_name(self) -> str:
        """The request `pulumi up` queued for this stack's node."""
        return self.names.queued_resource_path(self.project, self.zone)

    @property
    def node_name(self) -> str:
        return self.names.tpu_node_path(self.project, self.zone)

    def log_filter(self, since: datetime) -> str:
        """The node's vLLM container (Docker's gcplogs driver) and the startup script's own lines."""
        container = (
            f'logName="projects/{self.project}/logs/gcplogs-docker-driver" '
            f'AND jsonPayload.container.name="/{TPU_SERVING_CONTAINER}"'
        )
        startup = f'(textPayload:"{TPU_STARTUP_LOG_PREFIX}" OR jsonPayload.message:"{TPU_STARTUP_LOG_PREFIX}")'
        return f"{self._logs_after(since)} AND (({container}) OR {startup})"


class GkeOpsStack(_OpsStackBase):
    """A GKE fleet: a cluster, one accelerator node pool, a Deployment of vLLM pods behind a Service."""

    platform: Literal["gke"] = "gke"
    cluster: str  # the cluster's name
    cluster_location: str  # region (created clusters) or zone
    namespace: str
    zones: tuple[str, ...]
    machine_type: str
    accelerators_per_node: int
    accelerator_resource: str  # nvidia.com/gpu or google.com/tpu: what a Pending pod asks for
    provisioning: str  # on-demand, spot or flex-start
    max_nodes: int
    port: int
    # Behind the inference gateway (gke.gateway.routing): the Gateway and the InferencePools, serving first.
    gateway: str | None = None
    pools: tuple[str, ...] = ()

    @property
    def zone(self) -> None:
        """The node pool spans gke.nodePool.zones: no single zone to name."""
        return None

    @property
    def deployment(self) -> str:
        """The Deployment, its Service and its HPA share the serving name (deploy/gke.py)."""
        return self.names.serving

    @property
    def cluster_path(self) -> str:
        return f"projects/{self.project}/locations/{self.cluster_location}/clusters/{self.cluster}"

    @property
    def preemptible(self) -> bool:
        return self.provisioning != "on-demand"

    @property
    def permissions(self) -> tuple[deploy_requirements.Permission, ...]:
        return deploy_requirements.BASE_PERMISSIONS + deploy_requirements.GKE_PERMISSIONS

    @property
    def health_auth(self) -> HealthAuth:
        """vLLM's API key guards /v1 only: `/health` answers without it."""
        return "none"

    def log_filter(self, since: datetime) -> str:
        """The vLLM containers of the fleet's pods (GKE sends container logs to Cloud Logging)."""
        pods = (
            f'resource.type="k8s_container" AND resource.labels.cluster_name="{self.cluster}" '
            f'AND resource.labels.namespace_name="{self.namespace}" AND labels."k8s-pod/app"="{self.deployment}"'
        )
        jobs = f'resource.type="cloud_run_job" AND resource.labels.job_name:"{self.import_job_prefix}"'
        return f"{self._logs_after(since)} AND (({pods}) OR ({jobs}))"


# The settings' variants (stacks.settings), each as ops reads it; commands `match` on it once.
OpsStack = CloudRunOpsStack | TpuOpsStack | GkeOpsStack


def require_project_id(value: str, where: str) -> str:
    """The project ID or number unchanged; UsageError naming `where` and the accepted form otherwise."""
    if not PROJECT_ID.fullmatch(value):
        raise UsageError(
            f"{where}: {value[:64]!r} is not a Google Cloud project ID (6-30 lowercase letters, digits and "
            "hyphens, starting with a letter, not ending with a hyphen) or project number"
        )
    return value


def load_ops_stack(stack: str, *, root: Path | None = None, project: str | None = None) -> OpsStack:
    """Read `Pulumi.<stack>.yaml` (with `--project` overriding `gcp:project`); UsageError if unusable."""
    try:
        folder = project_root(root)
        config = read_stack_config(folder, stack)
    except StackFileError as error:
        raise UsageError(f"--stack {stack}: {error}") from None
    values = dict(config.values)
    if project:
        values["gcp:project"] = project
    if values.get("gcp:project") in {None, "", PLACEHOLDER_PROJECT}:
        raise UsageError(
            f"stack {stack!r} has no gcp:project: pass --project <your-project-id> or run "
            f"`pulumi config set gcp:project <your-project-id> --stack {stack}`"
        )
    require_project_id(str(values["gcp:project"]), "--project" if project else f"gcp:project of stack {stack!r}")
    try:
        settings = settings_from_config(values, project=config.project, root=folder)
    except StackConfigError as error:
        raise UsageError(f"Pulumi.{stack}.yaml has invalid settings:\n{error}") from None
    shared = _OpsStackBase(
        name=stack,
        project=str(values["gcp:project"]),
        region=settings.region,
        accelerator=settings.accelerator,
        apis=settings.apis,
    ).model_dump()
    # The platform was decided when the file was read: one ops variant per settings variant.
    match settings:
        case CloudRunStack():
            run = settings.cloud_run
            return CloudRunOpsStack(
                **shared,
                gpu=settings.shape.cloud_run_selector,
                gpu_display_name=settings.shape.display_name,
                cpu=run.cpu,
                memory_gib=run.memory_gib,
                min_instances=run.min_instances,
                max_instances=run.max_instances,
                gpu_zonal_redundancy_disabled=run.gpu_zonal_redundancy_disabled,
                model_load_seconds=settings.startup_load_seconds,
                max_cold_start_seconds=run.max_cold_start_seconds,
                weight_bytes=estimate.weight_bytes if (estimate := settings.cold_start_estimate()) else None,
            )
        case TpuStack():
            tpu = settings.tpu
            model = tpu.provisioning.model
            return TpuOpsStack(
                **shared,
                zone=tpu.zone,
                accelerator_type=tpu.accelerator_type,
                chips=tpu.chips,
                provisioning=model.value,
                reservation=tpu.provisioning.reservation,
                runtime_version=settings.shape.tpu_vm_runtime,
                port=tpu.port,
                public_endpoint=tpu.public_endpoint,
                active_deadline_seconds=tpu.active_deadline,
                flex_start_run_seconds=(
                    tpu.provisioning.flex_start_run_seconds if model is ProvisioningModel.FLEX_START else None
                ),
                candidate_zones=tier_zones(settings.accelerator, model.value),
                placements=tuple(
                    OpsPlacement(
                        zone=placement.zone,
                        provisioning=placement.provisioning.model.value,
                        reservation=placement.provisioning.reservation,
                    )
                    for placement in tpu.placement_list
                ),
            )
        case GkeStack():
            gke = settings.gke
            shape = gke.node_pool.shape
            return GkeOpsStack(
                **shared,
                cluster=gke.cluster.existing_name or StackNames(stack).gke_cluster,
                cluster_location=gke.cluster_location,
                namespace=gke.namespace,
                zones=gke.node_pool.zones,
                machine_type=shape.name,
                accelerators_per_node=shape.chips,
                accelerator_resource=pod_resource(shape),
                provisioning=gke.node_pool.provisioning.value,
                max_nodes=gke.node_pool.max_nodes,
                port=gke.port,
                gateway=StackNames(stack).gke_gateway if gke.uses_gateway else None,
                pools=_inference_pools(StackNames(stack), gke) if gke.uses_gateway else (),
            )
        case _ as unreachable:
            assert_never(unreachable)


def _inference_pools(names: StackNames, gke: GkeSettings) -> tuple[str, ...]:
    """The pools the gateway routes to: one over the fleet, or the serving then the candidate track's."""
    if not gke.rollout.gated:
        return (names.inference_pool(),)
    return (names.inference_pool(gke.rollout.serving_track), names.inference_pool(gke.rollout.candidate_track))
