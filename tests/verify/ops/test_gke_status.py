"""`verify status` (and preflight, logs) for a GKE fleet, against fakes of the GKE API and the Kubernetes API.

The Kubernetes bodies are fixtures shaped by the Kubernetes OpenAPI definitions (a test below validates each
against the 1.34 schema with kubernetes-validate); the GKE `Cluster` follows container.v1.json
(tests/verify/ops/fixtures/README.md). The fleet is the shipped example `examples/Pulumi.gke-tpu-v6e.yaml`.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import kubernetes_validate
import pytest
from rich.console import Console

from remote.google_client import GoogleApis
from tests.verify.ops.google_fake import FIXTURES, Body, FakeGoogle, fixture, fixture_text, tokens
from tests.verify.ops.scenarios import PROJECT, Project, ops_stack
from verify.ops.gke_status import GkeStatus
from verify.ops.kubernetes import KubernetesApi
from verify.ops.preflight import run_preflight
from verify.ops.render import print_status
from verify.ops.stack import GkeOpsStack
from verify.ops.status import Readiness, RolloutState, StatusReport, run_status

STACK = "gke-tpu-v6e"
CLUSTER = rf"/container/v1/projects/{PROJECT}/locations/us-east5/clusters/gemma-gke-tpu-v6e"
NAME = "gemma-gke-tpu-v6e-vllm"
K8S = "/k8s"
DEPLOYMENT = rf"{K8S}/apis/apps/v1/namespaces/gemma/deployments/{NAME}"
PODS = rf"{K8S}/api/v1/namespaces/gemma/pods"
EVENTS = rf"{K8S}/api/v1/namespaces/gemma/events"
HPA = rf"{K8S}/apis/autoscaling/v2/namespaces/gemma/horizontalpodautoscalers/{NAME}"
SERVICE = rf"{K8S}/api/v1/namespaces/gemma/services/{NAME}"
LOG = rf"{PODS}/{NAME}-7d9f8b6c5-klmno/log"


GATEWAY = rf"{K8S}/apis/gateway.networking.k8s.io/v1/namespaces/gemma/gateways/{NAME}-gateway"
POOL = rf"{K8S}/apis/inference.networking.k8s.io/v1/namespaces/gemma/inferencepools/{NAME}"
PICKER = rf"{K8S}/apis/apps/v1/namespaces/gemma/deployments/{NAME}-epp"


def gateway_routes(
    fake: FakeGoogle,
    *,
    gateway: str = "crd_gateway_programmed.json",
    pool_body: Body | None = None,
    picker: str = "k8s_picker_deployment_ready.json",
) -> None:
    """The example fleet runs behind the inference gateway (more than one replica): its Gateway, pool, picker."""
    fake.route("GET", GATEWAY, fixture_text(gateway, FLEET=NAME))
    fake.route("GET", POOL, pool_body or fixture_text("crd_inferencepool_accepted.json", FLEET=NAME))
    fake.route("GET", PICKER, fixture_text(picker, FLEET=NAME))


def fleet_routes(fake: FakeGoogle, *, deployment: str, pods: str, hpa: str, events: str | None = None) -> None:
    _fleet(fake, deployment=deployment, pods=pods, hpa=hpa, events=events)


def _fleet(fake: FakeGoogle, *, deployment: str, pods: str, hpa: str, events: str | None = None) -> None:
    gateway_routes(fake)
    fake.route("GET", CLUSTER, fixture("gke_cluster_running.json"))
    fake.route("GET", DEPLOYMENT, fixture(deployment))
    fake.route("GET", PODS, fixture(pods))
    fake.route("GET", HPA, fixture(hpa))
    fake.route("GET", SERVICE, fixture("k8s_service.json"))
    fake.route("GET", EVENTS, fixture(events) if events else {"apiVersion": "v1", "kind": "EventList", "items": []})


def status(fake: FakeGoogle, probe: object = None, stack_name: str = STACK) -> StatusReport:
    stack = ops_stack(stack_name)
    assert isinstance(stack, GkeOpsStack)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        return run_status(
            stack,
            apis,
            probe=probe,  # type: ignore[arg-type]
            kubernetes=lambda _cluster: KubernetesApi(fake.url + K8S, tokens),
        )


def _gke(report: StatusReport) -> GkeStatus:
    assert report.gke is not None
    return report.gke


def test_a_fleet_scaling_up_while_waiting_for_tpus(fake: FakeGoogle) -> None:
    """Pods Pending for want of a TPU node, the autoscaler adding nodes: in progress, with both reasons."""
    _fleet(
        fake,
        deployment="k8s_deployment_waiting.json",
        pods="k8s_pods_waiting.json",
        hpa="k8s_hpa_scaling_up.json",
        events="k8s_events_scaling_up.json",
    )
    report = status(fake)
    assert report.state is RolloutState.IN_PROGRESS
    assert report.exit_code == 1
    assert "0/2 replicas ready" in report.summary
    assert "2 pod(s) waiting for a ct6e-standard-1t node (google.com/tpu)" in report.summary
    assert "Insufficient google.com/tpu" in report.summary
    assert "TriggeredScaleUp" in report.summary
    gke = _gke(report)
    assert gke.hpa is not None
    assert gke.hpa.startswith("current 2, desired 2 (min 1, max 4)")
    assert any("vllm-ct6e-standard-1t: RUNNING, ct6e-standard-1t, autoscaling 0..4" in pool for pool in gke.node_pools)
    assert [pod.reason for pod in gke.pods] == ["Unschedulable", "Unschedulable"]


def test_no_capacity_in_the_zone_says_what_to_try(fake: FakeGoogle) -> None:
    """FailedScaleUp (GCE out of resources): the fix names the zones and provisioning to change."""
    _fleet(
        fake,
        deployment="k8s_deployment_waiting.json",
        pods="k8s_pods_waiting.json",
        hpa="k8s_hpa_scaling_up.json",
        events="k8s_events_out_of_resources.json",
    )
    report = status(fake)
    assert report.state is RolloutState.IN_PROGRESS
    assert "FailedScaleUp: Node scale up in zones us-east5-b" in report.summary
    assert report.fix is not None
    assert "gke.nodePool.zones" in report.fix


def test_a_crash_looping_pod_with_its_log_signature(fake: FakeGoogle) -> None:
    """A pod in CrashLoopBackOff: failed, with its restarts and the signature of its previous run's log."""
    _fleet(fake, deployment="k8s_deployment_crashloop.json", pods="k8s_pods_crashloop.json", hpa="k8s_hpa_ready.json")
    fake.route("GET", LOG, (FIXTURES / "k8s_pod_log_crashloop.txt").read_text(encoding="utf-8"))
    report = status(fake)
    assert report.state is RolloutState.FAILED
    assert f"pod {NAME}-7d9f8b6c5-klmno is in CrashLoopBackOff after 5 restart(s): kv-cache-too-small" in report.summary
    assert report.fix is not None
    assert report.fix.startswith("lower vllm.maxModelLen")
    pod = _gke(report).pods[0]
    assert pod.signature == "kv-cache-too-small"
    assert pod.log_line is not None
    assert "KV cache" in pod.log_line
    log_call = next(seen for seen in fake.seen if seen.path.endswith("/log"))
    assert log_call.query == {"container": ["vllm"], "previous": ["true"], "tailLines": ["200"]}


def test_a_healthy_fleet_with_its_replica_counts(fake: FakeGoogle) -> None:
    """All replicas ready: ready, the HPA's counts, the gateway's internal address probed without credentials
    (the example fleet has more than one replica, so users reach it through the inference gateway)."""
    _fleet(fake, deployment="k8s_deployment_ready.json", pods="k8s_pods_ready.json", hpa="k8s_hpa_ready.json")
    calls: list[tuple[str, str]] = []

    def probe(endpoint: str, auth: str) -> Readiness:
        calls.append((endpoint, auth))
        return Readiness(status="pass", summary="ready")

    report = status(fake, probe)
    assert report.state is RolloutState.READY
    assert report.exit_code == 0
    assert report.summary == "3/3 replicas ready"
    gke = _gke(report)
    assert gke.hpa == "current 3, desired 3 (min 1, max 4)"
    assert gke.endpoint == "http://10.128.0.50"
    assert calls == [("http://10.128.0.50", "none")]
    assert all(seen.method == "GET" for seen in fake.seen)
    out = io.StringIO()
    print_status(report, Console(file=out, width=200))
    text = out.getvalue()
    assert "3/3 ready" in text
    assert "current 3, desired 3" in text
    assert "programmed at 10.128.0.50" in text


def test_no_cluster_is_not_deployed(fake: FakeGoogle) -> None:
    """Before the first `pulumi up` the cluster does not exist: not deployed, never 'unknown'."""
    fake.route("GET", CLUSTER, {"error": {"code": 404, "message": "Not found", "status": "NOT_FOUND"}}, status=404)
    report = status(fake)
    assert report.state is RolloutState.NOT_DEPLOYED
    assert "gemma-gke-tpu-v6e" in report.summary


@pytest.mark.parametrize(
    "name",
    sorted(path.name for path in FIXTURES.glob("k8s_*.json")),
)
def test_the_kubernetes_fixtures_follow_the_openapi_schema(name: str) -> None:
    """The fakes answer what a 1.34 API server could: each body validates against its kind's schema."""
    body: Body = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    kubernetes_validate.validate(body, "1.34", strict=True)


def test_preflight_checks_the_node_pool_accelerator_quota(fake: FakeGoogle) -> None:
    """Quota for maxNodes x accelerators per node (4 spot v6e chips) is compared with what the project has."""
    Project().install(fake)
    stack = ops_stack(STACK)
    with GoogleApis(tokens, api_root=fake.url) as apis:
        report = run_preflight(stack, apis, now=lambda: datetime(2026, 11, 24, tzinfo=UTC))
    quota = [finding for finding in report.findings if finding.area == "quota"]
    assert quota
    assert all(finding.needed == 4 for finding in quota)
    assert any("ct6e-standard-1t accelerators (preemptible, 4 node(s))" in finding.item for finding in quota)


def test_logs_filter_reads_the_fleets_containers() -> None:
    """`verify logs` asks Cloud Logging for the pods' vLLM containers in this cluster and namespace."""
    stack = ops_stack(STACK)
    query = stack.log_filter(datetime(2026, 11, 24, tzinfo=UTC))
    assert 'resource.type="k8s_container"' in query
    assert 'resource.labels.cluster_name="gemma-gke-tpu-v6e"' in query
    assert f'labels."k8s-pod/app"="{NAME}"' in query


def test_fixture_readme_names_every_gke_fixture() -> None:
    """Each fixture's source sits beside it."""
    readme = (Path(FIXTURES) / "README.md").read_text(encoding="utf-8")
    for path in FIXTURES.glob("*"):
        if path.name.startswith(("k8s_", "gke_")):
            assert path.name in readme, path.name
