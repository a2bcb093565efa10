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

from serving.gke_machines import node_labels, pod_resource
from serving.naming import GKE_APP_LABEL, GKE_SERVING_CONTAINER
from serving.shapes import ResolvedShape

# Where the API key file lands in the container. vLLM reads VLLM_API_KEY exactly like --api-key
# (vllm/entrypoints/serve/middleware/register.py), without a command line that `ps` shows.
SECRETS_DIR = "/var/run/secrets/vllm"
API_KEY_FILE = "api-key"
# Exit status of a pod whose key is missing or blank (EX_CONFIG): the container restarts and never serves.
NO_KEY_EXIT = 78


def launch_line(secrets_dir: str = SECRETS_DIR) -> str:
    """The shell line that hands the key file to vLLM, failing closed; then it runs the command it was handed
    (the route guard's launcher, serving/route_guard.py) with its arguments.

    Why not `VLLM_API_KEY="$(cat file)"`: vLLM treats an empty VLLM_API_KEY as no key at all, so a missing,
    empty or blank file started a server that answers everyone. Here the pod exits instead (and the
    startup probe never passes). The arguments stay a list: the shell passes them on as "$@", JSON intact.
    """
    key_file = f"{secrets_dir}/{API_KEY_FILE}"
    refuse = (
        f'{{ echo "vLLM API key file {key_file} is missing or blank: refusing to serve without auth" >&2; '
        f"exit {NO_KEY_EXIT}; }}"
    )
    blank_stripped = "$(printf %s \"$VLLM_API_KEY\" | tr -d ' \\t\\r\\n')"
    steps = (
        f'[ -r "{key_file}" ] || {refuse}',
        f'VLLM_API_KEY="$(cat "{key_file}")" || {refuse}',
        f'[ -n "{blank_stripped}" ] || {refuse}',
        "export VLLM_API_KEY",
        'exec "$@"',
    )
    return "; ".join(steps)


LAUNCH = launch_line()
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
# Who may open the vLLM port (the NetworkPolicy): Managed Service for Prometheus's collectors (the HPA's
# and the dashboards' metrics; GMP runs them in gmp-system, labelled app.kubernetes.io/name: collector),
# the fleet's named client ranges (the gateway's proxy-only subnet, the internal Service's clients), the
# endpoint pickers (admitted_peers) and Google's load balancer health checkers (container-native backends
# are probed from these ranges; cloud.google.com/load-balancing/docs/health-check-concepts).
GMP_NAMESPACE = "gmp-system"
GMP_COLLECTOR_LABELS = {"app.kubernetes.io/name": "collector"}
HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
# The container's writable places when its root filesystem is read-only: HOME (vLLM's, torch's, Triton's
# and FlashInfer's caches live under ~/.cache) and /tmp, both emptyDirs that go with the pod.
HOME_DIR = "/home/vllm"
TMP_DIR = "/tmp"  # noqa: S108 - an emptyDir of the pod's own, not a shared temp directory


@dataclass(frozen=True)
class FleetSpec:
    """What the manifests need: names, the node shape, the container and the scaling bounds."""

    name: str
    namespace: str
    image: pulumi.Input[str]
    serve_args: Sequence[str]
    port: int
    shape: ResolvedShape
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
    # The CIDRs that call the pods (stacks/gke.py's client_ranges: the gateway's proxy-only subnet, the
    # internal Service's clients, a public Service's ranges): what the NetworkPolicy admits besides the peers.
    client_ranges: Sequence[str] = ()
    # The non-root user and group a GPU pod runs as: the owner the GCS FUSE mount gives the weights.
    run_as_user: int = 1001
    run_as_group: int = 1001
    # More NetworkPolicy peers admitted to the vLLM port (Kubernetes NetworkPolicyPeer objects): the hook
    # for a gateway's endpoint picker (its pods by label) or a gateway in another namespace.
    admitted_peers: Sequence[Mapping[str, Any]] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    # Env vars set to `gs://<bucket>/<object>`: an object the pods read through Cloud Storage's API, fresh,
    # where the mount would cache it (the adapter route table, serving/adapter_versions.py).
    bucket_env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    # What runs vLLM: the route guard's launcher (`python3 -c <launcher> <config> serve`, serving/route_guard.py),
    # run by the key-checking shell with serve_args after it.
    serving_command: Sequence[str] = ()
    # Accelerators each pod requests (vLLM's tensor parallel): the node's all by default; a divisor of them
    # packs node accelerators / accelerators_per_pod replicas onto each node.
    accelerators_per_pod: int | None = None

    def __post_init__(self) -> None:
        if not self.serve_args:
            raise ValueError("FleetSpec.serve_args: the vllm serve arguments are required (model path first)")
        if any(arg == "--api-key" or arg.startswith("--api-key=") for arg in self.serve_args):
            raise ValueError("FleetSpec.serve_args: --api-key must not be an argument; the key comes from a file")
        if self.public_endpoint and not self.allowed_source_ranges:
            raise ValueError("FleetSpec.allowed_source_ranges: a public Service needs the CIDRs allowed to reach it")
        if not self.serving_command:
            raise ValueError(
                "FleetSpec.serving_command: vLLM runs behind the route guard's launcher (serving/route_guard.py)"
            )
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError(f"FleetSpec replicas: need 1 <= min ({self.min_replicas}) <= max ({self.max_replicas})")
        if self.run_as_user < 1:
            raise ValueError(f"FleetSpec.run_as_user {self.run_as_user}: the pods run as a non-root user (uid >= 1)")
        per_pod = self.pod_accelerators
        if per_pod < 1 or self.shape.chips % per_pod:
            raise ValueError(
                f"FleetSpec.accelerators_per_pod {per_pod}: must divide the {self.shape.chips} accelerator(s) "
                f"of {self.shape.name}"
            )

    @property
    def pod_accelerators(self) -> int:
        """What each pod requests of the node's accelerators."""
        return self.accelerators_per_pod or self.shape.chips

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


def runs_as_non_root(spec: FleetSpec) -> bool:
    """GPU pods run as `run_as_user`; TPU pods keep the image's user (root).

    Why the split: upstream's vllm-openai image runs as root but needs nothing of root on a GPU node (GKE's
    device plugin opens the GPUs to the container's user; the weights' FUSE mount is owned by
    run_as_user). That a non-root user may open the TPU devices of a GKE TPU node is not confirmed, so TPU
    pods stay root, still without any capability, privilege escalation or writable root filesystem.
    """
    return not spec.shape.is_tpu


def pod_security(spec: FleetSpec) -> dict[str, Any]:
    """The pod's security context: the container runtime's default seccomp profile, non-root on GPU."""
    context: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if runs_as_non_root(spec):
        context |= {"runAsNonRoot": True, "runAsUser": spec.run_as_user, "runAsGroup": spec.run_as_group}
    return context


def container_security(spec: FleetSpec) -> dict[str, Any]:
    """No capability, no privilege escalation, a read-only root filesystem (HOME and /tmp are emptyDirs)."""
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if runs_as_non_root(spec):
        context["runAsNonRoot"] = True
    return context


def _environment(spec: FleetSpec) -> dict[str, str]:
    """The stack's env over the paths a read-only root needs: caches under HOME, and a user name (torch
    asks `getpass.getuser()`, which fails for a uid the image's /etc/passwd does not list)."""
    return {"HOME": HOME_DIR, "USER": "vllm", "TMPDIR": TMP_DIR, **spec.env}


def _command(spec: FleetSpec) -> list[str]:
    """The shell that checks the API key file, then execs the route guard's launcher: `$0` is "vllm"."""
    return ["/bin/sh", "-c", LAUNCH, "vllm", *spec.serving_command]


def deployment(spec: FleetSpec) -> dict[str, Any]:
    """vLLM pods, each tensor parallel over the accelerators it requests (a node's all, or a divisor of them so
    that several pods share a node); the HPA owns the replica count."""
    resource = pod_resource(spec.shape)
    resources = {"cpu": f"{spec.cpu:g}", "memory": f"{spec.memory_gib:g}Gi", resource: str(spec.pod_accelerators)}
    container = {
        "name": GKE_SERVING_CONTAINER,
        "image": spec.image,
        "command": _command(spec),
        "args": list(spec.serve_args),
        "ports": [{"name": "http", "containerPort": spec.port}],
        "env": [
            *({"name": key, "value": value} for key, value in sorted(_environment(spec).items())),
            *(
                {"name": key, "value": pulumi.Output.concat("gs://", spec.bucket, "/", path)}
                for key, path in sorted(spec.bucket_env.items())
            ),
        ],
        "resources": {"requests": resources, "limits": resources},
        "volumeMounts": [
            {"name": "models", "mountPath": spec.mount_path, "readOnly": True},
            {"name": "api-key", "mountPath": SECRETS_DIR, "readOnly": True},
            {"name": "dshm", "mountPath": "/dev/shm"},  # noqa: S108 - the pod's shared memory, not a temp file
            {"name": "home", "mountPath": HOME_DIR},
            {"name": "tmp", "mountPath": TMP_DIR},
        ],
        # The window covers the load: a pod killed mid-load restarts the load from scratch, forever.
        "startupProbe": _probe("/health", period=PROBE_PERIOD_SECONDS, failures=spec.startup_failure_threshold),
        "readinessProbe": _probe("/health", period=5, failures=3),
        "livenessProbe": _probe("/health", period=15, failures=4, timeout=10),
        "securityContext": container_security(spec),
    }
    pod_spec = {
        "serviceAccountName": spec.name,
        "nodeSelector": node_labels(spec.shape),
        "tolerations": [{"key": resource, "operator": "Exists", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 60,
        "securityContext": pod_security(spec),
        # The pods call no Kubernetes API: no token mounted for whoever gets a shell in one.
        "automountServiceAccountToken": False,
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
            {"name": "home", "emptyDir": {"sizeLimit": "20Gi"}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}},
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
    """An InferencePool over the fleet's pods naming `endpoint_picker` (the inference gateway builds its own
    pools with their pickers: components/gke/gateway_manifests.py)."""
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


def network_policy(spec: FleetSpec) -> dict[str, Any]:
    """Default deny for the vLLM pods: only Managed Prometheus's collectors, the named client ranges (the
    gateway's proxy-only subnet, the internal Service's clients), Google's health checkers and the named peers
    (the endpoint pickers) reach the vLLM port, and nothing reaches any other port.

    Why: the route guard in each pod answers /metrics without the key to whoever is not a client (the
    collectors and pickers scrape without one), so the network must admit no one else; and no pod of the
    cluster, nor any address of the VPC, needs the port otherwise. Enforced by GKE Dataplane V2 (the created
    cluster turns it on; an existing cluster must enforce NetworkPolicy, docs/gke.md).
    """
    public = spec.allowed_source_ranges if spec.public_endpoint else ()
    clients = list(dict.fromkeys([*spec.client_ranges, *public, *HEALTH_CHECK_RANGES]))
    peers: list[Any] = [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GMP_NAMESPACE}},
            "podSelector": {"matchLabels": dict(GMP_COLLECTOR_LABELS)},
        },
        *({"ipBlock": {"cidr": cidr}} for cidr in clients),
        *(dict(peer) for peer in spec.admitted_peers),
    ]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(spec, f"{spec.name}-ingress"),
        "spec": {
            "podSelector": {"matchLabels": spec.selector},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": peers, "ports": [{"protocol": "TCP", "port": spec.port}]}],
        },
    }
