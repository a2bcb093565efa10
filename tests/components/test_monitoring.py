"""Each shipped stack's plan watches it: a collector, a dashboard Google's schema accepts, alert policies, a budget."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import promql_parser
import pytest
import yaml
from google.protobuf.json_format import ParseError  # type: ignore[import-untyped]  # protobuf ships no stubs

from components.monitoring.dashboard import dashboard_json
from components.tpu.startup_script import DATA_END_MARKER
from policy.credentials import credential_kind
from preview.notes import manual_steps
from preview.render import clean
from preview.tpu_plan import script_value, startup_scripts
from preview.watch_plan import watch_section
from serving.alert_rules import AlertThresholds
from serving.collectors import OTELCOL_GOOGLE_IMAGE, RUN_GMP_SIDECAR_IMAGE
from serving.dashboard_panels import dashboard_sections
from serving.naming import CLOUD_RUN_COLLECTOR_CONTAINER
from serving.watch import CloudRunWatch
from tests.cloud_run_instance import instance_size, vllm_container
from tests.conftest import render_stack

if TYPE_CHECKING:
    from google.cloud.monitoring_dashboard_v1 import Dashboard

# One pytest-xdist worker runs this module (`--dist loadgroup`, as `make test` runs), so Google's dashboard
# client library (google-api-core and its generated services, ~0.4 s of imports) is loaded once per run.
pytestmark = pytest.mark.xdist_group("dashboard-messages")

STACKS = ("l4", "rtx6000", "tpu-v6e")
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
ALERT_POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
BUDGET = "gcp:billing/budget:Budget"
CHANNEL = "gcp:monitoring/notificationChannel:NotificationChannel"
SERVICE = "gcp:cloudrunv2/service:Service"
SECRET_VERSION = "gcp:secretmanager/secretVersion:SecretVersion"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
BILLING_ACCOUNT = "012345-6789AB-CDEF01"


def dashboard_message(text: str) -> Dashboard:
    """The dashboard JSON parsed as Google's own `Dashboard` message (refusing a field Google does not define)."""
    from google.cloud.monitoring_dashboard_v1 import Dashboard  # on first use: see pytestmark

    message: Dashboard = Dashboard.from_json(text)
    return message


def inputs(resource: Any) -> dict[str, Any]:
    return dict(clean(resource.inputs))


def monitoring_override(block: dict[str, Any]) -> dict[str, str]:
    return {"gemma-serving:monitoring": json.dumps(block)}


@pytest.mark.parametrize("stack", STACKS)
def test_each_dashboard_parses_as_googles_dashboard_message(stack: str) -> None:
    """A field Cloud Monitoring does not know fails `pulumi up`; parsing with Google's own client library fails
    here first. Each stack's dashboard carries its vLLM panels and the platform's."""
    capture = render_stack(stack)
    (resource,) = capture.of_type(DASHBOARD)
    dashboard = dashboard_message(inputs(resource)["dashboardJson"])
    titles = [tile.widget.title for tile in dashboard.mosaic_layout.tiles]
    assert dashboard.display_name == f"gemma-serving {stack}"
    for title in ("Time to first token", "KV cache usage", "Finished requests by reason", "HTTP responses by status"):
        assert title in titles
    assert ("Speculative decoding acceptance" in titles) is (stack == "rtx6000")  # MTP on the RTX stack only
    platform = "TPU node state" if stack == "tpu-v6e" else "Cloud Run instances"
    assert platform in titles
    queries = [
        data_set.time_series_query.prometheus_query
        for tile in dashboard.mosaic_layout.tiles
        for data_set in tile.widget.xy_chart.data_sets
        if data_set.time_series_query.prometheus_query
    ]
    assert queries
    for query in queries:
        promql_parser.parse(query)


def test_a_misspelt_dashboard_field_is_refused() -> None:
    """The check above is a real one: the message refuses what Google's schema does not define."""
    body = json.loads(
        dashboard_json(
            display_name="x",
            intro="",
            sections=dashboard_sections(CloudRunWatch("svc", 0), AlertThresholds(), spec_decode=False),
        )
    )
    chart = next(tile for tile in body["mosaicLayout"]["tiles"] if "xyChart" in tile["widget"])
    chart["widget"]["xyChart"] = {"dataSet": []}
    with pytest.raises(ParseError, match="dataSet"):
        dashboard_message(json.dumps(body))


@pytest.mark.parametrize("stack", STACKS)
def test_alert_policies_are_promql_without_metric_validation_and_tell_nobody_by_default(stack: str) -> None:
    """Created before the first scrape (so metric validation is off), each condition parses, and no channel is
    named unless the stack names one; the plan's notes say so."""
    capture = render_stack(stack)
    policies = [inputs(policy) for policy in capture.of_type(ALERT_POLICY)]
    assert len(policies) >= 9
    for policy in policies:
        (condition,) = policy["conditions"]
        promql = condition["conditionPrometheusQueryLanguage"]
        assert promql["disableMetricValidation"] is True
        promql_parser.parse(promql["query"])
        assert "notificationChannels" not in policy or policy["notificationChannels"] == []
        assert "First command: `gemma-verify " in policy["documentation"]["content"]
    notes = manual_steps(capture)
    assert any(note.startswith("alerts:") and "tell nobody" in note for note in notes)
    assert any(note.startswith("budget: none") for note in notes)
    assert not capture.of_type(BUDGET)


@pytest.mark.parametrize("stack", STACKS)
def test_no_credential_in_dashboards_or_alerts(stack: str) -> None:
    """Dashboards and alert documentation are readable by anyone with monitoring.viewer: nothing secret."""
    capture = render_stack(stack)
    texts = [inputs(r)["dashboardJson"] for r in capture.of_type(DASHBOARD)]
    texts += [json.dumps(inputs(r)) for r in capture.of_type(ALERT_POLICY)]
    for text in texts:
        for word in text.replace('"', " ").split():
            assert credential_kind(word) is None, word


@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_cloud_run_gets_the_managed_prometheus_sidecar(stack: str) -> None:
    """The sidecar scrapes vLLM's port from its RunMonitoring config, starts after vLLM, takes no GPU, and the
    instance (the bill) stays the stack's size; the identity gains only the metric writer role and reading
    that config."""
    capture = render_stack(stack)
    template = inputs(capture.one(SERVICE))["template"]
    vllm = vllm_container(template)
    (sidecar,) = [c for c in template["containers"] if c["name"] == CLOUD_RUN_COLLECTOR_CONTAINER]
    assert sidecar["image"] == RUN_GMP_SIDECAR_IMAGE
    assert sidecar["dependsOns"] == ["vllm"]
    assert "nvidia.com/gpu" not in sidecar["resources"]["limits"]
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert sidecar["volumeMounts"] == [{"name": "rungmp-config", "mountPath": "/etc/rungmp"}]
    (volume,) = [v for v in template["volumes"] if v["name"] == "rungmp-config"]
    assert volume["secret"]["items"] == [{"path": "config.yaml", "version": "latest"}]
    billing = clean(capture.outputs)["billing"]
    assert instance_size(template) == (billing["cpu"], billing["memoryGib"])
    (version,) = [r for r in capture.of_type(SECRET_VERSION) if r.name.endswith("-metrics-config-version")]
    # The provider marks secretData secret (masked in the plan); the config itself holds a port and an interval.
    config = yaml.safe_load(version.inputs["secretData"]["value"])
    port = vllm["ports"]["containerPort"]
    assert config["kind"] == "RunMonitoring"
    assert config["spec"]["endpoints"] == [{"port": str(port), "path": "/metrics", "interval": "30s"}]
    members = {inputs(r)["role"] for r in capture.of_type(PROJECT_MEMBER)}
    assert members == {"roles/monitoring.metricWriter"}


def test_tpu_node_runs_the_collector_beside_vllm() -> None:
    """The startup script writes the collector's config (vLLM's port on loopback, the node's name as namespace)
    and starts it the way it starts vLLM: replaced at each boot, restarted by Docker."""
    capture = render_stack("tpu-v6e")
    ((_, script),) = startup_scripts(capture)
    assert script_value(script, "COLLECTOR_IMAGE") == OTELCOL_GOOGLE_IMAGE
    config = yaml.safe_load(script_value(script, "COLLECTOR_CONFIG") or "")
    (scrape,) = config["receivers"]["prometheus"]["config"]["scrape_configs"]
    assert scrape["static_configs"] == [{"targets": ["127.0.0.1:8000"]}]
    resource = {a["key"]: a["value"] for a in config["processors"]["resource"]["attributes"]}
    assert resource["namespace"] == "gemma-tpu-v6e-vllm"
    assert config["service"]["pipelines"]["metrics"]["exporters"] == ["googlemanagedprometheus"]
    body = script.split(DATA_END_MARKER, 1)[1]
    assert "--restart unless-stopped --net host" in body
    assert "retry 3 start_collector" in body
    roles = sorted(inputs(r)["role"] for r in capture.of_type(PROJECT_MEMBER))
    assert roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
    names = {policy.name.rsplit("-alert-", 1)[-1] for policy in capture.of_type(ALERT_POLICY)}
    assert {"no-serving-node", "flex-start-ending"} <= names


def test_monitoring_off_collects_and_alerts_nothing() -> None:
    """`monitoring.enabled: false` leaves the plan as it was before monitoring existed, and says so."""
    for stack in ("l4", "tpu-v6e"):
        capture = render_stack(stack, monitoring_override({"enabled": False}))
        assert not capture.of_type(DASHBOARD)
        assert not capture.of_type(ALERT_POLICY)
        assert not [r for r in capture.of_type(PROJECT_MEMBER) if inputs(r)["role"] == "roles/monitoring.metricWriter"]
        if stack == "l4":
            assert len(inputs(capture.one(SERVICE))["template"]["containers"]) == 1
        else:
            ((_, script),) = startup_scripts(capture)
            assert script_value(script, "COLLECTOR_IMAGE") == ""
        assert any(note.startswith("monitoring: off") for note in manual_steps(capture))


def test_a_billing_account_adds_a_monthly_budget_on_the_stacks_label() -> None:
    """With a billing account the budget counts only resources labelled with this stack, notifies at the
    stack's thresholds and through its channels; the notes say what the deployer needs."""
    block = {
        "notificationChannels": [
            {"email": "oncall@example.com"},
            {"pubsubTopic": "projects/my-project/topics/gemma-alerts"},
            {"existing": "projects/my-project/notificationChannels/123"},
        ],
        "budget": {"billingAccount": BILLING_ACCOUNT, "amount": 2500, "thresholds": [0.5, 1.0]},
    }
    capture = render_stack("rtx6000", monitoring_override(block))
    budget = inputs(capture.one(BUDGET))
    assert budget["billingAccount"] == BILLING_ACCOUNT
    assert budget["budgetFilter"]["labels"] == {"stack": "rtx6000"}
    assert budget["amount"]["specifiedAmount"]["units"] == "2500"
    assert [rule["thresholdPercent"] for rule in budget["thresholdRules"]] == [0.5, 1.0]
    assert len(budget["allUpdatesRule"]["monitoringNotificationChannels"]) == 3
    channels = sorted((inputs(r)["type"], inputs(r)["labels"]) for r in capture.of_type(CHANNEL))
    assert channels == [
        ("email", {"email_address": "oncall@example.com"}),
        ("pubsub", {"topic": "projects/my-project/topics/gemma-alerts"}),
    ]
    for policy in capture.of_type(ALERT_POLICY):
        assert len(inputs(policy)["notificationChannels"]) == 3
    notes = manual_steps(capture)
    assert any(note.startswith("budget:") and "billing.costsManager" in note for note in notes)
    assert any("roles/pubsub.publisher" in note for note in notes)


@pytest.mark.parametrize("stack", STACKS)
def test_the_text_plan_shows_the_collector_each_alert_and_who_it_tells(stack: str) -> None:
    """A reviewer judges the alerts by their thresholds and channels, and finds the collector hidden in the
    service template or the TPU startup script, in one section of `make preview`."""
    section = watch_section(render_stack(stack))
    collector = next(line for line in section if line.startswith("  collector:"))
    assert ("otelcol-google" if stack == "tpu-v6e" else "sidecar collector <- ") in collector
    alerts = [line for line in section if line.startswith("  alert:")]
    assert len(alerts) == len(render_stack(stack).of_type(ALERT_POLICY))
    assert all("0 channel(s)" in line for line in alerts)
    assert any("KV cache above 98%" in line and "[critical]" in line for line in alerts)


@pytest.mark.parametrize("stack", ["gke-l4x4", "gke-tpu-v6e"])
def test_gke_fleets_get_the_dashboard_and_alerts_over_their_podmonitoring(stack: str) -> None:
    """A GKE stack is scraped by its PodMonitoring (the gke components); its dashboard and alerts read that
    fleet's series only (its namespace and the PodMonitoring's job), and parse as Google's message."""
    capture = render_stack(stack)
    (resource,) = capture.of_type(DASHBOARD)
    dashboard = dashboard_message(inputs(resource)["dashboardJson"])
    assert "Replicas reporting" in [tile.widget.title for tile in dashboard.mosaic_layout.tiles]
    queries = [
        inputs(policy)["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
        for policy in capture.of_type(ALERT_POLICY)
    ]
    assert any("absent_over_time" in query for query in queries)  # no replica reporting
    for query in queries:
        promql_parser.parse(query)
        assert f'job="gemma-{stack}-vllm"' in query
