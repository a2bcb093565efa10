"""The stack-output contract: what a deployed stack exports, one model per platform.

Why one model, here: the program writes these outputs (`deploy`), `verify` reads them (and later the
status command and the MCP server will); the docs table is generated from the field descriptions.
Declared once, in a package both the program and `verify` may import (`verify` never imports
`components`), so a renamed or dropped output fails the round-trip test instead of a rollout check.

`python -m serving.outputs` prints the Markdown table that docs/architecture.md carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from serving.pricing import CloudRunBilling, GkeBilling, TpuBilling


class _SharedOutputs(BaseModel):
    """Outputs every stack exports, whatever its platform."""

    # Readers ignore outputs they do not know, so a newer program never breaks an older reader. Built on first
    # validation (defer_build): the program reads only the fields' names, and each plan would pay ~10 ms
    # building validators only `verify` uses.
    model_config = ConfigDict(
        frozen=True, extra="ignore", alias_generator=to_camel, populate_by_name=True, defer_build=True
    )

    endpoint: str = Field(description="base URL of the OpenAI-compatible server, no trailing slash")
    served_model_name: str = Field(description='the name clients put in `"model"`')
    platform: str = Field(
        description="`cloud-run`, `tpu` or `gke`: which platform's outputs below the stack also exports"
    )
    auth_kind: str = Field(
        description="`google-id-token` (Cloud Run, IAM) or `api-key` (TPU, vLLM `--api-key`); verify also "
        "accepts `none` for a URL it is given"
    )
    accelerator: str = Field(
        description="the stack's `accelerator` key as its stack file names it (the keys of serving/data/shapes.json)"
    )
    region: str = Field(
        description="the stack's region (the model bucket, the image mirror and, on Cloud Run, the service)"
    )
    max_model_len: int = Field(description="the `--max-model-len` the server was started with")
    max_num_seqs: int = Field(description="the `--max-num-seqs` the server was started with")
    image: str = Field(
        description="the image reference the server runs (through the stack's mirror, or a derived image's "
        "digest); on TPU, what the node's startup script pulls through the mirror"
    )
    model_bucket: str = Field(description="the model bucket's name")
    service_account: str = Field(description="the email of the identity vLLM runs as")
    vllm_args: list[str] = Field(
        description="the full `vllm serve` argument list the server starts with (model path first)"
    )
    import_jobs: dict[str, str] = Field(
        description="per checkpoint (`target`, `drafter`), the command that runs its weight import by hand "
        "(empty unless the stack file names a `model.source`)"
    )
    adapter_routes: str | None = Field(
        default=None,
        description="with adapters: the route table `gs://<bucket>/adapter-routes.json` that says which version "
        "each adapter's name serves (written by `gemma-verify adapters promote`, read by every replica)",
    )


class BenchJobOutputs(BaseModel):
    """The `benchJob` output: the load-generator job `verify bench --on-cloud-run` starts (deploy/cloud_run.py).

    `project`, `tasks` and `cpuPerTask` are optional so stacks deployed before they were exported still
    read (the job then runs in gcloud's default project); the rest is what starting the job needs.
    """

    model_config = _SharedOutputs.model_config

    name: str = Field(description="the Cloud Run job's name")
    region: str = Field(description="the job's region")
    results_bucket: str = Field(description="the bucket the tasks write their files to")
    results_prefix: str = Field(description="the folder of each run's files in that bucket")
    project: str | None = Field(default=None, description="the job's project")
    tasks: int | None = Field(default=None, description="how many tasks each execution runs")
    cpu_per_task: float | None = Field(default=None, description="the vCPU of each task")


class _CloudRunServiceOutputs(_SharedOutputs):
    """A Cloud Run GPU stack's service, its size and billing (the rollout's outputs are CloudRunRolloutOutputs)."""

    service_name: str = Field(description="the Cloud Run service's name")
    billing: CloudRunBilling = Field(
        description="what one instance bills, priced by `serving/pricing.py` for the plan and `gemma-verify bench`: "
        "`{kind: cloud-run, accelerator, region, cpu, memoryGib, gpuZonalRedundancy, minInstances, maxInstances}`"
    )
    concurrency: int = Field(description="per-instance request concurrency (never below `maxNumSeqs`)")
    max_instances: int = Field(
        description="the instance cap; `concurrency` x `maxInstances` is what Cloud Run admits before it answers 429"
    )

    bench_job: BenchJobOutputs | None = Field(
        default=None,
        description="only with a `bench` block: the load-generator job verify starts "
        "(`{name, region, project, tasks, cpuPerTask, resultsBucket, resultsPrefix}`)",
    )


class CloudRunRolloutOutputs(BaseModel):
    """A Cloud Run stack's rollout outputs on their own: `verify promote` reads just these (a stack's other
    outputs may be missing for it), and CloudRunOutputs includes them, so both read one declaration."""

    model_config = _SharedOutputs.model_config

    rollout: Literal["gated", "direct"] = Field(
        description="`gated` (new revisions start as the `candidate` tag with 0%) or `direct`"
    )
    cloud_run_service: str = Field(
        description="`projects/<p>/locations/<region>/services/<name>`, what `gemma-verify promote` reads through the "
        "Admin API"
    )
    candidate_revision: str = Field(
        description="the revision the current template makes, `<service>-<10 hex of the template's hash>`"
    )
    candidate_url: str | None = Field(
        default=None, description="gated only: the candidate tag's own URL, `https://candidate---<service host>`"
    )
    serving_revision: str = Field(
        description="the revision that gets the traffic the candidate does not; the next update reads it back from here"
    )
    previous_revision: str | None = Field(
        default=None,
        description="gated only: where `gemma-verify promote --rollback` returns (none before the first promotion)",
    )
    candidate_percent: int = Field(
        default=0,
        ge=0,
        le=100,
        description="gated only: the candidate's share (0 after `pulumi up`; a step's share during "
        "`gemma-verify promote --steps`)",
    )

    @property
    def first_rollout(self) -> bool:
        """No earlier revision: the candidate is the serving revision (it serves 100% already)."""
        return self.candidate_revision == self.serving_revision


class CloudRunOutputs(CloudRunRolloutOutputs, _CloudRunServiceOutputs):
    """A Cloud Run GPU stack (l4, rtx6000).

    Field order (what the plan and the docs table list) is the shared outputs, the service's, then the
    rollout's: pydantic collects fields along the reversed MRO.
    """

    LABEL: ClassVar[str] = "Cloud Run"

    platform: Literal["cloud-run"] = Field(default="cloud-run", description="`cloud-run`")
    auth_kind: Literal["google-id-token"] = Field(default="google-id-token", description="`google-id-token`")


class TpuOutputs(_SharedOutputs):
    """A TPU VM stack: one node of a TPU slice, from a queued resource."""

    LABEL: ClassVar[str] = "TPU"

    platform: Literal["tpu"] = Field(default="tpu", description="`tpu`")
    auth_kind: Literal["api-key"] = Field(default="api-key", description="`api-key`")
    api_key_secret: str = Field(
        description="the Secret Manager secret that holds vLLM's API key (`projects/<p>/secrets/<id>`)"
    )
    zone: str = Field(
        description="the zone the node was granted in: the stack's zone, or with `tpu.placements` the placement "
        "Google granted (docs/tpu.md)"
    )
    billing: TpuBilling = Field(
        description="what the node bills, priced by `serving/pricing.py` for the plan and `gemma-verify bench`: "
        "`{kind: tpu, acceleratorType, chips, provisioningModel, region, maxRunSeconds}`"
    )
    accelerator_type: str = Field(description="the slice asked for, the stack's `tpu.acceleratorType`")
    provisioning_model: Literal["flex-start", "spot", "guaranteed"] = Field(
        description="`flex-start`, `spot` or `guaranteed` (`stacks/tpu.py`), the granted placement's"
    )
    queued_resource_name: str = Field(
        description="`projects/<p>/locations/<zone>/queuedResources/<id>`, the request `pulumi up` created"
    )
    node_id: str = Field(description="the TPU VM's id (for `gcloud compute tpus tpu-vm ssh <nodeId> --zone <zone>`)")


class GkeOutputs(_SharedOutputs):
    """A GKE fleet stack (gke-*): where the cluster is and the Kubernetes objects verify reads."""

    LABEL: ClassVar[str] = "GKE"

    platform: Literal["gke"] = Field(default="gke", description="`gke`")
    auth_kind: Literal["api-key"] = Field(default="api-key", description="`api-key`")
    api_key_secret: str = Field(
        description="the Secret Manager secret that holds vLLM's API key (`projects/<p>/secrets/<id>`), mounted "
        "into each pod by the Secret Manager CSI add-on"
    )
    billing: GkeBilling = Field(
        description="what the fleet bills, priced by `serving/pricing.py`: `{kind: gke, machineType, accelerator, "
        "acceleratorsPerNode, provisioningModel, region, minNodes, maxNodes, clusterCreated, systemMachineType, "
        "systemNodes}`"
    )
    cluster: str = Field(description="`projects/<p>/locations/<l>/clusters/<name>`, the cluster the fleet runs in")
    cluster_endpoint: str = Field(description="the cluster's control-plane address (what `gemma-verify status` calls)")
    namespace: str = Field(description="the Kubernetes namespace of the fleet's objects")
    deployment: str = Field(description="the vLLM Deployment's name (its pods carry `app=<deployment>`)")
    service_name: str = Field(description="the Kubernetes Service in front of the pods (internal load balancer)")
    hpa: str = Field(description="the HorizontalPodAutoscaler's name (scales on `vllm:num_requests_waiting`)")
    node_pool: str = Field(description="the accelerator node pool's name")
    zones: list[str] = Field(description="the zones the node pool may place nodes in")
    port_forward: str = Field(
        description="the `kubectl port-forward` command that reaches the internal Service from a laptop "
        "(then `verify ... --url http://127.0.0.1:<port>`)"
    )
    gateway: str | None = Field(
        default=None,
        description="the inference gateway's Gateway (`gke.gateway.routing: gateway`); `endpoint` is then its "
        "internal address, and requests go through the endpoint picker",
    )
    gateway_endpoint: str | None = Field(
        default=None, description="the inference gateway's internal address (`http://<ip>`), also `endpoint`"
    )
    inference_pools: list[str] | None = Field(
        default=None,
        description="the InferencePools behind the gateway (the serving one first; a gated fleet has one per "
        "track); each pool's endpoint picker is `<pool>-epp`",
    )
    serving_track: str | None = Field(
        default=None, description="gated rollouts (`gke.rollout.gated`): the track users reach, `blue` or `green`"
    )
    candidate_track: str | None = Field(
        default=None, description="gated rollouts: the track a new template lands on, checked by `gemma-verify promote`"
    )
    candidate_endpoint: str | None = Field(
        default=None, description="gated rollouts: the candidate Service's internal address, once it has one"
    )
    candidate_port_forward: str | None = Field(
        default=None, description="gated rollouts: the `kubectl port-forward` command that reaches the candidate"
    )


_Model = TypeVar("_Model", bound=BaseModel)


# A deployed stack's outputs, the variant chosen by `platform`.
StackOutputs = Annotated[CloudRunOutputs | TpuOutputs | GkeOutputs, Field(discriminator="platform")]
PLATFORM_OUTPUTS: tuple[type[CloudRunOutputs] | type[TpuOutputs] | type[GkeOutputs], ...] = (
    CloudRunOutputs,
    TpuOutputs,
    GkeOutputs,
)
# mypy reports TypeAdapter(<Annotated union>) as arg-type or not depending on its cache (a fresh run and an
# incremental one disagreed on the same files), so the ignore names both outcomes.
# Deferred like the models: only readers validate outputs.
_READER: TypeAdapter[StackOutputs] = TypeAdapter(StackOutputs, config=ConfigDict(defer_build=True))  # type: ignore[arg-type, unused-ignore]


def parse_stack_outputs(raw: object) -> CloudRunOutputs | TpuOutputs | GkeOutputs:
    """Validate `pulumi stack output --json` (pydantic.ValidationError names each missing or bad output)."""
    return _READER.validate_python(raw)


class DeployedOutputs(BaseModel):
    """A deployed stack's outputs as its readers take them: a tolerant reading, for stacks deployed by older versions.

    The platform models above are what this version's program exports (`parse_stack_outputs` holds a stack
    to them). A stack deployed by an older version may lack outputs added since (`billing`, `maxNumSeqs`,
    the gated rollout's, `benchJob`'s `project`) or hold one in an older shape, and must still be read:
    `verify health` reaches its endpoint, the MCP server shows what it exports. So in this reading:

    - every output may be missing and then reads as None, except `candidatePercent`, which reads as 0 as in
      the contract (no candidate share recorded);
    - an output whose value does not have the contract's type reads as missing too, and ``problem`` says
      why (pydantic's message), so a reader that needs it names the real fault;
    - `billing` is kept as exported (a flat mapping): serving/pricing.py checks its shape where it prices it;
    - outputs this reading does not name are ignored here (the gateway keeps every value for display).

    A reader checks the outputs it needs (``problem`` is "Field required" for one that is absent) or takes a
    contract model from the reading (``as_model``), whose validation names each missing or bad output.
    Each field is one a platform model declares, with the same name (tests/deploy/test_stack_outputs.py).
    """

    model_config = _SharedOutputs.model_config

    # Every platform's outputs, in the platform models' order; what readers rely on is noted.
    endpoint: str | None = None  # verify.endpoint needs these three; every version exported them
    served_model_name: str | None = None
    platform: Literal["cloud-run", "tpu", "gke"] | None = None
    auth_kind: Literal["google-id-token", "api-key", "none"] | None = None
    accelerator: str | None = None
    region: str | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    image: str | None = None
    model_bucket: str | None = None
    service_account: str | None = None
    vllm_args: list[str] | None = None
    import_jobs: dict[str, str] | None = None
    adapter_routes: str | None = None  # verify adapters promote: where the route table is
    # Cloud Run's service, its rollout (CloudRunRolloutOutputs) and its load-generator job.
    service_name: str | None = None
    # As exported (a flat object, priced by serving/pricing.py, which checks its shape where it prices it).
    billing: dict[str, str | int | float | bool | None] | None = None
    concurrency: int | None = None
    max_instances: int | None = None
    bench_job: BenchJobOutputs | None = None
    rollout: Literal["gated", "direct"] | None = None
    cloud_run_service: str | None = None
    candidate_revision: str | None = None
    candidate_url: str | None = None
    serving_revision: str | None = None
    previous_revision: str | None = None
    candidate_percent: int = Field(default=0, ge=0, le=100)
    # TPU and GKE.
    api_key_secret: str | None = None
    zone: str | None = None
    accelerator_type: str | None = None
    provisioning_model: Literal["flex-start", "spot", "guaranteed"] | None = None
    queued_resource_name: str | None = None
    node_id: str | None = None
    cluster: str | None = None
    cluster_endpoint: str | None = None
    namespace: str | None = None
    deployment: str | None = None
    hpa: str | None = None
    node_pool: str | None = None
    zones: list[str] | None = None
    port_forward: str | None = None
    # A GKE fleet behind the inference gateway.
    gateway: str | None = None
    gateway_endpoint: str | None = None
    inference_pools: list[str] | None = None
    # A gated GKE fleet's tracks.
    serving_track: str | None = None
    candidate_track: str | None = None
    candidate_endpoint: str | None = None
    candidate_port_forward: str | None = None

    # Exported values this reading could not take, by output name: what `problem` and `as_model` report.
    _malformed: dict[str, tuple[object, str]] = PrivateAttr(default_factory=dict)

    @classmethod
    def read(cls, raw: Mapping[str, object]) -> DeployedOutputs:
        """Read exported outputs (`pulumi stack output --json`'s object); never raises for a missing or bad one."""
        malformed: dict[str, tuple[object, str]] = {}
        try:
            reading = cls.model_validate(raw)
        except ValidationError as exc:
            for error in exc.errors():
                name = str(error["loc"][0])
                where = ".".join(str(part) for part in error["loc"])
                malformed.setdefault(name, (raw.get(name), f"{where}: {error['msg']}"))
            reading = cls.model_validate({key: value for key, value in raw.items() if key not in malformed})
        reading._malformed = malformed
        return reading

    @property
    def unreadable(self) -> dict[str, str]:
        """Each exported output this reading could not take (its value has the wrong type): name -> why."""
        return {name: why for name, (_, why) in self._malformed.items()}

    def problem(self, name: str) -> str | None:
        """Why the output ``name`` (camelCase) reads as missing (`<name>: Field required`, or its value's
        fault); None when the reading holds it."""
        if name in self._malformed:
            return self._malformed[name][1]
        return f"{name}: Field required" if getattr(self, to_snake(name)) is None else None

    def as_model(self, model: type[_Model]) -> _Model:
        """The reading as one of the contract's models (e.g. CloudRunRolloutOutputs): pydantic.ValidationError
        names each output that model needs and the stack does not export, or exports malformed."""
        wanted = set(model.model_fields)
        values = self.model_dump(by_alias=True, exclude_none=True, include=wanted & set(type(self).model_fields))
        values.update({name: value for name, (value, _) in self._malformed.items() if to_snake(name) in wanted})
        return model.model_validate(values)


def contract_problems(raw: object) -> list[str]:
    """Each output the contract misses or finds malformed in ``raw`` (e.g. a stack deployed by an older
    version); empty when the outputs are a whole platform's. For readers that show outputs as they are."""
    try:
        parse_stack_outputs(raw)
    except ValidationError as exc:
        return [
            f"{'.'.join(str(part) for part in error['loc']) or 'outputs'}: {error['msg']}" for error in exc.errors()
        ]
    return []


def output_names(model: type[BaseModel]) -> list[str]:
    """The exported names (camelCase) of one platform's outputs, in declaration order."""
    return [field.alias or name for name, field in model.model_fields.items()]


def markdown_table() -> str:
    """The docs table: each output once, with the platforms that export it and what it means."""
    shared = _SharedOutputs.model_fields
    rows = ["| output | platforms | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{field.alias}` | all | {field.description} |" for field in shared.values()]
    for model in PLATFORM_OUTPUTS:
        for name, field in model.model_fields.items():
            if name not in shared:
                rows.append(f"| `{field.alias}` | {model.LABEL} | {field.description} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(
        prog="python -m serving.outputs",
        description="Print the stack outputs' table for the docs (Markdown): each output, its platforms, its meaning.",
    ).parse_args()
    print(markdown_table(), end="")
