"""`verify status` for a fleet behind the inference gateway: the Gateway (programmed, at which address),
each InferencePool (accepted by the gateway, its endpoints ready) and each pool's endpoint picker.

Why apart from gke_status.py: only a fleet with `gke.gateway.routing: gateway` has these objects, and each
answers a question of its own: requests reach nothing while the Gateway is not Programmed; a pool the
gateway did not accept (ResolvedRefs False: a picker Service it cannot find) gets no traffic; a picker that
is not ready leaves the pool in FailOpen (round robin, no prefix or queue awareness). Bodies are parsed at
the edge into the shapes the CRDs define: Gateway `gateway.networking.k8s.io/v1` (gateway-api v1.3.0
`GatewayStatus`: addresses, conditions) and InferencePool `inference.networking.k8s.io/v1`
(gateway-api-inference-extension v1.6.0 `InferencePoolStatus`: parents[].parentRef, conditions).
"""

from __future__ import annotations

import pydantic

from remote.google_errors import GoogleText, parse_answer
from verify.ops.k8s_answers import Condition, Deployment, PodList
from verify.ops.kubernetes import KubernetesApi, KubernetesApiError

GATEWAY_API = "/apis/gateway.networking.k8s.io/v1"
INFERENCE_API = "/apis/inference.networking.k8s.io/v1"
PICKER_SUFFIX = "-epp"


class _Answer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class _Address(_Answer):
    type: GoogleText = ""
    value: GoogleText = ""


class _GatewayStatus(_Answer):
    addresses: list[_Address] = pydantic.Field(default_factory=list)
    conditions: list[Condition] = pydantic.Field(default_factory=list)


class GatewayAnswer(_Answer):
    status: _GatewayStatus = _GatewayStatus()


class _ParentRef(_Answer):
    kind: GoogleText = "Gateway"
    name: GoogleText = ""


class _PoolParent(_Answer):
    parent_ref: _ParentRef = pydantic.Field(default=_ParentRef(), alias="parentRef")
    conditions: list[Condition] = pydantic.Field(default_factory=list)


class _PoolSelector(_Answer):
    match_labels: dict[str, str] = pydantic.Field(default_factory=dict, alias="matchLabels")


class _PoolSpec(_Answer):
    selector: _PoolSelector = _PoolSelector()


class _PoolStatus(_Answer):
    parents: list[_PoolParent] = pydantic.Field(default_factory=list)


class InferencePoolAnswer(_Answer):
    spec: _PoolSpec = _PoolSpec()
    status: _PoolStatus = _PoolStatus()


class GatewayView(pydantic.BaseModel):
    """What status shows of the gateway: one line for it, one per pool, and its address once programmed."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    gateway: str
    pools: list[str]
    endpoint: str | None = None
    # Why requests may not reach the pools through it (None: nothing in the way).
    problem: str | None = None


def _get(kube: KubernetesApi, path: str) -> dict[str, object] | None:
    try:
        return kube.get(path)
    except KubernetesApiError as error:
        if error.code == 404:
            return None
        raise


def _condition(conditions: list[Condition], kind: str) -> Condition | None:
    return next((condition for condition in conditions if condition.type == kind), None)


def _gateway_line(name: str, body: dict[str, object] | None) -> tuple[str, str | None, str | None]:
    """(line, endpoint, problem) for the Gateway."""
    if body is None:
        return f"{name}: not found", None, f"no Gateway {name}: run `pulumi up`"
    answer = parse_answer(GatewayAnswer, body, "kubernetes")
    address = next((item.value for item in answer.status.addresses if item.value), None)
    programmed = _condition(answer.status.conditions, "Programmed")
    if programmed is None or programmed.status != "True":
        why = f"{programmed.reason}: {programmed.message}" if programmed else "no Programmed condition yet"
        return f"{name}: not programmed ({why})", None, f"the Gateway is not programmed ({why})"
    return f"{name}: programmed at {address or '?'}", f"http://{address}" if address else None, None


def _pool_line(kube: KubernetesApi, namespace: str, pool: str, gateway: str) -> tuple[str, str | None]:
    """(line, problem) for one InferencePool: accepted by the gateway, ready endpoints, its picker."""
    body = _get(kube, f"{INFERENCE_API}/namespaces/{namespace}/inferencepools/{pool}")
    if body is None:
        return f"{pool}: not found", f"no InferencePool {pool}"
    answer = parse_answer(InferencePoolAnswer, body, "kubernetes")
    parent = next((p for p in answer.status.parents if p.parent_ref.name == gateway), None)
    accepted = _condition(parent.conditions, "Accepted") if parent else None
    resolved = _condition(parent.conditions, "ResolvedRefs") if parent else None
    problem = None
    if accepted is None or accepted.status != "True":
        gate = f"not accepted by {gateway}" + (f" ({accepted.reason}: {accepted.message})" if accepted else "")
        problem = f"InferencePool {pool} is {gate}"
    elif resolved is not None and resolved.status != "True":
        gate = f"accepted, refs unresolved ({resolved.reason}: {resolved.message})"
        problem = f"InferencePool {pool}: {resolved.reason}: {resolved.message}"
    else:
        gate = f"accepted by {gateway}"
    selector = ",".join(f"{key}={value}" for key, value in sorted(answer.spec.selector.match_labels.items()))
    pods = parse_answer(
        PodList, kube.get(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": selector}), "kubernetes"
    ).items
    ready = sum(1 for pod in pods if (condition := pod.condition("Ready")) and condition.status == "True")
    picker = f"{pool}{PICKER_SUFFIX}"
    picker_body = _get(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/{picker}")
    if picker_body is None:
        picker_text = f"picker {picker} not found"
        problem = problem or f"no endpoint picker {picker}: the pool routes round robin (FailOpen)"
    else:
        deployment = parse_answer(Deployment, picker_body, "kubernetes")
        wanted = deployment.spec.replicas if deployment.spec.replicas is not None else "?"
        picker_text = f"picker {picker} {deployment.status.ready_replicas}/{wanted} ready"
        if deployment.status.ready_replicas < 1:
            problem = problem or f"endpoint picker {picker} is not ready: the pool routes round robin (FailOpen)"
    line = f"{pool}: {gate}; {ready}/{len(pods)} endpoint(s) ready; {picker_text}"
    return line, problem


def gateway_view(kube: KubernetesApi, namespace: str, gateway: str, pools: tuple[str, ...]) -> GatewayView:
    """One look at the gateway and its pools (KubernetesApiError other than 404 propagates)."""
    line, endpoint, problem = _gateway_line(
        gateway, _get(kube, f"{GATEWAY_API}/namespaces/{namespace}/gateways/{gateway}")
    )
    lines = []
    for pool in pools:
        pool_text, pool_problem = _pool_line(kube, namespace, pool, gateway)
        lines.append(pool_text)
        problem = problem or pool_problem
    return GatewayView(gateway=line, pools=lines, endpoint=endpoint, problem=problem)
