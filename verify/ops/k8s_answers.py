"""A GKE fleet's answers as `verify status` reads them: the GKE API's Cluster and the Kubernetes objects.

Why models at the edge (as verify/ops/answers.py for Google's APIs): a body of the wrong shape must read as
"could not check", never as "not deployed". Fields are named and typed as the sources define them: the
GKE API's `Cluster`, `NodePool`, `NodePoolAutoscaling`, `ControlPlaneEndpointsConfig` (container.v1.json,
googleapis/google-api-python-client discovery_cache) and the Kubernetes OpenAPI definitions
`io.k8s.api.apps.v1.Deployment`,
`io.k8s.api.core.v1.PodList`/`Pod`/`ContainerStatus`, `io.k8s.api.core.v1.EventList`,
`io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler`, `io.k8s.api.core.v1.Service` (kubernetes 1.34).
Unknown fields are ignored; every text is escaped like Google's.
"""

from __future__ import annotations

import pydantic

from remote.google_errors import GoogleText


class _Answer(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


# --- GKE API v1 ------------------------------------------------------------------------------------------


class _Autoscaling(_Answer):
    enabled: bool = False
    total_min_node_count: int | None = pydantic.Field(default=None, alias="totalMinNodeCount")
    total_max_node_count: int | None = pydantic.Field(default=None, alias="totalMaxNodeCount")


class _NodeConfig(_Answer):
    machine_type: GoogleText = pydantic.Field(default="", alias="machineType")


class GkeNodePool(_Answer):
    name: GoogleText = ""
    status: GoogleText = "STATUS_UNSPECIFIED"
    status_message: GoogleText = pydantic.Field(default="", alias="statusMessage")
    config: _NodeConfig = _NodeConfig()
    autoscaling: _Autoscaling = _Autoscaling()
    locations: list[GoogleText] = pydantic.Field(default_factory=list)


class _MasterAuth(_Answer):
    cluster_ca_certificate: str = pydantic.Field(default="", alias="clusterCaCertificate")


class _DnsEndpointConfig(_Answer):
    endpoint: GoogleText = ""
    allow_external_traffic: bool = pydantic.Field(default=False, alias="allowExternalTraffic")


class _ControlPlaneEndpointsConfig(_Answer):
    dns_endpoint_config: _DnsEndpointConfig = pydantic.Field(default=_DnsEndpointConfig(), alias="dnsEndpointConfig")


class GkeCluster(_Answer):
    name: GoogleText = ""
    status: GoogleText = "STATUS_UNSPECIFIED"
    endpoint: GoogleText = ""
    master_auth: _MasterAuth = pydantic.Field(default=_MasterAuth(), alias="masterAuth")
    node_pools: list[GkeNodePool] = pydantic.Field(default_factory=list, alias="nodePools")
    control_plane_endpoints_config: _ControlPlaneEndpointsConfig = pydantic.Field(
        default=_ControlPlaneEndpointsConfig(), alias="controlPlaneEndpointsConfig"
    )

    @property
    def dns_endpoint(self) -> str | None:
        """The IAM-guarded DNS endpoint, when it takes traffic from outside Google (a private cluster's way in:
        its public IP endpoint may be off)."""
        dns = self.control_plane_endpoints_config.dns_endpoint_config
        return dns.endpoint if dns.endpoint and dns.allow_external_traffic else None


# --- Kubernetes ------------------------------------------------------------------------------------------


class _Meta(_Answer):
    name: GoogleText = ""


class _DeploymentSpec(_Answer):
    replicas: int | None = None


class _DeploymentStatus(_Answer):
    replicas: int = 0
    ready_replicas: int = pydantic.Field(default=0, alias="readyReplicas")
    updated_replicas: int = pydantic.Field(default=0, alias="updatedReplicas")


class Deployment(_Answer):
    metadata: _Meta = _Meta()
    spec: _DeploymentSpec = _DeploymentSpec()
    status: _DeploymentStatus = _DeploymentStatus()


class Condition(_Answer):
    type: GoogleText = ""
    status: GoogleText = ""
    reason: GoogleText = ""
    message: GoogleText = ""


class _Waiting(_Answer):
    reason: GoogleText = ""
    message: GoogleText = ""


class _Terminated(_Answer):
    exit_code: int | None = pydantic.Field(default=None, alias="exitCode")
    reason: GoogleText = ""


class _ContainerState(_Answer):
    waiting: _Waiting | None = None
    terminated: _Terminated | None = None


class ContainerStatus(_Answer):
    name: GoogleText = ""
    ready: bool = False
    restart_count: int = pydantic.Field(default=0, alias="restartCount")
    state: _ContainerState = _ContainerState()
    last_state: _ContainerState = pydantic.Field(default=_ContainerState(), alias="lastState")


class _PodStatus(_Answer):
    phase: GoogleText = "Unknown"
    conditions: list[Condition] = pydantic.Field(default_factory=list)
    container_statuses: list[ContainerStatus] = pydantic.Field(default_factory=list, alias="containerStatuses")


class Pod(_Answer):
    metadata: _Meta = _Meta()
    status: _PodStatus = _PodStatus()

    def condition(self, kind: str) -> Condition | None:
        return next((condition for condition in self.status.conditions if condition.type == kind), None)


class PodList(_Answer):
    items: list[Pod] = pydantic.Field(default_factory=list)


class _Source(_Answer):
    component: GoogleText = ""


class Event(_Answer):
    reason: GoogleText = ""
    message: GoogleText = ""
    type: GoogleText = ""
    last_timestamp: GoogleText | None = pydantic.Field(default=None, alias="lastTimestamp")
    source: _Source = _Source()


class EventList(_Answer):
    items: list[Event] = pydantic.Field(default_factory=list)


class _HpaSpec(_Answer):
    min_replicas: int = pydantic.Field(default=1, alias="minReplicas")
    max_replicas: int = pydantic.Field(default=1, alias="maxReplicas")


class _HpaStatus(_Answer):
    current_replicas: int = pydantic.Field(default=0, alias="currentReplicas")
    desired_replicas: int = pydantic.Field(default=0, alias="desiredReplicas")
    conditions: list[Condition] = pydantic.Field(default_factory=list)


class Autoscaler(_Answer):
    spec: _HpaSpec = _HpaSpec()
    status: _HpaStatus = _HpaStatus()


class _Ingress(_Answer):
    ip: GoogleText = ""
    hostname: GoogleText = ""


class _LoadBalancer(_Answer):
    ingress: list[_Ingress] = pydantic.Field(default_factory=list)


class _ServiceStatus(_Answer):
    load_balancer: _LoadBalancer = pydantic.Field(default=_LoadBalancer(), alias="loadBalancer")


class Service(_Answer):
    status: _ServiceStatus = _ServiceStatus()
