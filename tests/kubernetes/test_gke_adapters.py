"""LoRA adapters on a GKE GPU fleet: the pods serve them from the bucket, the gateway routes by adapter.

Guards against: a fleet whose pods run plain `vllm serve` (the adapter admin routes open to any caller) or
lose the fail-closed API-key check; pods without the resolver's env or folder; a new adapter that rolls the
whole fleet (a cold start on every replica); a fleet that waits on each adapter's import; a picker that
routes an adapter's requests without looking at which replica holds it; and a TPU fleet that accepts
adapters vllm-tpu has not been shown to serve.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.gke.gateway_manifests import LORA_AFFINITY_SCORER, PROFILE_ANNOTATION
from components.gke.manifests import LAUNCH
from serving.lora import RESOLVER_ENV, ROUTES_MIDDLEWARE, ROUTES_MODULE, RUNTIME_UPDATING_ENV
from serving.naming import TypeToken
from serving.route_guard import GUARD_MIDDLEWARE
from serving.vllm_args import check_serve_args
from stacks.loading import StackConfigError, load_stack
from stacks.settings import GkeStack
from tests.conftest import ROOT, render_stack, stack_config
from tests.kubernetes.manifests import kubernetes_manifests, validate, wire_to_manifest

EXAMPLE = "gke-l4-adapters"
ADAPTERS_KEY = "gemma-serving:adapters"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
FLEET = f"gemma-{EXAMPLE}-vllm-deployment"


def _example_adapters() -> list[dict[str, Any]]:
    return list(json.loads(stack_config(EXAMPLE).values[ADAPTERS_KEY]))


def _fleet(overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """The vLLM Deployment (not a picker's) as the API server would receive it."""
    rendered = render_stack(EXAMPLE, overrides)
    fleets: list[dict[str, Any]] = [wire_to_manifest(r.inputs) for r in rendered.of_type(DEPLOYMENT) if r.name == FLEET]
    assert len(fleets) == 1
    return fleets[0]


def test_the_pods_run_the_launcher_behind_the_key_check_with_the_resolver() -> None:
    """The pod must keep refusing to start without its API key, then serve through the guard that refuses
    vLLM's adapter load/unload routes, with the resolver pointed at the mounted adapters folder."""
    pod = _fleet()["spec"]["template"]["spec"]
    container = pod["containers"][0]
    settings = load_stack(stack_config(EXAMPLE).values, root=ROOT).settings
    assert isinstance(settings, GkeStack)
    assert container["command"] == ["/bin/sh", "-c", LAUNCH, "vllm", *settings.serving_command()]
    assert ROUTES_MODULE in container["command"][6]  # the route table's module, registered by the launcher
    args = container["args"]
    assert check_serve_args(args) == []
    assert "--enable-lora" in args
    # The route table inside, the guard outermost (vLLM adds each --middleware as the new outermost layer).
    assert [args[i + 1] for i, arg in enumerate(args) if arg == "--middleware"] == [ROUTES_MIDDLEWARE, GUARD_MIDDLEWARE]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert env[RESOLVER_ENV] == "/mnt/models/adapters"
    assert env[RUNTIME_UPDATING_ENV] == "True"
    models = next(volume for volume in pod["volumes"] if volume["name"] == "models")
    assert "implicit-dirs" in models["csi"]["volumeAttributes"]["mountOptions"].split(",")


def test_implicit_dirs_is_added_when_the_stack_file_leaves_it_out() -> None:
    """Without it gcsfuse shows no adapters/<name>/ folder (imported objects carry no placeholders)."""
    block = json.loads(stack_config(EXAMPLE).values["gemma-serving:gke"])
    block["mount"] = {"extraOptions": ["metadata-cache-ttl-secs=-1"]}
    fleet = _fleet({"gemma-serving:gke": json.dumps(block)})
    models = next(v for v in fleet["spec"]["template"]["spec"]["volumes"] if v["name"] == "models")
    options = models["csi"]["volumeAttributes"]["mountOptions"].split(",")
    assert options[-2:] == ["metadata-cache-ttl-secs=-1", "implicit-dirs"]
    assert options.count("implicit-dirs") == 1


def test_a_third_adapter_changes_only_the_names_the_guard_admits() -> None:
    """The guard refuses a `model` the stack does not declare, so a new adapter is a new pod template (rolled one
    replica at a time, or onto a gated fleet's candidate first); nothing else of the pods may change with it."""
    two = _example_adapters()
    three = [*two, {**two[0], "name": "legal-review", "source": {"gcs": "gs://acme-gemma-adapters/legal/v1"}}]
    containers = [
        _fleet({ADAPTERS_KEY: json.dumps(adapters)})["spec"]["template"]["spec"]["containers"][0]
        for adapters in (two, three)
    ]
    config = [json.loads(container["command"][-2]) for container in containers]
    assert config[1]["names"] == [*config[0]["names"], "legal-review"]
    for container in containers:
        container["command"][-2] = "<guard config>"
    assert containers[0] == containers[1]
    rendered = render_stack(EXAMPLE, {ADAPTERS_KEY: json.dumps(three)})
    imports = {r.name for r in rendered.of_type("gemma:storage:ModelImport")}
    assert f"gemma-{EXAMPLE}-import-a-legal-review" in imports


def test_the_fleet_waits_for_the_adapters_folder_but_not_for_adapter_imports() -> None:
    """vLLM's resolver needs the folder at start; waiting on every adapter's import would tie the fleet's
    rollout to each adapter's copy (and a new adapter would hold the fleet's update)."""
    rendered = render_stack(EXAMPLE)
    (fleet,) = rendered.of_type(TypeToken.GKE_FLEET)
    keep = [
        r for r in rendered.of_type("gcp:storage/bucketObject:BucketObject") if r.inputs["name"] == "adapters/.keep"
    ]
    assert len(keep) == 1
    assert keep[0].urn in fleet.dependencies
    adapter_imports = [r.urn for r in rendered.resources if "-import-a-" in r.name]
    assert adapter_imports
    assert not set(adapter_imports) & set(fleet.dependencies)
    weights = [r.urn for r in rendered.resources if "-import-target" in r.name]
    assert weights
    assert set(weights) & set(fleet.dependencies)


def test_the_picker_scores_replicas_by_the_adapter_a_request_names() -> None:
    """Behind the gateway, a request for an adapter should land where it is loaded (or a slot is free)."""
    rendered = render_stack(EXAMPLE)
    configs = [wire_to_manifest(r.inputs) for r in rendered.of_type(CONFIG_MAP) if r.name.endswith("-epp")]
    assert len(configs) == 1
    config = yaml.safe_load(configs[0]["data"]["default-plugins.yaml"])
    scorer, weight = LORA_AFFINITY_SCORER
    assert {"type": scorer} in config["plugins"]
    assert {"pluginRef": scorer, "weight": weight} in config["schedulingProfiles"][0]["plugins"]
    picker = next(r for r in rendered.of_type(DEPLOYMENT) if r.name.endswith("-epp"))
    assert wire_to_manifest(picker.inputs)["spec"]["template"]["metadata"]["annotations"] == {
        PROFILE_ANNOTATION: "lora-affinity"
    }


def test_a_fleet_without_adapters_keeps_its_picker_and_serves_no_adapter() -> None:
    """No adapters: no LoRA scorer, no profile annotation, no resolver, and the guard admits the served name only."""
    rendered = render_stack("gke-l4x4")
    config = next(wire_to_manifest(r.inputs) for r in rendered.of_type(CONFIG_MAP) if r.name.endswith("-epp"))
    assert LORA_AFFINITY_SCORER[0] not in config["data"]["default-plugins.yaml"]
    picker = next(wire_to_manifest(r.inputs) for r in rendered.of_type(DEPLOYMENT) if r.name.endswith("-epp"))
    assert "annotations" not in picker["spec"]["template"]["metadata"]
    fleet = next(
        wire_to_manifest(r.inputs) for r in rendered.of_type(DEPLOYMENT) if r.name == "gemma-gke-l4x4-vllm-deployment"
    )
    container = fleet["spec"]["template"]["spec"]["containers"][0]
    assert json.loads(container["command"][-2])["names"] == ["gemma-4-31b-it"]
    assert RESOLVER_ENV not in {item["name"] for item in container["env"]}


def test_every_object_of_the_adapter_fleet_validates() -> None:
    """`pulumi up` must not be refused by the API server for the launcher's command or the picker's config."""
    settings = load_stack(dict(stack_config(EXAMPLE).values), root=ROOT).settings
    assert isinstance(settings, GkeStack)
    version = settings.gke.cluster.kubernetes_version
    manifests = kubernetes_manifests(render_stack(EXAMPLE))
    assert any(manifest["kind"] == "Deployment" for manifest in manifests)
    for manifest in manifests:
        validate(manifest, version)


def test_adapters_on_a_gke_tpu_fleet_are_refused_with_the_reason() -> None:
    """vllm-tpu's LoRA path is unconfirmed for Gemma 4: the plan must say so, not the first request."""
    config = dict(stack_config("gke-tpu-v6e").values)
    model = json.loads(config["gemma-serving:model"])
    base = model.get("source", {}).get("huggingFace", {}).get("repo", model.get("id", ""))
    config[ADAPTERS_KEY] = json.dumps(
        [{"name": "support-bot", "source": {"gcs": "gs://acme-gemma-adapters/s/v1"}, "base": base, "rank": 16}]
    )
    with pytest.raises(StackConfigError) as raised:
        load_stack(config, root=ROOT)
    assert "adapters: LoRA on vllm-tpu is not confirmed" in str(raised.value)
    assert "GKE GPU fleet" in str(raised.value)


def test_autoscaling_counts_every_adapters_waiting_requests() -> None:
    """Guards against a fleet whose adapters saturate without the HPA seeing it: it scales on waiting requests
    with no filter on the model or adapter a request names. vLLM 0.32 counts a request held back by the LoRA
    budget (every --max-loras slot busy with other adapters) in vllm:num_requests_waiting (reason
    'deferred'; vllm/v1/metrics/loggers.py), and the picker's queue average is of that gauge."""
    rendered = render_stack(EXAMPLE)
    (hpa,) = [wire_to_manifest(r.inputs) for r in rendered.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")]
    metrics = hpa["spec"]["metrics"]
    queue = [m for m in metrics if "queue" in json.dumps(m) or "waiting" in json.dumps(m)]
    assert queue, metrics
    for metric in queue:
        selector = json.dumps(metric.get("external", metric.get("pods", {})).get("metric", {}).get("selector", {}))
        assert "model" not in selector
        assert "lora" not in selector


def test_the_pods_are_told_where_the_route_table_is() -> None:
    """A pod without the table's address could serve public adapter names only as they were at its start."""
    container = _fleet()["spec"]["template"]["spec"]["containers"][0]
    names = {env["name"] for env in container["env"]}
    assert {"GEMMA_ADAPTER_ROUTES", "GEMMA_SERVED_NAMES"} <= names
