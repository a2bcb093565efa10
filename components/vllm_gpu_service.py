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

import pulumi
import pulumi_gcp as gcp

from stacks.accelerators import CloudRunGpu
from stacks.cloud_run import CloudRunSettings
from stacks.cloud_run_limits import gpu_service_problems
from stacks.gpu_rules import concurrency_problem, gpu_sizing_problems, region_problem
from stacks.vllm_args import check_serve_args

_INGRESS = {
    "all": "INGRESS_TRAFFIC_ALL",
    "internal": "INGRESS_TRAFFIC_INTERNAL_ONLY",
    "internal-and-cloud-load-balancing": "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER",
}
MODEL_VOLUME = "models"
CONTAINER_NAME = "vllm"


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
    run: CloudRunSettings
    bucket_name: pulumi.Input[str]
    service_account_email: pulumi.Input[str]
    labels: Mapping[str, str] = field(default_factory=dict)
    # What must finish before the service rolls out (the weight imports): a revision that starts before
    # its weights exist fails its startup probe.
    wait_for: Sequence[pulumi.Resource] = ()

    def __post_init__(self) -> None:
        problems = [
            region_problem(self.gpu, self.region, key="VllmGpuServiceArgs.region"),
            concurrency_problem(
                concurrency=self.concurrency, max_num_seqs=self.max_num_seqs, key="VllmGpuServiceArgs.run.concurrency"
            ),
            *gpu_sizing_problems(
                self.gpu,
                cpu=self.run.cpu,
                memory_gib=self.run.memory_gib,
                cpu_key="VllmGpuServiceArgs.run.cpu",
                memory_key="VllmGpuServiceArgs.run.memory_gib",
            ),
            *(f"VllmGpuServiceArgs.serve_args: {p}" for p in check_serve_args(list(self.serve_args))),
            *gpu_service_problems(
                self.gpu,
                self.run,
                max_num_seqs=self.max_num_seqs,
                prefix="VllmGpuServiceArgs.run.",
                seqs_key="VllmGpuServiceArgs.max_num_seqs",
            ),
        ]
        if not self.serve_args or not self.serve_args[0].startswith(self.run.mount.mount_path + "/"):
            problems.append(
                f"VllmGpuServiceArgs.serve_args: the model path must come first and live under the model mount "
                f"{self.run.mount.mount_path}/"
            )
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))

    @property
    def concurrency(self) -> int:
        """Per-instance request concurrency: the stack's, or else vLLM's batch (never below it)."""
        return self.run.concurrency or self.max_num_seqs


class VllmGpuService(pulumi.ComponentResource):
    """vLLM on Cloud Run with one GPU per instance.

    Owns: the Cloud Run service and its invoker bindings. Does not own: the bucket or the identity.
    """

    url: pulumi.Output[str]
    service_name: pulumi.Output[str]

    def __init__(self, name: str, args: VllmGpuServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gemma:cloudrun:VllmGpuService", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        run = args.run
        port = run.port
        service = gcp.cloudrunv2.Service(
            f"{name}-service",
            location=args.region,
            ingress=_INGRESS[run.ingress],
            deletion_protection=run.deletion_protection,
            invoker_iam_disabled=False,
            labels=dict(args.labels),
            template=gcp.cloudrunv2.ServiceTemplateArgs(
                service_account=args.service_account_email,
                execution_environment="EXECUTION_ENVIRONMENT_GEN2",
                timeout=f"{run.request_timeout_seconds}s",
                max_instance_request_concurrency=args.concurrency,
                scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(
                    min_instance_count=run.min_instances,
                    max_instance_count=run.max_instances,
                ),
                node_selector=gcp.cloudrunv2.ServiceTemplateNodeSelectorArgs(accelerator=args.gpu.node_selector),
                gpu_zonal_redundancy_disabled=run.gpu_zonal_redundancy_disabled,
                labels=dict(args.labels),
                volumes=[
                    gcp.cloudrunv2.ServiceTemplateVolumeArgs(
                        name=MODEL_VOLUME,
                        gcs=gcp.cloudrunv2.ServiceTemplateVolumeGcsArgs(
                            bucket=args.bucket_name,
                            read_only=True,
                            mount_options=run.mount.mount_options(),
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
                            for key, value in sorted(run.env.items())
                        ],
                        ports=gcp.cloudrunv2.ServiceTemplateContainerPortsArgs(container_port=port, name="http1"),
                        resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(
                            limits={
                                "cpu": str(run.cpu),
                                "memory": f"{run.memory_gib}Gi",
                                "nvidia.com/gpu": "1",
                            },
                            cpu_idle=False,
                            startup_cpu_boost=True,
                        ),
                        startup_probe=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeArgs(
                            http_get=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs(
                                path="/health", port=port
                            ),
                            initial_delay_seconds=run.startup_probe.initial_delay_seconds,
                            period_seconds=run.startup_probe.period_seconds,
                            timeout_seconds=run.startup_probe.timeout_seconds,
                            failure_threshold=run.startup_failure_threshold(),
                        ),
                        liveness_probe=gcp.cloudrunv2.ServiceTemplateContainerLivenessProbeArgs(
                            http_get=gcp.cloudrunv2.ServiceTemplateContainerLivenessProbeHttpGetArgs(
                                path="/health", port=port
                            ),
                            initial_delay_seconds=run.liveness_probe.initial_delay_seconds,
                            period_seconds=run.liveness_probe.period_seconds,
                            timeout_seconds=run.liveness_probe.timeout_seconds,
                            failure_threshold=run.liveness_failure_threshold(),
                        ),
                        volume_mounts=[
                            gcp.cloudrunv2.ServiceTemplateContainerVolumeMountArgs(
                                name=MODEL_VOLUME, mount_path=run.mount.mount_path
                            )
                        ],
                    )
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
        )
        for member in run.invokers:
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
