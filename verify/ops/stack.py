"""The one place `verify preflight|status|logs` read a stack's settings, and the names its resources get.

Why one adapter: the settings model is being reshaped (a Cloud Run variant and a TPU variant); every ops
command reads only `OpsStack`, so a change in the settings' shape is a change here and nowhere else.
The stack file is read exactly as the offline preview reads it (`preview.stack_file`), then validated by
`stacks.loading`, so a stack that does not preview does not preflight either, with the same messages.

Resource names follow the program's conventions (deploy.py, components/): the service, queued resource
and node are named after `gemma-<stack>-vllm`, import jobs `gemma-<stack>-import-<role>`, and every
resource carries the labels `managed-by=gemma-serving` and `stack=<stack>`.
"""

from __future__ import annotations

from pathlib import Path

import pydantic

from preview.stack_file import PLACEHOLDER_PROJECT, StackFileError, read_stack_config
from stacks.apis import required_apis
from stacks.labels import stack_labels
from stacks.loading import StackConfigError, settings_from_config
from stacks.settings import CloudRunStack, TpuStack
from stacks.tpu import FLEX_START_V6E_ZONES, V6E_ZONES, ProvisioningModel
from verify import UsageError

# The TPU VM's container (components/tpu/startup_script.py, StartupScriptSpec.container_name).
TPU_CONTAINER_NAME = "gemma-vllm"
# The line prefix of the TPU startup script's own log lines (components/tpu/startup_script.py, log()).
TPU_STARTUP_LOG_PREFIX = "gemma-vllm-startup:"


class _Frozen(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")


class CloudRunShape(_Frozen):
    """What ops needs of a Cloud Run GPU stack."""

    gpu: str  # Cloud Run's accelerator value, e.g. nvidia-l4
    gpu_display_name: str
    cpu: int
    memory_gib: int
    min_instances: int
    max_instances: int
    gpu_zonal_redundancy_disabled: bool
    model_load_seconds: int


class TpuShape(_Frozen):
    """What ops needs of a TPU stack."""

    zone: str
    accelerator_type: str  # e.g. v6e-1
    chips: int
    provisioning: str  # flex-start, spot or guaranteed
    reservation: str | None
    runtime_version: str
    port: int
    public_endpoint: bool
    active_deadline_seconds: int
    # Zones where this provisioning model can get v6e at all (flex-start: only some), for "try another zone".
    candidate_zones: tuple[str, ...]

    @property
    def preemptible(self) -> bool:
        """Flex-start and spot draw on the preemptible TPU quota; guaranteed on the on-demand one."""
        return self.provisioning in {ProvisioningModel.FLEX_START.value, ProvisioningModel.SPOT.value}


class OpsStack(_Frozen):
    name: str
    project: str
    region: str
    accelerator: str
    apis: tuple[str, ...]
    cloud_run: CloudRunShape | None = None
    tpu: TpuShape | None = None

    @property
    def platform(self) -> str:
        return "tpu" if self.tpu is not None else "cloud-run"

    @property
    def base_name(self) -> str:
        return f"gemma-{self.name}-vllm"

    @property
    def import_job_prefix(self) -> str:
        return f"gemma-{self.name}-import"

    @property
    def labels(self) -> dict[str, str]:
        return stack_labels(self.name)

    def queued_resource_name(self, tpu: TpuShape) -> str:
        """The request `pulumi up` queued for this stack's node (in the TPU shape's zone)."""
        return f"projects/{self.project}/locations/{tpu.zone}/queuedResources/{self.base_name}"

    def node_name(self, tpu: TpuShape) -> str:
        return f"projects/{self.project}/locations/{tpu.zone}/nodes/{self.base_name}"


def load_ops_stack(stack: str, *, root: Path | None = None, project: str | None = None) -> OpsStack:
    """Read `Pulumi.<stack>.yaml` (with `--project` overriding `gcp:project`); UsageError if unusable."""
    where = root if root is not None else Path.cwd()
    try:
        config = read_stack_config(where, stack)
    except StackFileError as error:
        raise UsageError(f"--stack {stack}: {error} (run from the project directory)") from None
    values = dict(config.values)
    if project:
        values["gcp:project"] = project
    if values.get("gcp:project") in {None, "", PLACEHOLDER_PROJECT}:
        raise UsageError(
            f"stack {stack!r} has no gcp:project: pass --project <your-project-id> or run "
            f"`pulumi config set gcp:project <your-project-id> --stack {stack}`"
        )
    try:
        settings = settings_from_config(values, project=config.project)
    except StackConfigError as error:
        raise UsageError(f"Pulumi.{stack}.yaml has invalid settings:\n{error}") from None
    assert settings.project is not None
    cloud_run = None
    tpu = None
    # One adapter per settings variant (stacks.settings): the platform was decided when the file was read.
    if isinstance(settings, CloudRunStack):
        run = settings.cloud_run
        cloud_run = CloudRunShape(
            gpu=settings.gpu.node_selector,
            gpu_display_name=settings.gpu.display_name,
            cpu=run.cpu,
            memory_gib=run.memory_gib,
            min_instances=run.min_instances,
            max_instances=run.max_instances,
            gpu_zonal_redundancy_disabled=run.gpu_zonal_redundancy_disabled,
            model_load_seconds=run.model_load_seconds,
        )
    if isinstance(settings, TpuStack):
        model = settings.tpu.provisioning.model
        tpu = TpuShape(
            zone=settings.tpu.zone,
            accelerator_type=settings.tpu.accelerator_type,
            chips=settings.tpu.chips,
            provisioning=model.value,
            reservation=settings.tpu.provisioning.reservation,
            runtime_version=settings.chip.runtime_version,
            port=settings.tpu.port,
            public_endpoint=settings.tpu.public_endpoint,
            active_deadline_seconds=settings.tpu.active_deadline,
            candidate_zones=FLEX_START_V6E_ZONES if model is ProvisioningModel.FLEX_START else V6E_ZONES,
        )
    return OpsStack(
        name=stack,
        project=settings.project,
        region=settings.region,
        accelerator=settings.accelerator.value,
        apis=required_apis(settings),
        cloud_run=cloud_run,
        tpu=tpu,
    )
