"""A Cloud Run service that runs vLLM on one GPU per instance, reading weights from a GCS FUSE mount.

Why a component: the combination that works (GPU limit plus node selector, instance-based billing,
startup CPU boost, gen2 with a uid/gid-mapped read-only mount, a startup probe as long as the model
load, concurrency no lower than vLLM's batch, a private invoker list) was rebuilt by hand for every
deployment and broke in a different place each time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from serving.accelerators import CloudRunGpu
from serving.cloud_run_rules import concurrency_problem, gpu_sizing_problems, region_problem
from serving.vllm_args import check_serve_args

_INGRESS = {
    "all": "INGRESS_TRAFFIC_ALL",
    "internal": "INGRESS_TRAFFIC_INTERNAL_ONLY",
    "internal-and-cloud-load-balancing": "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER",
}
MODEL_VOLUME = "models"
CONTAINER_NAME = "vllm"


Ingress = Literal["all", "internal", "internal-and-cloud-load-balancing"]


@dataclass(frozen=True)
class HttpProbe:
    """An HTTP probe on vLLM's /health, in Cloud Run's units."""

    initial_delay_seconds: int
    period_seconds: int
    timeout_seconds: int
    failure_threshold: int


@dataclass(frozen=True)
class ModelMount:
    """The model bucket, mounted read-only through Cloud Storage FUSE."""

    bucket_name: pulumi.Input[str]
    path: str = "/mnt/models"
    # gcsfuse mount options, e.g. uid=1001, gid=1001, implicit-dirs.
    options: Sequence[str] = ()


# Cloud Run's liveness default for vLLM: /health every 30 s, three misses restart the instance.
DEFAULT_LIVENESS = HttpProbe(initial_delay_seconds=0, period_seconds=30, timeout_seconds=10, failure_threshold=3)


@dataclass(frozen=True)
class VllmGpuServiceArgs:
    """Everything the service needs; plain values are validated here, Outputs are wired as given."""

    region: str
    gpu: CloudRunGpu
    # A pinned reference (a Docker Hub tag through the stack's mirror, or a derived image's digest).
    image: pulumi.Input[str]
    # The full `vllm serve` argument list, model path first.
    serve_args: Sequence[str]
    max_num_seqs: int
    cpu: int
    memory_gib: int
    mount: ModelMount
    service_account_email: pulumi.Input[str]
    # Long enough to cover the model load: Cloud Run kills an instance whose startup probe gives up.
    startup_probe: HttpProbe
    liveness_probe: HttpProbe = DEFAULT_LIVENESS
    # Requests one instance admits at once; None means max_num_seqs, so Cloud Run never caps vLLM's batch.
    concurrency: int | None = None
    min_instances: int = 0
    max_instances: int = 1
    request_timeout_seconds: int = 3600
    ingress: Ingress = "all"
    # Who may call the service (IAM members); nobody by default.
    invokers: Sequence[str] = ()
    gpu_zonal_redundancy_disabled: bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    port: int = 8000
    deletion_protection: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # What must finish before the service rolls out (the weight imports): a revision that starts before
    # its weights exist fails its startup probe.
    wait_for: Sequence[pulumi.Resource] = ()

    def __post_init__(self) -> None:
        problems = [
            region_problem(self.gpu, self.region, key="VllmGpuServiceArgs.region"),
            concurrency_problem(
                concurrency=self.admitted, max_num_seqs=self.max_num_seqs, key="VllmGpuServiceArgs.concurrency"
            ),
            *gpu_sizing_problems(
                self.gpu,
                cpu=self.cpu,
                memory_gib=self.memory_gib,
                cpu_key="VllmGpuServiceArgs.cpu",
                memory_key="VllmGpuServiceArgs.memory_gib",
            ),
            *(f"VllmGpuServiceArgs.serve_args: {p}" for p in check_serve_args(list(self.serve_args))),
        ]
        if not self.serve_args or not self.serve_args[0].startswith(self.mount.path + "/"):
            problems.append(
                f"VllmGpuServiceArgs.serve_args: the model path must come first and live under the model mount "
                f"{self.mount.path}/"
            )
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))

    @property
    def admitted(self) -> int:
        """Per-instance request concurrency: the given one, or else vLLM's batch (never below it)."""
        return self.concurrency or self.max_num_seqs


class VllmGpuService(pulumi.ComponentResource):
    """vLLM on Cloud Run with one GPU per instance.

    Owns: the Cloud Run service and its invoker bindings. Does not own: the bucket or the identity.
    """

    url: pulumi.Output[str]
    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: VllmGpuServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gemma:cloudrun:VllmGpuService", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        port = args.port
        service = gcp.cloudrunv2.Service(
            f"{name}-service",
            location=args.region,
            ingress=_INGRESS[args.ingress],
            deletion_protection=args.deletion_protection,
            invoker_iam_disabled=False,
            labels=dict(args.labels),
            template=gcp.cloudrunv2.ServiceTemplateArgs(
                service_account=args.service_account_email,
                execution_environment="EXECUTION_ENVIRONMENT_GEN2",
                timeout=f"{args.request_timeout_seconds}s",
                max_instance_request_concurrency=args.admitted,
                scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(
                    min_instance_count=args.min_instances,
                    max_instance_count=args.max_instances,
                ),
                node_selector=gcp.cloudrunv2.ServiceTemplateNodeSelectorArgs(accelerator=args.gpu.node_selector),
                gpu_zonal_redundancy_disabled=args.gpu_zonal_redundancy_disabled,
                labels=dict(args.labels),
                volumes=[
                    gcp.cloudrunv2.ServiceTemplateVolumeArgs(
                        name=MODEL_VOLUME,
                        gcs=gcp.cloudrunv2.ServiceTemplateVolumeGcsArgs(
                            bucket=args.mount.bucket_name,
                            read_only=True,
                            mount_options=list(args.mount.options),
                        ),
                    )
                ],
                containers=[
                    gcp.cloudrunv2.ServiceTemplateContainerArgs(
                        name=CONTAINER_NAME,
                        image=args.image,
                        args=list(args.serve_args),
                        envs=[
                            gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(name=key, value=value)
                            for key, value in sorted(args.env.items())
                        ],
                        ports=gcp.cloudrunv2.ServiceTemplateContainerPortsArgs(container_port=port, name="http1"),
                        resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(
                            limits={
                                "cpu": str(args.cpu),
                                "memory": f"{args.memory_gib}Gi",
                                "nvidia.com/gpu": "1",
                            },
                            cpu_idle=False,
                            startup_cpu_boost=True,
                        ),
                        startup_probe=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeArgs(
                            http_get=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs(
                                path="/health", port=port
                            ),
                            initial_delay_seconds=args.startup_probe.initial_delay_seconds,
                            period_seconds=args.startup_probe.period_seconds,
                            timeout_seconds=args.startup_probe.timeout_seconds,
                            failure_threshold=args.startup_probe.failure_threshold,
                        ),
                        liveness_probe=gcp.cloudrunv2.ServiceTemplateContainerLivenessProbeArgs(
                            http_get=gcp.cloudrunv2.ServiceTemplateContainerLivenessProbeHttpGetArgs(
                                path="/health", port=port
                            ),
                            initial_delay_seconds=args.liveness_probe.initial_delay_seconds,
                            period_seconds=args.liveness_probe.period_seconds,
                            timeout_seconds=args.liveness_probe.timeout_seconds,
                            failure_threshold=args.liveness_probe.failure_threshold,
                        ),
                        volume_mounts=[
                            gcp.cloudrunv2.ServiceTemplateContainerVolumeMountArgs(
                                name=MODEL_VOLUME, mount_path=args.mount.path
                            )
                        ],
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
        )
        for member in args.invokers:
            gcp.cloudrunv2.ServiceIamMember(
                f"{name}-invoker-{_member_slug(member)}",
                name=service.name,
                location=args.region,
                role="roles/run.invoker",
                member=member,
                opts=child,
            )
        self.url = service.uri
        self.service_name = service.name
        self.register_outputs({"url": self.url, "service_name": self.service_name})


def _member_slug(member: str) -> str:
    """A stable, readable, unique child-name fragment for an IAM member (kind, account name, short hash)."""
    kind, _, identity = member.partition(":")
    local = identity.split("@", 1)[0]
    slug = "".join(ch if ch.isalnum() else "-" for ch in f"{kind}-{local}".lower()).strip("-")
    digest = hashlib.sha256(member.encode()).hexdigest()[:6]
    return f"{slug[:40]}-{digest}"
