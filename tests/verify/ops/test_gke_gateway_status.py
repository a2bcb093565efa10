"""`verify status` for a fleet behind the inference gateway, against fakes of the Kubernetes API.

The Gateway and InferencePool bodies follow their CRDs (gateway-api v1.3.0 `GatewayStatus`,
gateway-api-inference-extension v1.6.0 `InferencePoolStatus`); a test below validates each fixture, status
included, against the CRD schemas the manifests are checked with (tests/kubernetes/crds/SOURCE.md), and the
picker's Deployment against the Kubernetes 1.34 schema. Guards against: a fleet reported ready while its
Gateway has no address, while the gateway refused its pool, or while its endpoint picker is down (the pool
then routes round robin), and a status that still shows the Service's address instead of the gateway's.
"""

from __future__ import annotations

import pytest

from tests.kubernetes.manifests import validate
from tests.verify.ops.google_fake import FakeGoogle, fixture, fixture_text
from tests.verify.ops.scenarios import PROJECT
from tests.verify.ops.test_gke_status import PODS, fleet_routes, gateway_routes, status
from verify.ops.status import RolloutState

GATEWAY_FIXTURES = (
    "crd_gateway_programmed.json",
    "crd_gateway_pending.json",
    "crd_inferencepool_accepted.json",
    "k8s_picker_deployment_ready.json",
    "k8s_picker_deployment_unready.json",
)


def _ready(fake: FakeGoogle) -> None:
    fleet_routes(fake, deployment="k8s_deployment_ready.json", pods="k8s_pods_ready.json", hpa="k8s_hpa_ready.json")


@pytest.mark.parametrize("name", GATEWAY_FIXTURES)
def test_the_fixtures_match_the_published_schemas(name: str) -> None:
    """A fake that drifts from the real API shape would prove nothing about the real cluster."""
    validate(fixture_text(name, FLEET="gemma-gke-tpu-v6e-vllm"), "1.34")


def test_a_ready_fleet_shows_its_gateway_pool_and_picker(fake: FakeGoogle) -> None:
    """The gateway's address is the endpoint users call; the pool's ready endpoints and picker are shown."""
    _ready(fake)
    report = status(fake)
    assert report.state is RolloutState.READY
    gke = report.gke
    assert gke is not None
    assert gke.gateway is not None
    assert gke.endpoint == "http://10.128.0.50"
    assert gke.gateway.gateway == "gemma-gke-tpu-v6e-vllm-gateway: programmed at 10.128.0.50"
    (pool,) = gke.gateway.pools
    assert pool.startswith("gemma-gke-tpu-v6e-vllm: accepted by gemma-gke-tpu-v6e-vllm-gateway; ")
    assert "endpoint(s) ready" in pool
    assert pool.endswith("picker gemma-gke-tpu-v6e-vllm-epp 1/1 ready")


def test_a_gateway_without_an_address_is_not_ready(fake: FakeGoogle) -> None:
    """Pods ready but the load balancer not programmed: users reach nothing yet, so not `ready`."""
    _ready(fake)
    gateway_routes(fake, gateway="crd_gateway_pending.json")
    report = status(fake)
    assert report.state is RolloutState.IN_PROGRESS
    assert "the Gateway is not programmed (Pending: Waiting for the load balancer to be provisioned)" in report.summary


def test_a_picker_down_is_said_as_round_robin(fake: FakeGoogle) -> None:
    """FailOpen keeps traffic flowing without the picker, but without its routing: status says so."""
    _ready(fake)
    gateway_routes(fake, picker="k8s_picker_deployment_unready.json")
    report = status(fake)
    assert report.state is RolloutState.IN_PROGRESS
    assert "endpoint picker gemma-gke-tpu-v6e-vllm-epp is not ready: the pool routes round robin" in report.summary


def test_a_pool_the_gateway_did_not_accept_is_reported(fake: FakeGoogle) -> None:
    """ResolvedRefs False (the picker Service the pool names does not exist): no traffic reaches the pool."""
    pool = fixture_text("crd_inferencepool_accepted.json", FLEET="gemma-gke-tpu-v6e-vllm")
    condition = pool["status"]["parents"][0]["conditions"][1]
    condition.update(status="False", reason="InvalidExtensionRef", message="Service gemma/x-epp not found")
    _ready(fake)
    gateway_routes(fake, pool_body=pool)
    report = status(fake)
    assert report.state is RolloutState.IN_PROGRESS
    assert "InvalidExtensionRef: Service gemma/x-epp not found" in report.summary


def test_pods_of_the_pool_are_counted_by_its_selector(fake: FakeGoogle) -> None:
    """The endpoints line counts the pods the pool selects (its matchLabels), ready ones apart."""
    seen: list[str] = []

    def pods(_match: object, query: dict[str, list[str]], _body: object) -> tuple[int, object]:
        seen.append(query.get("labelSelector", [""])[0])
        return 200, fixture("k8s_pods_ready.json")

    _ready(fake)
    fake.route("GET", PODS, pods)  # type: ignore[arg-type]
    status(fake)
    assert "app=gemma-gke-tpu-v6e-vllm" in seen


def test_verify_status_for_the_l4_fleet_reports_gateway_pool_and_picker(fake: FakeGoogle) -> None:
    """`verify status --stack gke-l4x4`: the L4 example (31B, two replicas) behind its gateway, read from the
    same fakes under its own names: its Gateway's address, its pool's endpoints and its picker."""
    name = "gemma-gke-l4x4-vllm"
    k8s = "/k8s/apis"
    fake.route(
        "GET",
        rf"/container/v1/projects/{PROJECT}/locations/us-central1/clusters/gemma-gke-l4x4",
        fixture("gke_cluster_running.json"),
    )
    fake.route("GET", rf"{k8s}/apps/v1/namespaces/gemma/deployments/{name}", fixture("k8s_deployment_ready.json"))
    fake.route("GET", PODS, fixture("k8s_pods_ready.json"))
    fake.route(
        "GET", rf"{k8s}/autoscaling/v2/namespaces/gemma/horizontalpodautoscalers/{name}", fixture("k8s_hpa_ready.json")
    )
    fake.route("GET", rf"/k8s/api/v1/namespaces/gemma/services/{name}", fixture("k8s_service.json"))
    fake.route(
        "GET",
        rf"{k8s}/gateway.networking.k8s.io/v1/namespaces/gemma/gateways/{name}-gateway",
        fixture_text("crd_gateway_programmed.json", FLEET=name),
    )
    fake.route(
        "GET",
        rf"{k8s}/inference.networking.k8s.io/v1/namespaces/gemma/inferencepools/{name}",
        fixture_text("crd_inferencepool_accepted.json", FLEET=name),
    )
    fake.route(
        "GET",
        rf"{k8s}/apps/v1/namespaces/gemma/deployments/{name}-epp",
        fixture_text("k8s_picker_deployment_ready.json", FLEET=name),
    )
    report = status(fake, stack_name="gke-l4x4")
    assert report.state is RolloutState.READY, report.summary
    gke = report.gke
    assert gke is not None
    assert gke.gateway is not None
    assert gke.endpoint == "http://10.128.0.50"
    assert gke.gateway.gateway == f"{name}-gateway: programmed at 10.128.0.50"
    (pool,) = gke.gateway.pools
    assert pool.startswith(f"{name}: accepted by {name}-gateway; ")
    assert pool.endswith(f"picker {name}-epp 1/1 ready")
