"""A GKE fleet of more than one replica is planned behind the inference gateway, scaled on the endpoint
picker's numbers through a metrics adapter the program installs itself.

Guards against: a fleet routed round robin by default; an HPA created before the adapter it reads through
(FailedGetExternalMetric until someone installs it by hand); a gateway without its proxy-only subnet (no
address, ever); a gated fleet whose route sends users to the unproven track; a picker with more rights
than reading its pool; and a vendored manifest that changed without review.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.gke.metrics_adapter import MANIFEST, VendoredManifestChangedError, adapter_manifests
from policy.gateway import GATEWAY_GUARDRAILS
from preview.capture import Capture
from preview.notes import manual_steps
from serving.naming import TypeToken
from tests.conftest import render_stack, stack_config
from tests.kubernetes.manifests import kubernetes_manifests, validate, wire_to_manifest

GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
POOL = "kubernetes:inference.networking.k8s.io/v1:InferencePool"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
APISERVICE = "kubernetes:apiregistration.k8s.io/v1:APIService"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _manifest(rendered: Capture, type_token: str, name: str | None = None) -> dict[str, Any]:
    """The one object of that type (and metadata.name), as the API server would receive it."""
    found: list[dict[str, Any]] = [wire_to_manifest(r.inputs) for r in rendered.of_type(type_token)]
    found = [m for m in found if name is None or m["metadata"]["name"] == name]
    assert len(found) == 1, (type_token, name, len(found))
    return found[0]


def _with_gke(stack: str, **changes: Any) -> dict[str, str]:
    block = json.loads(stack_config(stack).values["gemma-serving:gke"])
    for key, value in changes.items():
        block[key] = {**block.get(key, {}), **value}
    return {"gemma-serving:gke": json.dumps(block)}


@pytest.mark.parametrize("stack", ["gke-l4x4", "gke-tpu-v6e"])
def test_a_multi_replica_fleet_is_planned_behind_the_gateway(stack: str) -> None:
    """`make preview` of both fleet examples shows the Gateway, route, pool, picker and proxy-only subnet."""
    rendered = render_stack(stack)
    gateway = _manifest(rendered, GATEWAY)
    assert gateway["spec"]["gatewayClassName"] == "gke-l7-rilb"
    route = _manifest(rendered, ROUTE)
    backends = route["spec"]["rules"][0]["backendRefs"]
    assert [(b["kind"], b["name"], b["weight"]) for b in backends] == [("InferencePool", f"gemma-{stack}-vllm", 100)]
    pool = _manifest(rendered, POOL)
    assert pool["spec"]["endpointPickerRef"]["name"] == f"gemma-{stack}-vllm-epp"
    picker = _manifest(rendered, DEPLOYMENT, f"gemma-{stack}-vllm-epp")
    image = picker["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0@sha256:")
    (subnet,) = rendered.of_type(SUBNET)
    assert (subnet.inputs["purpose"], subnet.inputs["role"]) == ("REGIONAL_MANAGED_PROXY", "ACTIVE")
    notes = manual_steps(rendered)
    assert not any(note.startswith(("metrics:", "gateway:")) for note in notes)


def test_the_hpa_scales_on_the_pickers_pool_metrics_after_the_adapter() -> None:
    """The HPA reads the picker's queue and KV-cache averages for its pool, and waits for the adapter."""
    rendered = render_stack("gke-l4x4")
    hpa = _manifest(rendered, HPA)
    metrics = {m["external"]["metric"]["name"]: m for m in hpa["spec"]["metrics"]}
    assert set(metrics) == {
        "prometheus.googleapis.com|llm_d_epp_average_queue_size|gauge",
        "prometheus.googleapis.com|llm_d_epp_average_kv_cache_utilization|gauge",
    }
    for metric in metrics.values():
        assert metric["external"]["metric"]["selector"]["matchLabels"]["metric.labels.name"] == "gemma-gke-l4x4-vllm"
        assert metric["external"]["target"]["type"] == "Value"
    (hpa_resource,) = rendered.of_type(HPA)
    waits_for = set(hpa_resource.dependencies)
    apiservices = rendered.of_type(APISERVICE)
    assert len(apiservices) == 3
    assert {service.urn for service in apiservices} <= waits_for
    picker = next(r for r in rendered.of_type(DEPLOYMENT) if r.name.endswith("-epp"))
    assert picker.urn in waits_for


def test_the_adapter_reads_monitoring_as_its_own_account() -> None:
    """The adapter's KSA acts (Workload Identity) as an account that may read Cloud Monitoring, nothing else."""
    rendered = render_stack("gke-l4x4")
    (adapter,) = rendered.of_type(TypeToken.GKE_METRICS_ADAPTER)
    roles = [r.inputs["role"] for r in rendered.of_type("gcp:projects/iAMMember:IAMMember") if r.parent == adapter.urn]
    assert roles == ["roles/monitoring.viewer"]
    bindings = [
        r.inputs["member"]
        for r in rendered.of_type("gcp:serviceaccount/iAMMember:IAMMember")
        if r.parent == adapter.urn
    ]
    assert bindings == [
        "serviceAccount:offline-placeholder-project.svc.id.goog[custom-metrics/custom-metrics-stackdriver-adapter]"
    ]


def test_a_plain_service_stays_available_as_a_setting() -> None:
    """`gke.gateway.routing: service`: no gateway objects, the HPA back on each pod's vLLM queue."""
    rendered = render_stack("gke-l4x4", _with_gke("gke-l4x4", gateway={"routing": "service"}))
    assert not rendered.of_type(GATEWAY)
    assert not rendered.of_type(POOL)
    assert not rendered.of_type(SUBNET)
    hpa = _manifest(rendered, HPA)
    assert (
        hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
        == "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"
    )


def test_a_gated_fleet_splits_requests_between_the_track_pools_by_weight() -> None:
    """Two pools, one per track; the route sends candidatePercent to the candidate's pool, the rest to serving."""
    overrides = _with_gke("gke-l4x4", rollout={"gated": True, "candidatePercent": 25})
    rendered = render_stack("gke-l4x4", overrides)
    route = _manifest(rendered, ROUTE)
    weights = {b["name"]: b["weight"] for b in route["spec"]["rules"][0]["backendRefs"]}
    assert weights == {"gemma-gke-l4x4-vllm-blue": 75, "gemma-gke-l4x4-vllm-green": 25}
    blue = _manifest(rendered, POOL, "gemma-gke-l4x4-vllm-blue")
    assert blue["spec"]["selector"]["matchLabels"] == {"app": "gemma-gke-l4x4-vllm", "track": "blue"}
    hpa = _manifest(rendered, HPA)
    assert hpa["spec"]["scaleTargetRef"]["name"] == "gemma-gke-l4x4-vllm-blue"
    selectors = [
        m["external"]["metric"]["selector"]["matchLabels"]["metric.labels.name"] for m in hpa["spec"]["metrics"]
    ]
    assert set(selectors) == {"gemma-gke-l4x4-vllm-blue"}


def test_an_existing_proxy_subnet_is_named_in_the_notes() -> None:
    """proxySubnetRange null: the plan creates none and says the region must already have one."""
    existing = {"proxySubnetRange": None, "existingProxySubnetRange": "10.129.0.0/23"}
    rendered = render_stack("gke-l4x4", _with_gke("gke-l4x4", gateway=existing))
    assert not rendered.of_type(SUBNET)
    assert any(note.startswith("gateway: gke.gateway.proxySubnetRange is null") for note in manual_steps(rendered))


@pytest.mark.parametrize("stack", ["gke-l4x4", "gke-tpu-v6e"])
def test_every_gateway_and_adapter_object_validates(stack: str) -> None:
    """The gateway's, the pickers' and the adapter's objects are as valid as the fleet's own."""
    kinds = set()
    for manifest in kubernetes_manifests(render_stack(stack)):
        validate(manifest, "1.34")
        kinds.add(manifest["kind"])
    assert kinds >= {
        "Gateway",
        "HTTPRoute",
        "InferencePool",
        "HealthCheckPolicy",
        "GCPBackendPolicy",
        "Role",
        "RoleBinding",
        "ConfigMap",
        "APIService",
        "ClusterRole",
    }


@pytest.mark.parametrize("stack", ["gke-l4x4", "gke-tpu-v6e"])
def test_the_gateway_rules_pass_on_the_plan(stack: str) -> None:
    """The shipped fleets keep the gateway's promises (internal, least-privilege picker, complete pool)."""
    rendered = render_stack(stack)
    judged = 0
    for resource in rendered.resources:
        for guardrail in GATEWAY_GUARDRAILS:
            if guardrail.applies_to(resource.type):
                judged += 1
                assert guardrail.violations(resource.type, resource.inputs) == [], (guardrail.name, resource.name)
    assert judged >= 3


def test_a_changed_vendored_manifest_is_refused(tmp_path: Path) -> None:
    """An edit to the vendored adapter manifest must not reach a cluster unreviewed."""
    changed = tmp_path / "adapter.yaml"
    changed.write_bytes(MANIFEST.read_bytes().replace(b"v0.16.9-gke.0", b"v0.16.9-gke.1"))
    with pytest.raises(VendoredManifestChangedError, match="is not the pinned"):
        adapter_manifests(changed)
    assert [m["kind"] for m in adapter_manifests()][:2] == ["Namespace", "ServiceAccount"]


def test_the_picker_and_the_adapter_run_without_root_or_capabilities() -> None:
    """A shell in the picker or the adapter must get no root, no capability and no writable root filesystem;
    the adapter, no longer root, listens on 6443 (its Service keeps 443 for the APIServices)."""
    rendered = render_stack("gke-l4x4")
    for resource in rendered.of_type(DEPLOYMENT):
        manifest = wire_to_manifest(resource.inputs)
        if manifest["metadata"]["name"] not in {"gemma-gke-l4x4-vllm-epp", "custom-metrics-stackdriver-adapter"}:
            continue
        pod = manifest["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
    adapter = _manifest(rendered, DEPLOYMENT, "custom-metrics-stackdriver-adapter")
    assert "--secure-port=6443" in adapter["spec"]["template"]["spec"]["containers"][0]["command"]
    service = _manifest(rendered, "kubernetes:core/v1:Service", "custom-metrics-stackdriver-adapter")
    assert service["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 6443}]


def test_a_gateway_fleet_enables_the_network_services_api() -> None:
    """The load balancer calls the picker as a Service Extension: without networkservices.googleapis.com
    the Gateway never programs; a fleet behind its Service does not need it."""
    apis = {r.inputs["service"] for r in render_stack("gke-l4x4").of_type("gcp:projects/service:Service")}
    assert "networkservices.googleapis.com" in apis
    plain = render_stack("gke-l4x4", _with_gke("gke-l4x4", gateway={"routing": "service"}))
    assert "networkservices.googleapis.com" not in {
        r.inputs["service"] for r in plain.of_type("gcp:projects/service:Service")
    }
