"""The Kubernetes objects of a vLLM fleet, as plain manifests built from one `FleetSpec`.

Why plain dicts built by functions: the same manifests are registered by `VllmFleet` (pulumi-kubernetes),
validated in the tests against the pinned Kubernetes version's OpenAPI schema and the CRDs' published
schemas, and checked by the policy pack; a value may be a Pulumi input (the bucket's name, the serving
account's email) that the engine resolves, never a credential: the API key reaches the pod as a file from
Secret Manager (the GKE Secret Manager add-on), and vLLM reads it as `VLLM_API_KEY`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from serving.gke_machines import NodeShape
from serving.naming import GKE_APP_LABEL, GKE_SERVING_CONTAINER

# Where the API key file lands in the container, and the shell line that hands it to vLLM as VLLM_API_KEY
# (vllm/entrypoints/serve/middleware/register.py reads it exactly like --api-key, without a command line
# that `ps` shows). The arguments stay a list: the shell passes them on as "$@", JSON values intact.
SECRETS_DIR = "/var/run/secrets/vllm"
API_KEY_FILE = "api-key"
LAUNCH = f'VLLM_API_KEY="$(cat {SECRETS_DIR}/{API_KEY_FILE})" exec vllm serve "$@"'
# GKE's annotations: an internal passthrough load balancer; the GCS FUSE sidecar injected into the pod.
INTERNAL_LB_ANNOTATION = "networking.gke.io/load-balancer-type"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
WORKLOAD_IDENTITY_ANNOTATION = "iam.gke.io/gcp-service-account"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
SECRETS_DRIVER = "secrets-store-gke.csi.k8s.io"
# The metric the HPA reads through the Custom Metrics Stackdriver Adapter: Managed Prometheus names a
# scraped metric `prometheus.googleapis.com|<name>|<kind>`.
QUEUE_METRIC = "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"
PROBE_PERIOD_SECONDS = 10


@dataclass(frozen=True)
class FleetSpec:
    """What the manifests need: names, the node shape, the container and the scaling bounds."""

    name: str
    namespace: str
    image: pulumi.Input[str]
    serve_args: Sequence[str]
    port: int
    shape: NodeShape
    cpu: float
    memory_gib: float
    bucket: pulumi.Input[str]
    mount_path: str
    mount_options: Sequence[str]
    service_account_email: pulumi.Input[str]
    # `projects/<p>/secrets/<id>/versions/<n>`: what the Secret Manager add-on mounts.
    api_key_version: pulumi.Input[str]
    min_replicas: int
    max_replicas: int
    parked: bool
    target_waiting_per_pod: int
    scale_down_stabilization_seconds: int
    model_load_seconds: int
    public_endpoint: bool = False
    allowed_source_ranges: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.serve_args:
            raise ValueError("FleetSpec.serve_args: the vllm serve arguments are required (model path first)")
        if any(arg == "--api-key" or arg.startswith("--api-key=") for arg in self.serve_args):
            raise ValueError("FleetSpec.serve_args: --api-key must not be an argument; the key comes from a file")
        if self.public_endpoint and not self.allowed_source_ranges:
            raise ValueError("FleetSpec.allowed_source_ranges: a public Service needs the CIDRs allowed to reach it")
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError(f"FleetSpec replicas: need 1 <= min ({self.min_replicas}) <= max ({self.max_replicas})")

    @property
    def selector(self) -> dict[str, str]:
        return {GKE_APP_LABEL: self.name}

    @property
    def startup_failure_threshold(self) -> int:
        """Enough probes of PROBE_PERIOD_SECONDS to cover the model's load (and, on TPU, its compilation)."""
        return math.ceil(self.model_load_seconds / PROBE_PERIOD_SECONDS)


def _metadata(spec: FleetSpec, name: str, **extra: Any) -> dict[str, Any]:  # noqa: ANN401 - manifest values
    return {"name": name, "namespace": spec.namespace, "labels": {**spec.labels, **spec.selector}, **extra}


def service_account(spec: FleetSpec) -> dict[str, Any]:
    """The pods' Kubernetes identity, bound to the serving Google account through Workload Identity."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _metadata(spec, spec.name, annotations={WORKLOAD_IDENTITY_ANNOTATION: spec.service_account_email}),
    }


def secret_provider_class(spec: FleetSpec) -> dict[str, Any]:
    """The API key's Secret Manager version, mounted as a file by the GKE Secret Manager add-on."""
    secrets = pulumi.Output.from_input(spec.api_key_version).apply(
        lambda version: f'- resourceName: "{version}"\n  path: "{API_KEY_FILE}"\n'
    )
    return {
        "apiVersion": "secrets-store.csi.x-k8s.io/v1",
        "kind": "SecretProviderClass",
        "metadata": _metadata(spec, f"{spec.name}-api-key"),
        "spec": {"provider": "gke", "parameters": {"secrets": secrets}},
    }


def _probe(path: str, *, period: int, failures: int, timeout: int = 5) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }


def deployment(spec: FleetSpec) -> dict[str, Any]:
    """One vLLM pod per node, tensor parallel over the node's accelerators; the HPA owns the replica count."""
    shape = spec.shape
    resources = {"cpu": f"{spec.cpu:g}", "memory": f"{spec.memory_gib:g}Gi", shape.resource: str(shape.accelerators)}
    container = {
        "name": GKE_SERVING_CONTAINER,
        "image": spec.image,
        "command": ["/bin/sh", "-c", LAUNCH, "vllm"],
        "args": list(spec.serve_args),
        "ports": [{"name": "http", "containerPort": spec.port}],
        "env": [{"name": key, "value": value} for key, value in sorted(spec.env.items())],
        "resources": {"requests": resources, "limits": resources},
        "volumeMounts": [
            {"name": "models", "mountPath": spec.mount_path, "readOnly": True},
            {"name": "api-key", "mountPath": SECRETS_DIR, "readOnly": True},
            {"name": "dshm", "mountPath": "/dev/shm"},  # noqa: S108 - the pod's shared memory, not a temp file
        ],
        # The window covers the load: a pod killed mid-load restarts the load from scratch, forever.
        "startupProbe": _probe("/health", period=PROBE_PERIOD_SECONDS, failures=spec.startup_failure_threshold),
        "readinessProbe": _probe("/health", period=5, failures=3),
        "livenessProbe": _probe("/health", period=15, failures=4, timeout=10),
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    pod_spec = {
        "serviceAccountName": spec.name,
        "nodeSelector": shape.node_selector(),
        "tolerations": [{"key": shape.resource, "operator": "Exists", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 60,
        "containers": [container],
        "volumes": [
            {
                "name": "models",
                "csi": {
                    "driver": GCSFUSE_DRIVER,
                    "readOnly": True,
                    "volumeAttributes": {"bucketName": spec.bucket, "mountOptions": ",".join(spec.mount_options)},
                },
            },
            {
                "name": "api-key",
                "csi": {
                    "driver": SECRETS_DRIVER,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": f"{spec.name}-api-key"},
                },
            },
            # vLLM's workers share tensors through /dev/shm; the container default (64 MiB) is too small.
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        ],
    }
    deployment_spec: dict[str, Any] = {
        "selector": {"matchLabels": spec.selector},
        # A new pod must be Ready (its model loaded) before an old one goes: no capacity dip on a rollout.
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "template": {
            "metadata": {"labels": {**spec.labels, **spec.selector}, "annotations": {GCSFUSE_ANNOTATION: "true"}},
            "spec": pod_spec,
        },
    }
    if spec.parked:
        # Parked: no pod, so the autoscaler removes every accelerator node (the HPA is idle at 0 replicas).
        deployment_spec["replicas"] = 0
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(spec, spec.name),
        "spec": deployment_spec,
    }


def service(spec: FleetSpec) -> dict[str, Any]:
    """The pods' endpoint: an internal load balancer, or an external one open to the named ranges only."""
    annotations = {} if spec.public_endpoint else {INTERNAL_LB_ANNOTATION: "Internal"}
    body: dict[str, Any] = {
        "type": "LoadBalancer",
        "selector": spec.selector,
        "ports": [{"name": "http", "port": spec.port, "targetPort": "http", "protocol": "TCP"}],
    }
    if spec.public_endpoint:
        body["loadBalancerSourceRanges"] = list(spec.allowed_source_ranges)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(spec, spec.name, annotations=annotations),
        "spec": body,
    }


def pod_monitoring(spec: FleetSpec) -> dict[str, Any]:
    """Managed Service for Prometheus scrapes each pod's /metrics (what the HPA and the dashboards read)."""
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": _metadata(spec, spec.name),
        "spec": {
            "selector": {"matchLabels": spec.selector},
            "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
        },
    }


def autoscaler(spec: FleetSpec) -> dict[str, Any]:
    """Adds a replica (and, through the cluster autoscaler, a node) when vLLM's queue per pod passes the target."""
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _metadata(spec, spec.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.name},
            "minReplicas": spec.min_replicas,
            "maxReplicas": spec.max_replicas,
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": QUEUE_METRIC},
                        "target": {"type": "AverageValue", "averageValue": str(spec.target_waiting_per_pod)},
                    },
                }
            ],
            "behavior": {
                "scaleDown": {"stabilizationWindowSeconds": spec.scale_down_stabilization_seconds},
            },
        },
    }


def disruption_budget(spec: FleetSpec) -> dict[str, Any]:
    """Voluntary disruptions (upgrades, scale-down) take one replica at a time."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _metadata(spec, spec.name),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": spec.selector}},
    }


def inference_pool(spec: FleetSpec, *, endpoint_picker: str, picker_port: int = 9002) -> dict[str, Any]:
    """GKE Inference Gateway's pool over the pods; its endpoint picker comes from the GAIE chart (docs/gke.md)."""
    return {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": _metadata(spec, spec.name),
        "spec": {
            "selector": {"matchLabels": spec.selector},
            "targetPorts": [{"number": spec.port}],
            "endpointPickerRef": {"name": endpoint_picker, "port": {"number": picker_port}},
        },
    }
