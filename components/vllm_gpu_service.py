"""A Cloud Run service that runs vLLM on one GPU per instance, reading weights from a GCS FUSE mount or gs://.

Why a component: the combination that works (GPU limit plus node selector, instance-based billing,
startup CPU boost, gen2 with a uid/gid-mapped read-only mount, a startup probe as long as the model
load, concurrency no lower than vLLM's batch, a private invoker list) was rebuilt by hand for every
deployment and broke in a different place each time.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pulumi

from components.monitoring.sidecar import (
    MetricsSidecar,
    sidecar_containers,
    sidecar_volumes,
    sizing_problem,
    vllm_limits,
)
from components.weight_access import (
    CacheMount,
    StreamedWeights,
    cache_volume_mounts,
    cache_volumes,
    model_volume_mounts,
    model_volumes,
    vpc_access,
)
from components.wire import cloud_run, gcp
from serving.cloud_run_limits import LimitKeys, instance_limit_problems, startup_window_problem
from serving.cloud_run_rules import concurrency_problem, gpu_sizing_problems, region_problem, request_concurrency
from serving.compile_cache import GPU_CACHE_ENV
from serving.container import MODEL_ROOT, VLLM_PORT
from serving.naming import CANDIDATE_TAG, GPU_SERVING_CONTAINER, TypeToken
from serving.shapes import ResolvedShape, resolved_shapes
from serving.vllm_args import check_serve_args

if TYPE_CHECKING:
    from pulumi_gcp.cloudrunv2._inputs import ServiceTemplateArgsDict, ServiceTrafficArgsDict

_INGRESS = {
    "all": "INGRESS_TRAFFIC_ALL",
    "internal": "INGRESS_TRAFFIC_INTERNAL_ONLY",
    "internal-and-cloud-load-balancing": "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER",
}
_BY_REVISION = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
_LATEST = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
# Source: https://cloud.google.com/run/docs/reference/rest/v2/projects.locations.services/create (serviceId:
# lowercase letters, digits and hyphens, starting with a letter, at most 49 characters). The revision name
# `<service>-<10 hex>` then stays within a revision name's 63.
_PUBLIC_MEMBERS = frozenset({"allUsers", "allAuthenticatedUsers"})
_SERVICE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,47}[a-z0-9])?$")
_REVISION_HASH_CHARS = 10


@dataclass(frozen=True)
class GatedRollout:
    """New revisions start as the `candidate` tag with ``candidate_percent`` of the traffic (0 after `pulumi up`).

    ``serving_revision`` keeps the rest; None means there is none yet (the stack's first rollout), and then
    the candidate must serve 100% or the service would serve nothing. ``previous_revision`` is only carried
    into the outputs, for `verify promote --rollback`.
    """

    serving_revision: pulumi.Input[str | None] = None
    previous_revision: pulumi.Input[str | None] = None
    candidate_percent: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.candidate_percent <= 99:
            raise ValueError(
                f"GatedRollout.candidate_percent must be 0 to 99 (promotion to 100% names the candidate as "
                f"serving_revision), got {self.candidate_percent}"
            )


@dataclass(frozen=True)
class DirectRollout:
    """Every new revision takes all traffic as soon as it is ready (Cloud Run's own default)."""


Rollout = GatedRollout | DirectRollout


# Source: https://cloud.google.com/run/docs/reference/rest/v2/Container#probe (initialDelaySeconds 0-240,
# periodSeconds and timeoutSeconds 1-240, timeoutSeconds smaller than periodSeconds).
_PROBE_MAX_SECONDS = 240
_ARGS = "VllmGpuServiceArgs"


@dataclass(frozen=True)
class HttpProbe:
    """An HTTP probe on vLLM's /health with its failure threshold resolved (the caller sizes it to the load)."""

    failure_threshold: int
    initial_delay_seconds: int = 0
    period_seconds: int = 10
    timeout_seconds: int = 5

    def problems(self, key: str) -> list[str]:
        """What Cloud Run would refuse in this probe, each under ``key``."""
        problems = []
        if not 0 <= self.initial_delay_seconds <= _PROBE_MAX_SECONDS:
            problems.append(
                f"{key}.initial_delay_seconds: {self.initial_delay_seconds}; allowed: 0-{_PROBE_MAX_SECONDS}"
            )
        for field_name, value in (("period_seconds", self.period_seconds), ("timeout_seconds", self.timeout_seconds)):
            if not 1 <= value <= _PROBE_MAX_SECONDS:
                problems.append(f"{key}.{field_name}: {value}; allowed: 1-{_PROBE_MAX_SECONDS}")
        if self.timeout_seconds >= self.period_seconds:
            problems.append(
                f"{key}.timeout_seconds: {self.timeout_seconds} is not smaller than period_seconds "
                f"({self.period_seconds}); Cloud Run rejects such a probe; allowed: 1-{self.period_seconds - 1}"
            )
        if self.failure_threshold < 1:
            problems.append(f"{key}.failure_threshold: {self.failure_threshold}; allowed: 1 or more")
        return problems


@dataclass(frozen=True)
class ModelMount:
    """Where the model bucket appears in the container (Cloud Storage FUSE) and its gcsfuse mount options."""

    mount_path: str = MODEL_ROOT
    # gcsfuse options without dashes; uid/gid map the files to the container's user (vLLM reads, never writes).
    options: Sequence[str] = ("uid=1001", "gid=1001")


@dataclass(frozen=True)
class VllmGpuServiceArgs:
    """Everything the service needs; plain values are validated here, Outputs are wired as given."""

    region: str
    # The GPU each instance attaches, as its Cloud Run shape (serving.shapes.the_cloud_run_shape): its minimum,
    # maximum, regions and node selector are what the checks below and the template read.
    gpu: ResolvedShape
    # A pinned reference (a Docker Hub tag through the stack's mirror, or a derived image's digest).
    image: pulumi.Input[str]
    # The full `vllm serve` argument list, model path first.
    serve_args: Sequence[str]
    max_num_seqs: int
    cpu: int
    memory_gib: int
    bucket_name: pulumi.Input[str]
    service_account_email: pulumi.Input[str]
    # The startup probe must cover the model load: failure_threshold x period_seconds (at most 1800 s on GPU).
    startup_probe: HttpProbe = field(
        default_factory=lambda: HttpProbe(failure_threshold=117, initial_delay_seconds=30, period_seconds=10)
    )
    liveness_probe: HttpProbe = field(
        default_factory=lambda: HttpProbe(failure_threshold=3, period_seconds=30, timeout_seconds=10)
    )
    # Requests one instance admits at once; None means max_num_seqs, so Cloud Run never caps vLLM's batch.
    concurrency: int | None = None
    min_instances: int = 0
    max_instances: int = 1
    request_timeout_seconds: int = 3600
    mount: ModelMount = field(default_factory=ModelMount)
    # Set when vLLM streams its weights from gs:// (no mount; Direct VPC egress): components/weight_access.py.
    streamed: StreamedWeights | None = None
    # Set when the compile cache is kept: the bucket's cache folder, read-write at VLLM_CACHE_ROOT.
    compile_cache: CacheMount | None = None
    port: int = VLLM_PORT
    env: Mapping[str, str] = field(default_factory=dict)
    # Env vars set to `gs://<the model bucket>/<object>`: an object the serving process reads through Cloud
    # Storage's API, fresh, where the mount would cache it (the adapter route table, serving/adapter_versions.py).
    bucket_env: Mapping[str, str] = field(default_factory=dict)
    # The container command; empty: the image's entrypoint (`vllm serve`). Set when adapters are served: the
    # launcher that installs the guard on vLLM's adapter admin routes (serving/lora.py).
    command: Sequence[str] = ()
    # Who may call the service (IAM members), each bound on its own; nobody else.
    invokers: Sequence[str] = ()
    ingress: Literal["all", "internal", "internal-and-cloud-load-balancing"] = "all"
    # Cloud Run's default (zonal redundancy on) draws on a GPU quota projects rarely have.
    gpu_zonal_redundancy_disabled: bool = True
    deletion_protection: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # What must finish before the service rolls out (the weight imports): a revision that starts before
    # its weights exist fails its startup probe.
    wait_for: Sequence[pulumi.Resource] = ()
    # Gated by default: a new revision proves itself (gemma-verify promote) before it serves users.
    rollout: Rollout = field(default_factory=GatedRollout)
    # The Cloud Run service's name (revision names derive from it); default: the component's name.
    service_name: str | None = None
    # The Managed Prometheus sidecar scraping vLLM's /metrics (components/monitoring/sidecar.py); None: none.
    metrics_sidecar: MetricsSidecar | None = None

    def __post_init__(self) -> None:
        if self.gpu.platform != "cloud-run":  # every check below reads the Cloud Run facts of the shape
            offered = ", ".join(shape.name for shape in resolved_shapes(platform="cloud-run"))
            raise ValueError(
                f"{_ARGS}.gpu: {self.gpu.name!r} is a {self.gpu.platform} shape; allowed: a Cloud Run shape ({offered})"
            )
        problems = [
            region_problem(self.gpu, self.region, key=f"{_ARGS}.region"),
            concurrency_problem(
                concurrency=self.request_concurrency, max_num_seqs=self.max_num_seqs, key=f"{_ARGS}.concurrency"
            ),
            *gpu_sizing_problems(
                self.gpu,
                cpu=self.cpu,
                memory_gib=self.memory_gib,
                cpu_key=f"{_ARGS}.cpu",
                memory_key=f"{_ARGS}.memory_gib",
            ),
            *(f"{_ARGS}.serve_args: {p}" for p in check_serve_args(list(self.serve_args))),
            *instance_limit_problems(
                self.gpu,
                cpu=self.cpu,
                memory_gib=self.memory_gib,
                max_instances=self.max_instances,
                env=self.env,
                max_num_seqs=self.max_num_seqs,
                keys=LimitKeys(
                    cpu=f"{_ARGS}.cpu",
                    memory_gib=f"{_ARGS}.memory_gib",
                    max_instances=f"{_ARGS}.max_instances",
                    env=f"{_ARGS}.env",
                    seqs=f"{_ARGS}.max_num_seqs",
                ),
            ),
            startup_window_problem(
                failure_threshold=self.startup_probe.failure_threshold,
                period_seconds=self.startup_probe.period_seconds,
                key=f"{_ARGS}.startup_probe.failure_threshold",
            ),
            *self.startup_probe.problems(f"{_ARGS}.startup_probe"),
            *self.liveness_probe.problems(f"{_ARGS}.liveness_probe"),
            *self._scale_and_access_problems(),
        ]
        if not any(p and p.startswith((f"{_ARGS}.cpu", f"{_ARGS}.memory_gib")) for p in problems):
            # Only a size inside Cloud Run's bounds is worth splitting between the containers.
            problems.append(
                sizing_problem(
                    self.gpu,
                    self.cpu,
                    self.memory_gib,
                    self.metrics_sidecar,
                    cpu_key=f"{_ARGS}.cpu",
                    memory_key=f"{_ARGS}.memory_gib",
                )
            )
        root = "gs://" if self.streamed is not None else self.mount.mount_path + "/"
        if not self.serve_args or not self.serve_args[0].startswith(root):
            where = "be a gs:// path (streamed)" if self.streamed is not None else f"live under the model mount {root}"
            problems.append(f"{_ARGS}.serve_args: the model path must come first and {where}")
        if self.streamed is not None:
            problems += self.streamed.problems(f"{_ARGS}.streamed")
        if self.compile_cache is not None:
            if GPU_CACHE_ENV in self.env:
                problems.append(f"{_ARGS}.env: {GPU_CACHE_ENV} is set by compile_cache; remove it from env")
            if self.compile_cache.mount_path.rstrip("/") == self.mount.mount_path.rstrip("/"):
                problems.append(f"{_ARGS}.compile_cache.mount_path: the model mount's path; use another")
        if self.service_name is not None and not _SERVICE_NAME.match(self.service_name):
            problems.append(f"{_ARGS}.service_name: {_service_name_rule(self.service_name)}")
        found = [problem for problem in problems if problem]
        if found:
            raise ValueError("; ".join(found))

    def _scale_and_access_problems(self) -> list[str]:
        problems = []
        if not 0 <= self.min_instances <= self.max_instances or self.max_instances < 1:
            problems.append(
                f"{_ARGS}.min_instances/max_instances: {self.min_instances}/{self.max_instances}; allowed: "
                "0 <= min_instances <= max_instances, max_instances at least 1"
            )
        if self.ingress not in _INGRESS:
            problems.append(f"{_ARGS}.ingress: {self.ingress!r}; allowed: {', '.join(_INGRESS)}")
        problems += [
            f"{_ARGS}.invokers: {member!r} would make the service public; name users, groups or service accounts"
            for member in self.invokers
            if member in _PUBLIC_MEMBERS
        ]
        return problems

    @property
    def request_concurrency(self) -> int:
        """Per-instance request concurrency: the given one, or else vLLM's batch (never below it)."""
        return request_concurrency(self.concurrency, max_num_seqs=self.max_num_seqs)


class VllmGpuService(pulumi.ComponentResource):
    """vLLM on Cloud Run with one GPU per instance.

    Owns: the Cloud Run service and its invoker bindings. Does not own: the bucket or the identity.
    """

    url: pulumi.Output[str]
    service_name: pulumi.Output[str]
    # `projects/<p>/locations/<region>/services/<name>`, the Cloud Run Admin API's name for it.
    resource_name: pulumi.Output[str]
    # The revision the current template creates: `<service>-<hash of the template>`.
    candidate_revision: pulumi.Output[str]
    # Gated: the candidate tag's URL (https://candidate---<service host>); direct: None.
    candidate_url: pulumi.Output[str | None]
    # The revision that serves the traffic the candidate does not get.
    serving_revision: pulumi.Output[str]
    previous_revision: pulumi.Output[str | None]

    def __init__(self, name: str, args: VllmGpuServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.VLLM_GPU_SERVICE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        service_name = args.service_name or name
        if not _SERVICE_NAME.match(service_name):
            raise ValueError(f"VllmGpuService name {service_name!r}: {_service_name_rule(service_name)}")
        template_inputs = _template_inputs(args)
        # The revision name is the service's name plus a hash of everything the revision is made of, so the
        # same template always names the same revision and traffic can name it before it exists.
        revision = pulumi.Output.from_input(cloud_run.template(**template_inputs)).apply(
            lambda template: f"{service_name}-{_template_hash(template)}"
        )
        rollout = args.rollout
        if isinstance(rollout, GatedRollout):
            state_serving: pulumi.Output[str | None] = pulumi.Output.from_input(rollout.serving_revision)
            percent = rollout.candidate_percent
            traffics: pulumi.Input[Sequence[pulumi.Input[ServiceTrafficArgsDict]]] = state_serving.apply(
                lambda serving_revision: gated_traffic(revision, serving_revision, percent)
            )
            # Known as soon as the state (or promotion) names it, even while the candidate's name is computed.
            serving: pulumi.Output[str] = state_serving.apply(
                lambda serving_revision: serving_revision if serving_revision is not None else revision
            )
            previous: pulumi.Output[str | None] = pulumi.Output.from_input(rollout.previous_revision)
        else:
            serving = revision
            traffics = [cloud_run.traffic(type=_LATEST, percent=100)]
            previous = pulumi.Output.from_input(None)
        named_template: ServiceTemplateArgsDict = {**template_inputs, "revision": revision}
        service = gcp.CloudRunService(
            f"{name}-service",
            name=service_name,
            location=args.region,
            ingress=_INGRESS[args.ingress],
            deletion_protection=args.deletion_protection,
            invoker_iam_disabled=False,
            labels=dict(args.labels),
            template=cloud_run.template(**named_template),
            traffics=traffics,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.wait_for)),
        )
        for member in args.invokers:
            gcp.CloudRunServiceIamMember(
                f"{name}-invoker-{_member_slug(member)}",
                name=service.name,
                location=args.region,
                role="roles/run.invoker",
                member=member,
                opts=child,
            )
        self.url = service.uri
        self.service_name = service.name
        self.resource_name = service.id
        self.candidate_revision = revision
        self.candidate_url = (
            service.traffic_statuses.apply(_candidate_uri)
            if isinstance(rollout, GatedRollout)
            else pulumi.Output.from_input(None)
        )
        self.serving_revision = serving
        self.previous_revision = previous
        self.register_outputs(
            {
                "url": self.url,
                "service_name": self.service_name,
                "resource_name": self.resource_name,
                "candidate_revision": self.candidate_revision,
                "candidate_url": self.candidate_url,
                "serving_revision": self.serving_revision,
                "previous_revision": self.previous_revision,
            }
        )


def gated_traffic(
    candidate: pulumi.Input[str], serving: str | None, candidate_percent: int
) -> list[ServiceTrafficArgsDict]:
    """The serving revision with its share and the candidate under its tag with the rest, both by name.

    With no serving revision yet (the stack's first rollout) the candidate takes 100%: otherwise the
    service would serve nothing. When the candidate is the serving revision (a template that did not
    change, or one just promoted), the two entries name the same revision, which Cloud Run (Knative's
    traffic block) allows, as `kn service update --tag-revision` writes for a revision that already has a
    share: the tag keeps its URL, and the split never depends on a name only known once the template resolves.
    """
    candidate_entry = cloud_run.traffic(
        type=_BY_REVISION, revision=candidate, percent=100 if serving is None else candidate_percent, tag=CANDIDATE_TAG
    )
    if serving is None:
        return [candidate_entry]
    serving_entry = cloud_run.traffic(type=_BY_REVISION, revision=serving, percent=100 - candidate_percent)
    return [serving_entry, candidate_entry]


def _template_inputs(args: VllmGpuServiceArgs) -> ServiceTemplateArgsDict:
    """The revision template's fields (everything but its name), built once for the service and its hash."""
    port = args.port
    return {
        "service_account": args.service_account_email,
        "execution_environment": "EXECUTION_ENVIRONMENT_GEN2",
        "timeout": f"{args.request_timeout_seconds}s",
        "max_instance_request_concurrency": args.request_concurrency,
        "scaling": cloud_run.scaling(
            min_instance_count=args.min_instances,
            max_instance_count=args.max_instances,
        ),
        "node_selector": cloud_run.node_selector(accelerator=args.gpu.cloud_run_selector),
        "gpu_zonal_redundancy_disabled": args.gpu_zonal_redundancy_disabled,
        "labels": dict(args.labels),
        "volumes": [
            *(model_volumes(args.bucket_name, list(args.mount.options), args.streamed) or []),
            *cache_volumes(args.bucket_name, args.compile_cache),
            *sidecar_volumes(args.metrics_sidecar),
        ]
        or None,
        "vpc_access": vpc_access(args.streamed),
        "containers": [
            cloud_run.container(
                name=GPU_SERVING_CONTAINER,
                image=args.image,
                commands=list(args.command) or None,
                args=list(args.serve_args),
                envs=[
                    *(
                        cloud_run.env(name=key, value=value)
                        for key, value in sorted({**args.env, **_cache_env(args.compile_cache)}.items())
                    ),
                    *(
                        cloud_run.env(name=key, value=pulumi.Output.concat("gs://", args.bucket_name, "/", path))
                        for key, path in sorted(args.bucket_env.items())
                    ),
                ],
                ports=cloud_run.ports(container_port=port, name="http1"),
                resources=cloud_run.resources(
                    limits=vllm_limits(args.gpu, args.cpu, args.memory_gib, args.metrics_sidecar),
                    cpu_idle=False,
                    startup_cpu_boost=True,
                ),
                startup_probe=cloud_run.startup_probe(
                    http_get=cloud_run.startup_http_get(path="/health", port=port),
                    initial_delay_seconds=args.startup_probe.initial_delay_seconds,
                    period_seconds=args.startup_probe.period_seconds,
                    timeout_seconds=args.startup_probe.timeout_seconds,
                    failure_threshold=args.startup_probe.failure_threshold,
                ),
                liveness_probe=cloud_run.liveness_probe(
                    http_get=cloud_run.liveness_http_get(path="/health", port=port),
                    initial_delay_seconds=args.liveness_probe.initial_delay_seconds,
                    period_seconds=args.liveness_probe.period_seconds,
                    timeout_seconds=args.liveness_probe.timeout_seconds,
                    failure_threshold=args.liveness_probe.failure_threshold,
                ),
                volume_mounts=[
                    *(model_volume_mounts(args.mount.mount_path, args.streamed) or []),
                    *cache_volume_mounts(args.compile_cache),
                ]
                or None,
            ),
            *sidecar_containers(
                args.metrics_sidecar,
                serving_container=GPU_SERVING_CONTAINER,
                gpu=args.gpu,
                cpu=args.cpu,
                memory_gib=args.memory_gib,
            ),
        ],
    }


def _cache_env(cache: CacheMount | None) -> dict[str, str]:
    """VLLM_CACHE_ROOT on the cache volume: vLLM keeps torch.compile's artifacts under it, keyed by a hash."""
    return {GPU_CACHE_ENV: cache.mount_path} if cache is not None else {}


def _template_hash(template: Mapping[str, object]) -> str:
    """A short, stable hash of a resolved template (fields by their Python names, keys sorted).

    The hash names the revision, so it must not change when the code building the template does: it is
    taken over the form pulumi-gcp's `ServiceTemplateArgs` had (snake_case field names, None left out),
    which every revision deployed so far was named from; the wire form's camelCase keys are turned back.
    """
    canonical = json.dumps(_plain(template), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:_REVISION_HASH_CHARS]


# Maps whose keys are data (label names, resource names such as `nvidia.com/gpu`), not field names.
_KEYED_BY_DATA = frozenset({"labels", "limits"})


def _plain(value: object, *, data_keys: bool = False) -> object:
    """Wire-form mappings with their field names in snake_case, lists and values as plain JSON."""
    if isinstance(value, dict):
        return {
            (str(key) if data_keys else _snake(str(key))): _plain(item, data_keys=key in _KEYED_BY_DATA)
            for key, item in value.items()
            if item is not None
        }
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _snake(name: str) -> str:
    """`maxInstanceCount` -> `max_instance_count` (the inverse of `components.wire.camel`)."""
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in name)


def _candidate_uri(statuses: Sequence[Mapping[str, Any]] | None) -> str | None:
    for status in statuses or ():
        if status.get("tag") == CANDIDATE_TAG:
            uri: str | None = status.get("uri")
            return uri
    return None


def _service_name_rule(name: str) -> str:
    return (
        f"{name!r} is not a Cloud Run service name (lowercase letters, digits and hyphens, starting with a letter, "
        "not ending with a hyphen, at most 49 characters)"
    )


def _member_slug(member: str) -> str:
    """A stable, readable, unique child-name fragment for an IAM member (kind, account name, short hash)."""
    kind, _, identity = member.partition(":")
    local = identity.split("@", 1)[0]
    slug = "".join(ch if ch.isalnum() else "-" for ch in f"{kind}-{local}".lower()).strip("-")
    digest = hashlib.sha256(member.encode()).hexdigest()[:6]
    return f"{slug[:40]}-{digest}"
