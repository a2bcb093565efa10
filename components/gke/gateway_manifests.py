"""The Kubernetes objects of a fleet's inference gateway, as plain manifests: an internal Gateway, the
HTTPRoute to the pools, and per pool the InferencePool and its endpoint picker (llm-d's router).

Why written out here rather than a Helm release: the endpoint picker left the Gateway API Inference
Extension in its v1.6.0 (its README: "EPP and associated APIs: llm-d/llm-d-router"), and llm-d publishes the
router as OCI charts (`llm-d-router-gateway`, ghcr.io/llm-d/charts) whose values hold no schema; a Helm
release cannot fetch a chart offline (the plan would show one opaque resource), and pulumi-kubernetes has open
CRD-ordering issues between charts. So the objects the chart renders for `provider.name: gke` are written
here from its templates at tag v0.10.0 (commit 71f4f0999f95b96c49a9d0c4afbd18dfdb943c26,
config/charts/routerlib/templates/ and config/charts/llm-d-router-gateway/templates/), every object a typed
resource in the plan, validated against the pinned schemas in the tests and checked by the policy pack.
Deviations from the chart, each on purpose: the picker's RBAC is one namespaced Role (pods and
InferencePools, read-only; the chart's cluster-wide token-review role only serves authenticated metrics,
and the picker's /metrics is scraped without auth instead, inside the cluster); its CPU request fits the
system pool (the chart asks 8 vCPU of a dedicated node); no InferenceObjective (one model per pool).

The CRDs (Gateway API, InferencePool v1) are GKE's own from 1.34.0-gke.1626000 ("GKE automatically installs
all GA CRDs for Gateway API and Gateway API Inference Extension", llm-d's GKE gateway guide), so the program
installs none: installing them again would fight GKE's copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.gke.manifests import GMP_COLLECTOR_LABELS, GMP_NAMESPACE, HEALTH_CHECK_RANGES
from serving.image_digests import pinned_reference
from serving.images import PICKER_TAG
from serving.naming import GKE_APP_LABEL
from serving.route_guard import admitted_paths

# The internal regional Application Load Balancer (needs a proxy-only subnet in the region).
INTERNAL_GATEWAY_CLASS = "gke-l7-rilb"
GATEWAY_PORT = 80
# The v0.10.0 release, pulled by its multi-arch index digest (serving/data/image-digests.json: the digest,
# its platform digests and where they were read, unconfirmed at the registry); the tag is for people.
PICKER_IMAGE = pinned_reference(PICKER_TAG)
PICKER_SUFFIX = "-epp"
PICKER_UID = 65532
EXT_PROC_PORT = 9002
GRPC_HEALTH_PORT = 9003
PICKER_METRICS_PORT = 9090
# The chart's default scheduling profile (routerlib/templates/_config.yaml, latency predictor off): queue
# depth and KV-cache use per replica (weight 2 each) and the prefix-cache hit estimate (weight 3).
SCORERS: tuple[tuple[str, int], ...] = (
    ("queue-scorer", 2),
    ("kv-cache-utilization-scorer", 2),
    ("prefix-cache-scorer", 3),
)
# With LoRA adapters, llm-d's `lora-affinity-scorer` (v0.10.0, pkg/epp/framework/plugins/scheduling/scorer/
# loraaffinity): 1.0 where the request's `model` (the adapter) is running, 0.8 where a GPU slot is free to load
# it, 0.6 where it is waiting, 0 where the slots are full. It reads vLLM's `vllm:lora_requests_info` gauge
# (labels running_lora_adapters, waiting_lora_adapters, max_lora), which the core-metrics-extractor's vLLM
# defaults already scrape; each replica's route middleware lists a routed version there under its public name,
# the `model` the picker sees (serving/adapter_routes_runtime.py). The weight is ours (the chart ships no LoRA
# profile): as much as queue depth, less than the prefix cache, since every replica can load every adapter from
# the bucket and affinity only saves a load into a warm slot.
LORA_AFFINITY_SCORER: tuple[str, int] = ("lora-affinity-scorer", 2)
# How long one request may take through the load balancer (the chart's GCPBackendPolicy default).
BACKEND_TIMEOUT_SECONDS = 300


@dataclass(frozen=True)
class PoolSpec:
    """One InferencePool: its name and the pod labels it selects (a track's pods, or the whole fleet's)."""

    name: str
    selector: Mapping[str, str]

    @property
    def picker(self) -> str:
        return f"{self.name}{PICKER_SUFFIX}"


@dataclass(frozen=True)
class GatewaySpec:
    """What the gateway's manifests need: where, which pools, and how traffic splits between them."""

    name: str
    namespace: str
    port: int
    pools: Sequence[PoolSpec]
    # The proxy-only subnet's range: where the load balancer's proxies (requests to the pods, ext-proc calls to
    # the pickers) come from, so the pickers' NetworkPolicy admits it.
    proxy_range: str
    # Percent of requests per pool name (sums to 100); one pool: all of it.
    weights: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    # The stack serves LoRA adapters: the pickers score replicas by the adapter a request names.
    lora_affinity: bool = False

    def __post_init__(self) -> None:
        names = [pool.name for pool in self.pools]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"GatewaySpec.pools {names}: need one or more pools with different names")
        weights = self.weight_of
        if set(weights) != set(names) or sum(weights.values()) != 100 or min(weights.values()) < 0:
            raise ValueError(f"GatewaySpec.weights {dict(self.weights)}: need a 0..100 weight per pool, summing to 100")

    @property
    def weight_of(self) -> dict[str, int]:
        if not self.weights and len(self.pools) == 1:
            return {self.pools[0].name: 100}
        return dict(self.weights)

    @property
    def gateway_name(self) -> str:
        return f"{self.name}-gateway"


def _metadata(spec: GatewaySpec, name: str, **extra: Any) -> dict[str, Any]:  # noqa: ANN401 - manifest values
    return {"name": name, "namespace": spec.namespace, "labels": dict(spec.labels), **extra}


def gateway(spec: GatewaySpec) -> dict[str, Any]:
    """An internal Application Load Balancer in the cluster's VPC: never reachable from the internet."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": _metadata(spec, spec.gateway_name),
        "spec": {
            "gatewayClassName": INTERNAL_GATEWAY_CLASS,
            "listeners": [{"name": "http", "protocol": "HTTP", "port": GATEWAY_PORT}],
        },
    }


def http_route(spec: GatewaySpec) -> dict[str, Any]:
    """The paths the route guard admits (and no other: the load balancer answers 404 for the rest before a pod
    sees them), to the pools, split by weight (a gated fleet's stepped blue/green moves these weights)."""
    weights = spec.weight_of
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": _metadata(spec, spec.name),
        "spec": {
            "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": spec.gateway_name}],
            "rules": [
                {
                    "matches": [{"path": {"type": "Exact", "value": path}} for path in admitted_paths()],
                    "backendRefs": [
                        {
                            "group": "inference.networking.k8s.io",
                            "kind": "InferencePool",
                            "name": pool.name,
                            "weight": weights[pool.name],
                        }
                        for pool in spec.pools
                    ],
                }
            ],
        },
    }


def inference_pool(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """The pods of one pool and the picker that chooses among them; FailOpen: if the picker is down, the load
    balancer still sends requests to the pool (round robin) rather than refusing them."""
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": _metadata(spec, pool.name),
        "spec": {
            "selector": {"matchLabels": dict(pool.selector)},
            "targetPorts": [{"number": spec.port}],
            "appProtocol": "http",
            "endpointPickerRef": {
                "name": pool.picker,
                "port": {"number": EXT_PROC_PORT},
                "failureMode": "FailOpen",
            },
        },
    }


def picker_scorers(*, lora_affinity: bool = False) -> tuple[tuple[str, int], ...]:
    """The default profile's scorers and weights; with adapters, the LoRA affinity scorer too."""
    return (*SCORERS, LORA_AFFINITY_SCORER) if lora_affinity else SCORERS


def picker_config(*, lora_affinity: bool = False) -> str:
    """The picker's EndpointPickerConfig (the chart's `default-plugins.yaml`, latency predictor off; with
    adapters, `lora-affinity-scorer` added to the profile)."""
    scorers = picker_scorers(lora_affinity=lora_affinity)
    config = {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            *({"type": scorer} for scorer, _ in scorers),
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {"name": "default", "plugins": [{"pluginRef": scorer, "weight": weight} for scorer, weight in scorers]}
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


def _picker_labels(spec: GatewaySpec, pool: PoolSpec) -> dict[str, str]:
    return {**spec.labels, GKE_APP_LABEL: pool.picker}


def picker_account(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(spec, pool.picker)}


def picker_role(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """Least privilege: read the namespace's pods (the endpoints) and InferencePools (its pool), nothing else."""
    read = ["get", "watch", "list"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _metadata(spec, pool.picker),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": read},
            {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"], "verbs": read},
        ],
    }


def picker_role_binding(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(spec, pool.picker),
        "subjects": [{"kind": "ServiceAccount", "name": pool.picker, "namespace": spec.namespace}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": pool.picker},
    }


def picker_config_map(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(spec, pool.picker),
        "data": {"default-plugins.yaml": picker_config(lora_affinity=spec.lora_affinity)},
    }


def _grpc_probe(period: int, initial_delay: int = 0) -> dict[str, Any]:
    probe: dict[str, Any] = {
        "grpc": {"port": GRPC_HEALTH_PORT, "service": "inference-extension"},
        "periodSeconds": period,
    }
    if initial_delay:
        probe["initialDelaySeconds"] = initial_delay
    return probe


# The picker reads its config file once, at start: a pod annotation naming the LoRA profile restarts it when
# a stack's first adapter turns the scorer on (or its last one turns it off). Absent without adapters, so the
# pickers of fleets without adapters keep the template they had.
PROFILE_ANNOTATION = "gemma-serving/picker-profile"


def _picker_template_metadata(spec: GatewaySpec, labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": dict(labels)}
    if spec.lora_affinity:
        metadata["annotations"] = {PROFILE_ANNOTATION: "lora-affinity"}
    return metadata


def picker_deployment(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """One picker replica (the chart's default; with more, it turns on leader election)."""
    container = {
        "name": "epp",
        "image": PICKER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": [
            "--pool-name",
            pool.name,
            "--pool-namespace",
            spec.namespace,
            "--pool-group",
            "inference.networking.k8s.io",
            "--zap-encoder",
            "json",
            "--config-file",
            "/config/default-plugins.yaml",
            "--grpc-health-port",
            str(GRPC_HEALTH_PORT),
            "--tracing=false",
            "--metrics-endpoint-auth=false",
        ],
        "ports": [
            {"name": "grpc", "containerPort": EXT_PROC_PORT},
            {"name": "grpc-health", "containerPort": GRPC_HEALTH_PORT},
            {"name": "metrics", "containerPort": PICKER_METRICS_PORT},
        ],
        "env": [
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
        "startupProbe": {**_grpc_probe(period=2), "failureThreshold": 60},
        "livenessProbe": _grpc_probe(period=10, initial_delay=5),
        "readinessProbe": _grpc_probe(period=2),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "plugins-config", "mountPath": "/config", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - an emptyDir of the pod's own
        ],
    }
    labels = _picker_labels(spec, pool)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(spec, pool.picker, labels=labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {GKE_APP_LABEL: pool.picker}},
            "template": {
                "metadata": _picker_template_metadata(spec, labels),
                "spec": {
                    "serviceAccountName": pool.picker,
                    # The image's own user (Dockerfile.epp: USER 65532:65532), stated so the kubelet enforces it.
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": PICKER_UID,
                        "runAsGroup": PICKER_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    # The chart's value: the longest grace period of the pool's pods, and then some.
                    "terminationGracePeriodSeconds": 130,
                    "containers": [container],
                    "volumes": [
                        {"name": "plugins-config", "configMap": {"name": pool.picker}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},
                    ],
                },
            },
        },
    }


def picker_service(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """What the InferencePool's endpointPickerRef names: the ext-proc port (h2c) and the metrics port."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(spec, pool.picker),
        "spec": {
            "type": "ClusterIP",
            "selector": {GKE_APP_LABEL: pool.picker},
            "ports": [
                {
                    "name": "grpc-ext-proc",
                    "protocol": "TCP",
                    "port": EXT_PROC_PORT,
                    "appProtocol": "kubernetes.io/h2c",
                },
                {"name": "http-metrics", "protocol": "TCP", "port": PICKER_METRICS_PORT},
            ],
        },
    }


def picker_monitoring(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """Managed Prometheus scrapes the picker: its pool averages are what the HPA scales on."""
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": _metadata(spec, pool.picker),
        "spec": {
            "selector": {"matchLabels": {GKE_APP_LABEL: pool.picker}},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "10s"}],
        },
    }


def picker_network_policy(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """Default deny for the picker's pods: the load balancer's proxies (the proxy-only subnet) and Google's
    health checkers reach its ext-proc and gRPC health ports, Managed Prometheus its metrics port; no other
    pod of the cluster or address of the VPC reaches it (the picker decides where every request goes, and its
    metrics are what the HPA scales on)."""
    balancer = [{"ipBlock": {"cidr": cidr}} for cidr in (spec.proxy_range, *HEALTH_CHECK_RANGES)]
    collectors = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GMP_NAMESPACE}},
        "podSelector": {"matchLabels": dict(GMP_COLLECTOR_LABELS)},
    }
    grpc_ports = [{"protocol": "TCP", "port": port} for port in (EXT_PROC_PORT, GRPC_HEALTH_PORT)]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(spec, f"{pool.picker}-ingress"),
        "spec": {
            "podSelector": {"matchLabels": {GKE_APP_LABEL: pool.picker}},
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": balancer, "ports": grpc_ports},
                {"from": [collectors], "ports": [{"protocol": "TCP", "port": PICKER_METRICS_PORT}]},
            ],
        },
    }


def _pool_policy(spec: GatewaySpec, pool: PoolSpec, kind: str, default: dict[str, Any]) -> dict[str, Any]:
    """A GKE policy (networking.gke.io/v1) attached to the pool's load-balancer backend."""
    return {
        "apiVersion": "networking.gke.io/v1",
        "kind": kind,
        "metadata": _metadata(spec, pool.name),
        "spec": {
            "targetRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": pool.name},
            "default": default,
        },
    }


def pool_health_check(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """The load balancer's health check of the pool's pods: vLLM's /health (its `/` answers 404)."""
    check = {"type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": spec.port}}
    return _pool_policy(spec, pool, "HealthCheckPolicy", {"timeoutSec": 2, "checkIntervalSec": 2, "config": check})


def pool_backend_policy(spec: GatewaySpec, pool: PoolSpec) -> dict[str, Any]:
    """Long generations need more than the load balancer's 30 s default; requests are logged."""
    return _pool_policy(
        spec, pool, "GCPBackendPolicy", {"timeoutSec": BACKEND_TIMEOUT_SECONDS, "logging": {"enabled": True}}
    )


def pool_objects(spec: GatewaySpec, pool: PoolSpec) -> list[dict[str, Any]]:
    """Everything one pool needs, in the order they can be created."""
    return [
        picker_account(spec, pool),
        picker_role(spec, pool),
        picker_role_binding(spec, pool),
        picker_config_map(spec, pool),
        picker_deployment(spec, pool),
        picker_network_policy(spec, pool),
        picker_service(spec, pool),
        picker_monitoring(spec, pool),
        inference_pool(spec, pool),
        pool_health_check(spec, pool),
        pool_backend_policy(spec, pool),
    ]
