"""Settings of a GKE fleet: the cluster, one accelerator node pool, the vLLM replicas and their endpoint.

Why a model of its own: a fleet outgrows one node by adding nodes of one shape, and each shape has rules
the hand-made deployments learnt one failed rollout at a time (a G2 machine has a fixed number of GPUs, a
replica that does not use all of them wastes the node, a zone without the accelerator never schedules,
an HPA allowed more replicas than the pool has nodes leaves pods pending forever). The block is checked
here against its machine type as the shapes table resolves it (serving/shapes.py), and against the rest of
the stack (vLLM's tensor parallel, the model's weights, the region) by `GkeStack` in stacks/gke_stack.py.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from typing import Annotated, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from policy.source_ranges import allowed_text, checked_cidr, describe, too_wide
from serving.container import VLLM_PORT
from serving.gcp_names import VPC_NAME, is_system_namespace, region_of
from serving.gke_machines import SUPPORTED_KUBERNETES_VERSIONS, allocatable_memory_gib, allocatable_vcpu
from serving.shapes import ResolvedShape, resolved, resolved_shapes
from stacks.base import SettingsModel
from stacks.bounds import (
    MAX_ACCELERATORS_PER_NODE,
    MAX_MEMORY_GIB,
    MAX_NODES,
    MAX_NUM_SEQS,
    MAX_REPLICAS,
    MAX_STABILIZATION_SECONDS,
    MAX_VCPUS,
)
from stacks.cloud_run import GcsMountSettings, plain_env
from stacks.gke_rollout import GkeRolloutSettings
from stacks.system_machine import system_machine_problem
from stacks.tpu import Duration

# Every regional subnet of an auto-mode VPC (the `default` network) is inside this block
# (cloud.google.com/vpc/docs/subnets#ip-ranges, "auto mode IPv4 ranges"): the internal Service's clients
# there, and the nodes traffic may arrive from after the load balancer.
AUTO_MODE_SUBNETS = ("10.128.0.0/9",)
# A cluster's full name, or its bare name (then gke.cluster.location says where it is).
_CLUSTER_PATH = re.compile(r"^projects/([^/]+)/locations/([a-z0-9-]+)/clusters/([a-z][-a-z0-9]{0,38}[a-z0-9])$")
_CLUSTER_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# Spot and flex-start nodes may be reclaimed; a PDB keeps voluntary disruptions (upgrades, scale-down) to one.


class NodeProvisioning(enum.StrEnum):
    """How the node pool obtains its machines."""

    # Standard VMs from on-demand quota: never preempted.
    ON_DEMAND = "on-demand"
    # Spot VMs: cheapest, preemptible at any time (preemptible quota).
    SPOT = "spot"
    # Flex-start (Dynamic Workload Scheduler): a node when capacity frees up, kept at most maxRunDuration.
    FLEX_START = "flex-start"


def _narrow_ranges(ranges: tuple[str, ...], key: str, door: str) -> tuple[str, ...]:
    """CIDR ranges that together are not the internet (0.0.0.0/0 in any combination is refused)."""
    checked: list[str] = []
    for value in ranges:
        try:
            checked.append(checked_cidr(value))
        except ValueError as error:
            raise ValueError(f"{key}: {error}") from None
    wide = too_wide(checked)
    if wide:
        raise ValueError(
            f"{key} {checked} together let in {'; '.join(describe(item) for item in wide)}; {door}. "
            f"Allowed: {allowed_text()}"
        )
    return tuple(checked)


def _private_v4(value: str, key: str, wanted: str) -> ipaddress.IPv4Network:
    """A private IPv4 CIDR, or a ValueError naming the key and what is wanted."""
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as error:
        raise ValueError(f"{key} {value!r}: {error}") from None
    if not isinstance(network, ipaddress.IPv4Network) or not network.is_private:
        raise ValueError(f"{key} {value!r}: {wanted}")
    return network


class ControlPlaneSettings(SettingsModel):
    """Who reaches the cluster's Kubernetes API.

    Default: its IP endpoints take no traffic from outside the VPC (the public IP endpoint is off), and
    Pulumi, kubectl and `verify status` reach it through its DNS endpoint, which Google authenticates
    with IAM (`container.clusters.connect`) before Kubernetes RBAC: what GKE's network isolation guide
    calls the best practice. `publicEndpoint: true` opens the public IP endpoint, to the
    authorizedNetworks only.
    """

    public_endpoint: bool = False
    # IPv4 CIDRs allowed on the public IP endpoint (GKE's authorized networks take IPv4 only, at most 100).
    authorized_networks: tuple[str, ...] = Field(default=(), max_length=100)

    @field_validator("authorized_networks")
    @classmethod
    def _narrow(cls, ranges: tuple[str, ...]) -> tuple[str, ...]:
        checked = _narrow_ranges(
            ranges,
            "gke.cluster.controlPlane.authorizedNetworks",
            "the Kubernetes API of a cluster whose nodes hold the model and its API key would answer them",
        )
        v6 = [value for value in checked if ":" in value]
        if v6:
            raise ValueError(f"gke.cluster.controlPlane.authorizedNetworks {v6}: GKE takes IPv4 ranges only")
        return checked

    @model_validator(mode="after")
    def _public_needs_ranges(self) -> Self:
        if self.public_endpoint and not self.authorized_networks:
            raise ValueError(
                "gke.cluster.controlPlane.authorizedNetworks: publicEndpoint is true, so name the IPv4 CIDRs "
                "allowed to reach the Kubernetes API (e.g. [203.0.113.0/24]); or leave it false and use the "
                "IAM-guarded DNS endpoint"
            )
        if self.authorized_networks and not self.public_endpoint:
            raise ValueError(
                "gke.cluster.controlPlane.authorizedNetworks applies only with publicEndpoint: true (the public "
                "IP endpoint is off otherwise)"
            )
        return self


class ClusterSettings(SettingsModel):
    """The Standard cluster the fleet runs in: one the stack creates, or one that already exists."""

    # Unset: the stack creates a Standard cluster `gemma-<stack>` in the stack's region. Set: an existing
    # cluster (`projects/<p>/locations/<l>/clusters/<name>`, or its name with gke.cluster.location); it must
    # have Workload Identity, the GCS FUSE CSI driver, the Secret Manager add-on and Managed Prometheus.
    existing: str | None = None
    # Where an existing cluster named by its bare name lives (region or zone).
    location: str | None = None
    # The minor version the stack pins (the control plane's minimum); every manifest is validated against
    # this version's OpenAPI schema in the tests.
    kubernetes_version: str = "1.34"
    release_channel: Literal["REGULAR", "STABLE", "RAPID"] = "REGULAR"
    network: str = "default"
    subnetwork: str | None = None
    # The small CPU pool beside the accelerators (kube-dns, the metrics adapter, Managed Prometheus).
    system_machine_type: str = "e2-standard-4"
    deletion_protection: bool = True
    control_plane: ControlPlaneSettings = ControlPlaneSettings()
    # Private nodes have no external IP: Cloud NAT in the region gives them egress to the internet (Hugging
    # Face, registries outside Google); Google APIs go through Private Google Access, which GKE turns on for
    # the subnet of a private cluster. false: the network already has Cloud NAT (or needs no internet).
    cloud_nat: bool = True

    @field_validator("network", "subnetwork")
    @classmethod
    def _network_name(cls, value: str | None) -> str | None:
        """As tpu.network: a VPC name is lowercase (`Default` is not the `default` network) or a full path."""
        if value is not None and not VPC_NAME.match(value):
            raise ValueError(
                f"{value!r} is not a VPC network/subnetwork name (lowercase letters, digits, '-') or a "
                "projects/<project>/(global|regions/<region>)/<networks|subnetworks>/<name> path"
            )
        return value

    @field_validator("system_machine_type")
    @classmethod
    def _cpu_machine_type(cls, value: str) -> str:
        problem = system_machine_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("kubernetes_version")
    @classmethod
    def _pinned_version(cls, value: str) -> str:
        if value not in SUPPORTED_KUBERNETES_VERSIONS:
            raise ValueError(
                f"gke.cluster.kubernetesVersion {value!r}: allowed {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} "
                "(the versions whose Kubernetes schema the tests validate the manifests against)"
            )
        return value

    @model_validator(mode="after")
    def _existing_named_fully(self) -> Self:
        if self.existing is not None:
            wrote = [key for key in ("control_plane", "cloud_nat") if key in self.model_fields_set]
            if wrote:
                raise ValueError(
                    f"gke.cluster.{to_camel(wrote[0])} applies only to a cluster the stack creates; an existing "
                    "cluster is read, never changed"
                )
        if self.existing is None:
            if self.location is not None:
                raise ValueError("gke.cluster.location applies only to an existing cluster; remove it")
            return self
        if _CLUSTER_PATH.match(self.existing):
            if self.location is not None:
                raise ValueError("gke.cluster.location: the existing cluster's path already names its location")
        elif _CLUSTER_NAME.match(self.existing):
            if self.location is None:
                raise ValueError(
                    f"gke.cluster.location: say where the existing cluster {self.existing!r} is (a region or zone)"
                )
        else:
            raise ValueError(
                f"gke.cluster.existing {self.existing!r}: write projects/<p>/locations/<l>/clusters/<name> or a "
                "cluster name (lowercase letters, digits, '-')"
            )
        return self

    @property
    def existing_location(self) -> str | None:
        if self.existing is None:
            return None
        match = _CLUSTER_PATH.match(self.existing)
        return match.group(2) if match else self.location

    @property
    def existing_name(self) -> str | None:
        if self.existing is None:
            return None
        match = _CLUSTER_PATH.match(self.existing)
        return match.group(3) if match else self.existing


class NodePoolSettings(SettingsModel):
    """The accelerator node pool: one vLLM replica per node, or several when tensor parallel divides a GPU
    node's accelerators (vllm.tensorParallelSize 2 on a 4-GPU node: two replicas of two GPUs each)."""

    machine_type: str
    # Accelerators per node; unset means the machine type's (G2 and ct6e types have a fixed count).
    accelerator_count: int | None = Field(default=None, ge=1, le=MAX_ACCELERATORS_PER_NODE)
    # Zones of the stack's region that offer the accelerator; the autoscaler picks among them.
    zones: tuple[str, ...] = Field(min_length=1)
    provisioning: NodeProvisioning = NodeProvisioning.SPOT
    # flex-start only: the longest a node is kept (Google's limit is 7 days).
    max_run_duration: Duration | None = None
    # The cluster autoscaler's bounds, over all zones. 0 lets an idle fleet cost nothing for accelerators.
    min_nodes: int = Field(default=0, ge=0, le=MAX_NODES)
    max_nodes: int = Field(ge=1, le=MAX_NODES)
    disk_size_gb: int = Field(default=200, ge=50, le=65536)

    @field_validator("machine_type")
    @classmethod
    def _known(cls, value: str) -> str:
        allowed = [machine.name for machine in resolved_shapes(platform="gke")]
        if value not in allowed:
            raise ValueError(
                f"gke.nodePool.machineType {value!r} is not an accelerator machine type this project knows; "
                f"allowed: {', '.join(allowed)} (serving/data/shapes.json)"
            )
        return value

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        shape = self.shape
        if self.accelerator_count is not None and self.accelerator_count != shape.chips:
            raise ValueError(
                f"gke.nodePool.acceleratorCount {self.accelerator_count}: {self.machine_type} comes with exactly "
                f"{shape.chips} accelerator(s); allowed: {shape.chips} (or leave it unset)"
            )
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"gke.nodePool.minNodes {self.min_nodes} exceeds gke.nodePool.maxNodes {self.max_nodes}")
        if self.provisioning is NodeProvisioning.FLEX_START:
            run = self.max_run_duration
            if run is not None and not 10 * 60 <= run <= 7 * 24 * 3600:
                raise ValueError(f"gke.nodePool.maxRunDuration {run}s: allowed between 10m and 7d")
        elif self.max_run_duration is not None:
            raise ValueError(
                f"gke.nodePool.maxRunDuration applies only to provisioning flex-start, not {self.provisioning.value}"
            )
        if len(set(self.zones)) != len(self.zones):
            raise ValueError(f"gke.nodePool.zones {list(self.zones)}: a zone is listed twice")
        regions = sorted({region_of(zone) for zone in self.zones})
        if len(regions) != 1:
            raise ValueError(f"gke.nodePool.zones {list(self.zones)}: all zones must be in one region, not {regions}")
        return self

    @property
    def shape(self) -> ResolvedShape:
        """The machine type resolved once (serving/shapes.py): what the rules, the node pool and the pods read."""
        return resolved(self.machine_type)

    @property
    def region(self) -> str:
        return region_of(self.zones[0])


class ReplicaSettings(SettingsModel):
    """How many vLLM replicas run, and what makes the HPA add one."""

    # The HPA's bounds. On the pinned versions (1.34, 1.35) the HPA cannot go below 1 (scale-to-zero is Beta
    # from Kubernetes 1.37, docs/gke.md); `parked: true` sets the Deployment to 0 replicas instead, and the
    # nodes follow to 0.
    min: int = Field(default=1, ge=1, le=MAX_REPLICAS)
    max: int = Field(ge=1, le=MAX_REPLICAS)
    parked: bool = False
    # The HPA's target: vLLM's queue (`vllm:num_requests_waiting`) averaged per pod. GKE's inference
    # autoscaling guidance scales on the queue for throughput and cost.
    target_waiting_per_pod: int = Field(default=5, ge=1, le=MAX_NUM_SEQS)
    # How long the queue must stay low before a replica (and its node) is removed.
    scale_down_stabilization: Annotated[Duration, Field(le=MAX_STABILIZATION_SECONDS)] = 600

    @model_validator(mode="after")
    def _bounds(self) -> Self:
        if self.min > self.max:
            raise ValueError(f"gke.replicas.min {self.min} exceeds gke.replicas.max {self.max}")
        return self


class ServiceSettings(SettingsModel):
    """How traffic reaches the pods: an internal load balancer unless the stack asks otherwise."""

    # false (default): an internal passthrough load balancer, reachable from the VPC only. true: an external
    # one, reachable only from allowedSourceRanges (never 0.0.0.0/0 or ::/0, alone or together).
    public_endpoint: bool = False
    allowed_source_ranges: tuple[str, ...] = ()
    # Who calls the pods through the internal Service (and a gated fleet's candidate Service): the VPC ranges
    # of the clients, the only addresses besides the gateway's proxies, the endpoint pickers and Managed
    # Prometheus that the pods' NetworkPolicy admits. Unset on the `default` network: its regional subnets
    # (AUTO_MODE_SUBNETS); on another network a fleet reached through its internal Service must name them.
    client_ranges: tuple[str, ...] = ()
    # Kept for stacks that set it: true asks for the inference gateway (gke.gateway), whose InferencePool
    # comes with its endpoint picker and Gateway (docs/gke.md).
    inference_pool: bool = False

    @field_validator("allowed_source_ranges", "client_ranges")
    @classmethod
    def _no_open_ranges(cls, ranges: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        key = f"gke.service.{to_camel(info.field_name or '')}"
        return _narrow_ranges(ranges, key, "the pods' NetworkPolicy admits these ranges to the vLLM port")

    @model_validator(mode="after")
    def _public_needs_ranges(self) -> Self:
        if self.public_endpoint and not self.allowed_source_ranges:
            raise ValueError(
                "gke.service.allowedSourceRanges: publicEndpoint is true, so name the CIDRs allowed to reach the "
                "vLLM port (e.g. [203.0.113.0/24])"
            )
        if self.allowed_source_ranges and not self.public_endpoint:
            raise ValueError(
                "gke.service.allowedSourceRanges applies only with publicEndpoint: true (an internal load balancer "
                "is reachable from the VPC only)"
            )
        return self


class GatewaySettings(SettingsModel):
    """`gke.gateway`: how requests reach the replicas, and what the autoscaler reads.

    `routing: gateway` puts GKE's internal Application Load Balancer in front, routing each request through
    llm-d's endpoint picker (queue, KV-cache and prefix-cache aware), and the HPA scales on the picker's
    pool averages; `routing: service` keeps the plain internal Service (round robin) and the HPA on each
    pod's queue. Unset: the gateway for a fleet that may run more than one replica, the Service otherwise.
    """

    routing: Literal["gateway", "service"] | None = None
    # The proxy-only subnet the internal load balancer's Envoy proxies take (one ACTIVE per VPC region, /23
    # or wider; outside the auto-mode block 10.128.0.0/9). null: the VPC's region already has one, whose range
    # existingProxySubnetRange names (the pods' NetworkPolicy admits the proxies from it).
    proxy_subnet_range: str | None = "192.168.254.0/23"
    existing_proxy_subnet_range: str | None = None
    # The HPA adds a replica when the pool's mean KV-cache use passes this (besides the queue target).
    target_kv_cache_utilization: float = Field(default=0.8, gt=0, le=1)

    @field_validator("existing_proxy_subnet_range")
    @classmethod
    def _existing_proxy_range(cls, value: str | None) -> str | None:
        if value is not None:
            _private_v4(
                value,
                "gke.gateway.existingProxySubnetRange",
                "the private IPv4 range of the region's proxy-only subnet "
                "(gcloud compute networks subnets list --filter=purpose=REGIONAL_MANAGED_PROXY)",
            )
        return value

    @model_validator(mode="after")
    def _one_proxy_range(self) -> Self:
        if self.proxy_subnet_range is not None and self.existing_proxy_subnet_range is not None:
            raise ValueError(
                "gke.gateway.existingProxySubnetRange names a proxy-only subnet the VPC already has; the stack "
                "creates one at gke.gateway.proxySubnetRange: set one of them (proxySubnetRange: null for an "
                "existing one)"
            )
        return self

    @property
    def proxy_range(self) -> str | None:
        """The proxy-only subnet's range, created or existing (None: an existing one the stack cannot name)."""
        return self.proxy_subnet_range or self.existing_proxy_subnet_range

    @field_validator("proxy_subnet_range")
    @classmethod
    def _proxy_range(cls, value: str | None) -> str | None:
        if value is None:
            return None
        key = "gke.gateway.proxySubnetRange"
        network = _private_v4(value, key, "a private IPv4 range of /23 or wider (e.g. 192.168.254.0/23)")
        if network.prefixlen > 23:
            raise ValueError(f"{key} {value!r}: a private IPv4 range of /23 or wider (e.g. 192.168.254.0/23)")
        if network.overlaps(ipaddress.ip_network("10.128.0.0/9")):
            raise ValueError(
                f"gke.gateway.proxySubnetRange {value!r} overlaps 10.128.0.0/9, which auto-mode VPCs (the "
                "`default` network) give their regional subnets; pick a range outside it"
            )
        return value


class GkeSettings(SettingsModel):
    """Everything a GKE stack says about its fleet (the `gke:` block of the stack settings)."""

    cluster: ClusterSettings = ClusterSettings()
    node_pool: NodePoolSettings
    replicas: ReplicaSettings
    service: ServiceSettings = ServiceSettings()
    rollout: GkeRolloutSettings = GkeRolloutSettings()
    gateway: GatewaySettings = GatewaySettings()
    # Install the Custom Metrics Stackdriver Adapter the HPA reads through (components/gke/metrics_adapter.py).
    # false only for an existing cluster that already runs it (two adapters fight over the same APIServices).
    metrics_adapter: bool = True
    namespace: str = "gemma"
    port: int = Field(default=VLLM_PORT, ge=1024, le=65535)
    # The vLLM container's requests (= limits). Unset: 80% of what the node can allocate.
    cpu: float | None = Field(default=None, gt=0, le=MAX_VCPUS)
    memory_gib: float | None = Field(default=None, gt=0, le=MAX_MEMORY_GIB)
    # How long loading the weights (and compiling, on TPU) may take: the startup probe's window.
    model_load_seconds: Duration = 1800
    env: dict[str, str] = Field(default_factory=dict)
    mount: GcsMountSettings = GcsMountSettings()

    @field_validator("namespace")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _DNS_LABEL.match(value):
            raise ValueError(f"gke.namespace {value!r}: a DNS label (lowercase letters, digits, '-')")
        if is_system_namespace(value):
            raise ValueError(
                f"{value!r} belongs to Kubernetes or GKE (default, kube-*, gke-*, gmp-*, and the "
                "add-ons' own): the stack's pods, account and secrets would sit beside the cluster's; allowed: a "
                "namespace of the stack's own, e.g. gemma (the default)"
            )
        return value

    @field_validator("env")
    @classmethod
    def _plain_env(cls, env: dict[str, str]) -> dict[str, str]:
        return plain_env(env, key="gke.env")

    @field_validator("model_load_seconds")
    @classmethod
    def _load_window(cls, seconds: int) -> int:
        if not 60 <= seconds <= 4 * 3600:
            raise ValueError(f"gke.modelLoadSeconds {seconds}s: allowed between 1m and 4h")
        return seconds

    @model_validator(mode="after")
    def _fits_the_node(self) -> Self:
        shape = self.node_pool.shape
        if not shape.is_tpu and self.mount.uid == 0:
            raise ValueError(
                "gke.mount.uid 0: GKE GPU pods run as a non-root user (runAsNonRoot), the owner of the mounted "
                "weights; allowed: a uid >= 1 (default 1001)"
            )
        # replicas.max against the nodes: stacks/gke_rules.py, which knows how many replicas share a node.
        if self.cpu is not None and self.cpu > allocatable_vcpu(shape):
            raise ValueError(
                f"gke.cpu {self.cpu:g}: a {shape.name} node can allocate {allocatable_vcpu(shape):.2f} vCPU"
            )
        if self.memory_gib is not None and self.memory_gib > allocatable_memory_gib(shape):
            raise ValueError(
                f"gke.memoryGib {self.memory_gib:g}: a {shape.name} node can allocate "
                f"{allocatable_memory_gib(shape):.1f} GiB"
            )
        return self

    @model_validator(mode="after")
    def _routing_agrees(self) -> Self:
        if self.gateway.routing == "service" and self.service.inference_pool:
            raise ValueError(
                "gke.service.inferencePool: an InferencePool needs the inference gateway; remove it or set "
                "gke.gateway.routing: gateway"
            )
        if self.rollout.candidate_percent and not self.uses_gateway:
            raise ValueError(
                "gke.rollout.candidatePercent splits requests with the inference gateway's HTTPRoute; the fleet is "
                "reached through its Service (gke.gateway.routing: service, or one replica at most), which cannot"
            )
        return self

    @model_validator(mode="after")
    def _clients_named(self) -> Self:
        """The pods' NetworkPolicy admits named ranges only (no longer all of 10/8, 172.16/12, 192.168/16)."""
        if self.uses_gateway and self.gateway.proxy_range is None:
            raise ValueError(
                "gke.gateway.existingProxySubnetRange: gke.gateway.proxySubnetRange is null (the region's proxy-only "
                "subnet exists), so name its range: the pods' NetworkPolicy admits the gateway's proxies from it"
            )
        if not self.uses_gateway and not self.service.public_endpoint and not self.service_clients:
            raise ValueError(
                f"gke.service.clientRanges: the fleet is reached through its internal Service on network "
                f"{self.cluster.network!r}, and its pods admit only the ranges named here (besides Managed "
                "Prometheus); name your clients' subnets, or route through the inference gateway "
                "(gke.gateway.routing: gateway)"
            )
        return self

    @property
    def service_clients(self) -> tuple[str, ...]:
        """The internal Service's clients: gke.service.clientRanges, else the default network's subnets."""
        if self.service.client_ranges:
            return self.service.client_ranges
        return AUTO_MODE_SUBNETS if self.cluster.network == "default" else ()

    @property
    def client_ranges(self) -> tuple[str, ...]:
        """Who calls the pods: the gateway's proxies, the internal Service's clients, a public Service's ranges.
        The NetworkPolicy admits exactly these (and the collectors); the route guard asks them for the key on
        /metrics."""
        proxies = (self.gateway.proxy_range,) if self.uses_gateway and self.gateway.proxy_range else ()
        public = self.service.allowed_source_ranges if self.service.public_endpoint else ()
        # A gateway fleet's internal Services (a gated fleet's candidate) admit only the ranges a stack names.
        internal = self.service.client_ranges if self.uses_gateway else self.service_clients
        return tuple(dict.fromkeys((*proxies, *internal, *public)))

    @property
    def uses_gateway(self) -> bool:
        """Whether requests reach the replicas through the inference gateway (see GatewaySettings)."""
        if self.gateway.routing is not None:
            return self.gateway.routing == "gateway"
        return self.replicas.max > 1 or self.service.inference_pool

    def pod_cpu(self, replicas_per_node: int = 1) -> float:
        """The vLLM container's CPU (request = limit): the stack's, or 80% of the node's allocatable shared by
        the replicas on the node."""
        if self.cpu is not None:
            return self.cpu
        return round(allocatable_vcpu(self.node_pool.shape) * 0.8 / replicas_per_node, 1)

    def pod_memory_gib(self, replicas_per_node: int = 1) -> float:
        if self.memory_gib is not None:
            return self.memory_gib
        return float(int(allocatable_memory_gib(self.node_pool.shape) * 0.8 / replicas_per_node))

    @property
    def cluster_location(self) -> str:
        """Where the cluster is: an existing one's location, or the stack's region (a regional cluster)."""
        return self.cluster.existing_location or self.node_pool.region
