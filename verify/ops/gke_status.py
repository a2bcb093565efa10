"""`verify status` for a GKE fleet: the cluster and node pools (GKE API), then the Deployment's pods, the
HPA and the Service (Kubernetes API), and for a failing pod why.

What a user needs to tell apart: a fleet still waiting for accelerator capacity (pods Pending because no
node has a free TPU or GPU, and what the cluster autoscaler is doing about it), a pod that crash-loops
(its restarts, and the failure signature of its last run's log, verify/ops/signatures.py, the same as on
the other platforms), and a healthy fleet with its replica counts (ready / desired, the HPA's current and
desired replicas within its bounds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pydantic

from remote.google_client import GoogleApis
from remote.google_errors import Answer, GoogleApiError, parse_answer
from serving.naming import GKE_APP_LABEL, GKE_SERVING_CONTAINER
from verify.ops import signatures
from verify.ops.gateway_status import GatewayView, gateway_view
from verify.ops.k8s_answers import (
    Autoscaler,
    Deployment,
    EventList,
    GkeCluster,
    GkeNodePool,
    Pod,
    PodList,
    Service,
)
from verify.ops.kubernetes import KubernetesApi, KubernetesApiError
from verify.ops.stack import GkeOpsStack

# The cluster autoscaler's events on a Pending pod (kubernetes/autoscaler, cluster-autoscaler FAQ: "What
# events are emitted by CA"): it added a node, could not (and why), or the pod fits no node group.
SCALE_UP_EVENTS = ("TriggeredScaleUp", "NotTriggerScaleUp", "FailedScaleUp")
CRASH_REASONS = frozenset({"CrashLoopBackOff", "Error", "OOMKilled", "CreateContainerConfigError", "ImagePullBackOff"})
LOG_TAIL_LINES = 200

KubeConnect = Callable[[GkeCluster], KubernetesApi]


class PodLine(pydantic.BaseModel):
    """One pod as status shows it."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    name: str
    phase: str
    ready: bool
    restarts: int = 0
    reason: str | None = None
    message: str | None = None
    # For a Pending pod: the cluster autoscaler's latest word on it.
    autoscaler: str | None = None
    # For a crash-looping pod: the failure signature its last run's log shows.
    signature: str | None = None
    log_line: str | None = None


class GkeStatus(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    cluster: str
    cluster_status: str
    node_pools: list[str]
    deployment: str
    replicas: int | None = None
    ready_replicas: int = 0
    hpa: str | None = None
    pods: list[PodLine] = pydantic.Field(default_factory=list)
    endpoint: str | None = None
    # Behind the inference gateway: the Gateway and each InferencePool with its endpoints and picker.
    gateway: GatewayView | None = None

    @property
    def probe_url(self) -> str | None:
        return self.endpoint


@dataclass(frozen=True)
class FleetVerdict:
    state: Literal["ready", "in-progress", "failed", "not-deployed"]
    summary: str
    fix: str | None
    detail: GkeStatus | None


def _parse(model: type[Answer], data: object) -> Answer:
    return parse_answer(model, data, "kubernetes")


def real_cluster(apis: GoogleApis) -> KubeConnect:
    """Connect to the cluster GKE describes, with the caller's own Google credentials."""

    def connect(cluster: GkeCluster) -> KubernetesApi:
        # A private cluster (the stack's default) is reached through its DNS endpoint, whose certificate is
        # publicly trusted; otherwise through the IP endpoint with the cluster's own CA.
        if cluster.dns_endpoint is not None:
            return KubernetesApi.for_cluster(cluster.dns_endpoint, "", apis.tokens)
        return KubernetesApi.for_cluster(cluster.endpoint, cluster.master_auth.cluster_ca_certificate, apis.tokens)

    return connect


def gke_fleet_status(stack: GkeOpsStack, apis: GoogleApis, connect: KubeConnect) -> FleetVerdict:
    """One look at the fleet. GoogleApiError / CannotCheckError propagate (status reports them as unknown)."""
    try:
        cluster = parse_answer(GkeCluster, apis.get("container", stack.cluster_path), "container")
    except GoogleApiError as error:
        if error.not_found:
            return FleetVerdict(
                "not-deployed", f"no cluster {stack.cluster_path}", "run `pulumi up` (it creates the cluster)", None
            )
        raise
    pools = [_pool_line(pool) for pool in cluster.node_pools]
    base = GkeStatus(
        cluster=stack.cluster_path, cluster_status=cluster.status, node_pools=pools, deployment=stack.deployment
    )
    if cluster.status != "RUNNING":
        return FleetVerdict("in-progress", f"cluster is {cluster.status}", None, base)
    with connect(cluster) as kube:
        return _fleet(stack, kube, base)


def _pool_line(pool: GkeNodePool) -> str:
    scaling = pool.autoscaling
    bounds = f", autoscaling {scaling.total_min_node_count}..{scaling.total_max_node_count}" if scaling.enabled else ""
    where = f" in {', '.join(pool.locations)}" if pool.locations else ""
    message = f" ({pool.status_message})" if pool.status_message else ""
    return f"{pool.name}: {pool.status}{message}, {pool.config.machine_type}{bounds}{where}"


def _fleet(stack: GkeOpsStack, kube: KubernetesApi, base: GkeStatus) -> FleetVerdict:
    namespace, name = stack.namespace, stack.deployment
    try:
        deployment = _parse(Deployment, kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"))
    except KubernetesApiError as error:
        if error.code == 404:
            return FleetVerdict(
                "not-deployed", f"the cluster runs, but has no Deployment {namespace}/{name}", "run `pulumi up`", base
            )
        raise
    listed = kube.get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": f"{GKE_APP_LABEL}={name}"})
    pods = [_pod_line(pod, stack, kube) for pod in _parse(PodList, listed).items]
    hpa = _autoscaler(kube, namespace, name)
    endpoint = _endpoint(kube, stack)
    gateway = gateway_view(kube, namespace, stack.gateway, stack.pools) if stack.gateway else None
    detail = base.model_copy(
        update={
            "replicas": deployment.spec.replicas,
            "ready_replicas": deployment.status.ready_replicas,
            "hpa": hpa,
            "pods": pods,
            # Users reach the fleet through the gateway when there is one; the Service stays for port-forward.
            "endpoint": gateway.endpoint if gateway is not None else endpoint,
            "gateway": gateway,
        }
    )
    verdict = _verdict(stack, deployment, pods, detail)
    if gateway is not None and gateway.problem and verdict.state == "ready" and deployment.spec.replicas != 0:
        return FleetVerdict(
            "in-progress",
            f"{verdict.summary}; gateway: {gateway.problem}",
            "check again in a few minutes; "
            "`kubectl describe gateway,inferencepool -n " + namespace + "` shows the load balancer's events",
            detail,
        )
    return verdict


def _verdict(stack: GkeOpsStack, deployment: Deployment, pods: list[PodLine], detail: GkeStatus) -> FleetVerdict:
    ready, wanted = deployment.status.ready_replicas, deployment.spec.replicas
    counts = f"{ready}/{wanted if wanted is not None else '?'} replicas ready"
    crashing = [pod for pod in pods if pod.reason in CRASH_REASONS]
    pending = [pod for pod in pods if pod.phase == "Pending" and pod.reason == "Unschedulable"]
    if crashing:
        pod = crashing[0]
        signature = next((known for known in signatures.SIGNATURES if known.id == pod.signature), None)
        why = f": {pod.signature} ({signature.explanation})" if signature else ""
        return FleetVerdict(
            "failed",
            f"{counts}; pod {pod.name} is in {pod.reason} after {pod.restarts} restart(s){why}",
            signature.fix if signature else f"`kubectl logs -n {stack.namespace} {pod.name} -c vllm --previous`",
            detail,
        )
    if wanted == 0:
        return FleetVerdict("ready", "parked: the Deployment has 0 replicas (gke.replicas.parked)", None, detail)
    waiting = ""
    if pending:
        pod = pending[0]
        scaler = f"; cluster autoscaler: {pod.autoscaler}" if pod.autoscaler else ""
        waiting = (
            f"; {len(pending)} pod(s) waiting for a {stack.machine_type} node ({stack.accelerator_resource}): "
            f"{pod.message}{scaler}"
        )
    if ready >= 1:
        return FleetVerdict("ready", f"{counts}{waiting}", None, detail)
    fix = None
    if pending and any(pod.autoscaler and "FailedScaleUp" in pod.autoscaler for pod in pending):
        fix = (
            f"no {stack.provisioning} capacity (or quota) for {stack.machine_type} in {', '.join(stack.zones)}: add a "
            "zone to gke.nodePool.zones, try another provisioning model, or check quota (`gemma-verify preflight`)"
        )
    return FleetVerdict("in-progress", f"{counts}{waiting or '; pods are starting'}", fix, detail)


def _pod_line(pod: Pod, stack: GkeOpsStack, kube: KubernetesApi) -> PodLine:
    status = pod.status
    container = next((c for c in status.container_statuses if c.name == GKE_SERVING_CONTAINER), None)
    scheduled = pod.condition("PodScheduled")
    line = PodLine(
        name=pod.metadata.name,
        phase=status.phase,
        ready=bool(container and container.ready),
        restarts=container.restart_count if container else 0,
    )
    if scheduled is not None and scheduled.status == "False":
        autoscaler = _autoscaler_word(kube, stack.namespace, pod.metadata.name)
        return line.model_copy(
            update={"reason": scheduled.reason, "message": scheduled.message, "autoscaler": autoscaler}
        )
    if container is not None and container.state.waiting is not None and container.state.waiting.reason:
        waiting = container.state.waiting
        update: dict[str, object] = {"reason": waiting.reason, "message": waiting.message or None}
        if waiting.reason in CRASH_REASONS and container.restart_count > 0:
            update.update(_log_signature(kube, stack.namespace, pod.metadata.name))
        return line.model_copy(update=update)
    return line


def _autoscaler_word(kube: KubernetesApi, namespace: str, pod: str) -> str | None:
    listed = kube.get(f"/api/v1/namespaces/{namespace}/events", {"fieldSelector": f"involvedObject.name={pod}"})
    events = [event for event in _parse(EventList, listed).items if event.reason in SCALE_UP_EVENTS]
    if not events:
        return None
    latest = max(events, key=lambda event: event.last_timestamp or "")
    return f"{latest.reason}: {latest.message}"


def _log_signature(kube: KubernetesApi, namespace: str, pod: str) -> dict[str, object]:
    """The failure signature of the last run (`previous=true`): the first line that shows one (the cause comes
    before the tracebacks it sets off)."""
    text = kube.text(
        f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
        {"container": GKE_SERVING_CONTAINER, "previous": "true", "tailLines": str(LOG_TAIL_LINES)},
    )
    for line in text.splitlines():
        found = signatures.match(line)
        if found is not None:
            return {"signature": found.id, "log_line": line.strip()[:300]}
    return {}


def _autoscaler(kube: KubernetesApi, namespace: str, name: str) -> str | None:
    try:
        hpa = _parse(
            Autoscaler, kube.get(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}")
        )
    except KubernetesApiError as error:
        if error.code == 404:
            return None
        raise
    status, spec = hpa.status, hpa.spec
    text = (
        f"current {status.current_replicas}, desired {status.desired_replicas} "
        f"(min {spec.min_replicas}, max {spec.max_replicas})"
    )
    stuck = next((c for c in status.conditions if c.type == "ScalingActive" and c.status == "False"), None)
    return f"{text}; not scaling: {stuck.reason}: {stuck.message}" if stuck else text


def _endpoint(kube: KubernetesApi, stack: GkeOpsStack) -> str | None:
    try:
        service = _parse(Service, kube.get(f"/api/v1/namespaces/{stack.namespace}/services/{stack.deployment}"))
    except KubernetesApiError as error:
        if error.code == 404:
            return None
        raise
    ingress = next((item for item in service.status.load_balancer.ingress if item.ip or item.hostname), None)
    return f"http://{ingress.ip or ingress.hostname}:{stack.port}" if ingress else None
