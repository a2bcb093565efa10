"""Every name the program gives a deployed thing comes from `serving/naming.py`, checked both ways.

From the module to the plans: each name `StackNames` yields is a name in the plan of a stack of its
platform (a reader looking for it finds what the program made), and each of the module's constants is
found where it belongs in a plan. From the plans to the module: each component the program registers is
named by `StackNames` (or, inside a component, after its parent), and every container of a plan (Cloud
Run services and jobs, the TPU node's, the GKE fleet's) is one of the module's constants, so a name spelt
anywhere else fails here. `verify status` read GKE pods by a container name it spelt itself, and
monitoring and GKE components were named in `deploy/` with f-strings: a rename on one side would have left
the other looking for what no longer exists, with no error, only "not deployed".
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest
import yaml

from preview.capture import Capture, CapturedResource
from serving import naming
from serving.naming import (
    GKE_APP_LABEL,
    GKE_SERVING_CONTAINER,
    GPU_SERVING_CONTAINER,
    TPU_COLLECTOR_CONTAINER,
    StackNames,
    TypeToken,
)
from tests.conftest import render_stack

STACK_ROOT = "pulumi:pulumi:Stack"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVICE = "gcp:cloudrunv2/service:Service"
QUEUED_RESOURCE = "pulumi-python:dynamic/tpu:QueuedResource"

# Which of StackNames' names each platform's plan carries (as a resource's name or an input's value).
IN_EVERY_PLAN = frozenset(
    {"project_apis", "identity", "model_bucket", "image_mirror", "mirror_repository", "serving", "watch"}
)
IN_PLAN: dict[str, frozenset[str]] = {
    "l4": IN_EVERY_PLAN | {"metrics", "sidecar_config_secret"},
    "tpu-v6e": IN_EVERY_PLAN | {"gke_api_key_secret"},
    "gke-tpu-v6e": IN_EVERY_PLAN
    | {"base", "gke_accelerators", "gke_api_key", "gke_api_key_secret", "gke_cluster", "gke_cluster_component"}
    | {"gke_nodes", "gke_gateway", "gke_metrics_adapter", "gke_inference_gateway"},
}
# Names only a stack file with an optional block gets, and the block (tests/deploy/test_bench_image_build.py and
# tests/components/test_image_mirror.py render them).
OPTIONAL: dict[str, tuple[str, dict[str, str]]] = {
    "bench_job": ("l4", {"gemma-serving:bench": json.dumps({"tasks": 2, "cpuPerTask": 4})}),
    "bench_image": ("l4", {"gemma-serving:bench": json.dumps({"tasks": 2, "cpuPerTask": 4})}),
    "bench_image_repository": ("l4", {"gemma-serving:bench": json.dumps({"tasks": 2, "cpuPerTask": 4})}),
    "derived_image": (
        "l4",
        {"gemma-serving:registry": json.dumps({"build": {"context": "images/vllm-gemma", "tag": "v0.32.0-gemma1"}})},
    ),
    "image_repository": (
        "l4",
        {"gemma-serving:registry": json.dumps({"build": {"context": "images/vllm-gemma", "tag": "v0.32.0-gemma1"}})},
    ),
}
# Not a deployed thing's own name: the prefix the others start with, and the secret only a stack with an
# `hfToken` gets (tests/deploy/test_secrets.py renders it).
NOT_CHECKED_HERE = frozenset({"import_job_prefix", "hf_token_secret"})


def _name_properties() -> list[str]:
    return sorted(name for name, member in inspect.getmembers(StackNames) if isinstance(member, property))


def _strings(value: Any, found: set[str]) -> set[str]:
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, found)
    return found


def _plan_strings(capture: Capture) -> set[str]:
    found = {resource.name for resource in capture.resources}
    _strings([resource.inputs for resource in capture.resources], found)
    return _strings(capture.outputs, found)


def test_every_name_the_module_yields_is_checked_somewhere() -> None:
    """Guards against a new name in StackNames that no plan is checked for (a reader could look in vain)."""
    covered = set().union(*IN_PLAN.values()) | set(OPTIONAL) | NOT_CHECKED_HERE
    assert set(_name_properties()) - covered == set()


@pytest.mark.parametrize("stack", sorted(IN_PLAN))
def test_from_the_module_to_the_plan(stack: str) -> None:
    """Guards against a name readers look for that the program no longer gives (a silent "not deployed")."""
    names, present = StackNames(stack), _plan_strings(render_stack(stack))
    missing = [prop for prop in sorted(IN_PLAN[stack]) if getattr(names, prop) not in present]
    assert missing == []


def test_names_of_optional_blocks_are_in_their_plans() -> None:
    """Guards against the load generator's or a derived image's names drifting from what readers look for."""
    renders: dict[str, set[str]] = {}
    missing = []
    for prop, (stack, overrides) in OPTIONAL.items():
        key = json.dumps(overrides, sort_keys=True)
        if key not in renders:
            renders[key] = _plan_strings(render_stack(stack, overrides))
        if getattr(StackNames(stack), prop) not in renders[key]:
            missing.append(prop)
    assert missing == []


def _yielded(names: StackNames, capture: Capture) -> set[str]:
    yielded = {getattr(names, prop) for prop in _name_properties()}
    roles = {resource.name.removeprefix(f"{names.import_job_prefix}-") for resource in capture.resources}
    return yielded | {names.import_job(role) for role in roles} | {names.import_run(role) for role in roles}


def _component_of(capture: Capture, urn: str | None) -> CapturedResource | None:
    return next((resource for resource in capture.resources if resource.urn == urn), None)


@pytest.mark.parametrize("stack", sorted(IN_PLAN))
def test_from_the_plan_to_the_module(stack: str) -> None:
    """Guards against a component named outside serving/naming.py: named by StackNames at the top, or after
    the component it belongs to."""
    capture, names = render_stack(stack), StackNames(stack)
    yielded = _yielded(names, capture)
    unnamed = []
    for resource in capture.resources:
        if not resource.type.startswith("gemma:"):
            continue
        parent = _component_of(capture, resource.parent)
        after_parent = parent is not None and resource.name.startswith(f"{parent.name}-")
        if resource.name not in yielded and not after_parent:
            unnamed.append(f"{resource.type} {resource.name}")
    assert unnamed == []


def test_the_containers_and_labels_readers_select_on_are_the_modules() -> None:
    """Guards against `verify status` and `verify logs` selecting a container or label the program renamed."""
    service = render_stack("l4").one(SERVICE).inputs
    assert GPU_SERVING_CONTAINER in [container["name"] for container in service["template"]["containers"]]
    script = render_stack("tpu-v6e").one(QUEUED_RESOURCE).inputs["requestBody"]["tpu"]["nodeSpec"][0]["node"]
    assert TPU_COLLECTOR_CONTAINER in script["metadata"]["startup-script"]
    capture = render_stack("gke-tpu-v6e")
    (deployment,) = [
        resource.inputs
        for resource in capture.of_type(DEPLOYMENT)
        if resource.inputs["metadata"]["name"] == capture.outputs["deployment"]
    ]
    template = deployment["spec"]["template"]
    assert GKE_SERVING_CONTAINER in [container["name"] for container in template["spec"]["containers"]]
    assert template["metadata"]["labels"][GKE_APP_LABEL] == deployment["metadata"]["name"]


# --- the module's constants: names given inside a deployed thing (containers, labels, scrape configs) -------

BENCH = {"gemma-serving:bench": json.dumps({"tasks": 2, "cpuPerTask": 4})}
JOB = "gcp:cloudrunv2/job:Job"
SECRET_VERSION = "gcp:secretmanager/secretVersion:SecretVersion"
# Containers of a plan that are not ours to name, and why: Google's custom-metrics adapter manifest and the
# inference extension's endpoint picker keep their upstream names (components/gke/ applies them as published).
UPSTREAM_CONTAINERS = frozenset({"pod-custom-metrics-stackdriver-adapter", "epp"})


def _startup_script(capture: Capture) -> str:
    node = capture.one(QUEUED_RESOURCE).inputs["requestBody"]["tpu"]["nodeSpec"][0]["node"]
    return str(node["metadata"]["startup-script"])


def _tpu_containers(capture: Capture) -> set[str]:
    """The containers the TPU node's startup script starts (`CONTAINER=<name>` lines, `--name <name>`)."""
    script = _startup_script(capture)
    assigned = re.findall(r"^\s*(?:readonly )?[A-Z_]*CONTAINER=([\w.-]+)", script, re.MULTILINE)
    return set(assigned) | set(re.findall(r"--name ([\w.-]+)", script))


def _run_containers(capture: Capture, resource_type: str) -> set[str]:
    found = set()
    for resource in capture.of_type(resource_type):
        template = resource.inputs["template"]
        template = template.get("template", template)  # a job's task template sits one level down
        found |= {container["name"] for container in template["containers"]}
    return found


def _gke_containers(capture: Capture) -> set[str]:
    return {
        container["name"]
        for resource in capture.of_type(DEPLOYMENT)
        for container in resource.inputs["spec"]["template"]["spec"]["containers"]
    }


def _run_monitoring_names(capture: Capture) -> set[str]:
    """The RunMonitoring config's own name, from the secret the Cloud Run collector reads it from."""
    names = set()
    for resource in capture.of_type(SECRET_VERSION):
        data = resource.inputs.get("secretData")
        text = data.get("value") if isinstance(data, dict) else data
        if isinstance(text, str) and "kind: RunMonitoring" in text:
            names.add(yaml.safe_load(text)["metadata"]["name"])
    return names


def _scrape_jobs(capture: Capture) -> set[str]:
    script = _startup_script(capture)
    return set(re.findall(r'"job_name": "([^"]+)"', script))


def _log_prefixes(capture: Capture) -> set[str]:
    """The prefixes the startup script writes its own log lines with (`<name>-startup:`)."""
    return set(re.findall(r"[\w-]+-startup:", _startup_script(capture)))


def _google_labels(capture: Capture) -> set[str]:
    """The values of the labels the stack's Google resources carry."""
    return {
        value
        for resource in capture.resources
        if isinstance(resource.inputs.get("labels"), dict)
        for value in resource.inputs["labels"].values()
        if isinstance(value, str)
    }


def _tags(capture: Capture) -> set[str]:
    return {traffic["tag"] for traffic in capture.one(SERVICE).inputs.get("traffics", []) if traffic.get("tag")}


def _gke_labels(capture: Capture) -> set[str]:
    return {
        label
        for resource in capture.of_type(DEPLOYMENT)
        if resource.inputs["metadata"]["name"] == capture.outputs["deployment"]
        for label, value in resource.inputs["spec"]["template"]["metadata"]["labels"].items()
        if value == resource.inputs["metadata"]["name"]
    }


# Where each constant of serving/naming.py is found in a plan: (stack, config overrides, what to read).
WHERE: dict[str, tuple[str, dict[str, str], Any]] = {
    "CANDIDATE_TAG": ("l4", {}, _tags),
    "MANAGED_BY": ("l4", {}, _google_labels),
    "GPU_SERVING_CONTAINER": ("l4", {}, lambda capture: _run_containers(capture, SERVICE)),
    "CLOUD_RUN_COLLECTOR_CONTAINER": ("l4", {}, lambda capture: _run_containers(capture, SERVICE)),
    "RUN_MONITORING_NAME": ("l4", {}, _run_monitoring_names),
    "IMPORT_JOB_CONTAINER": ("l4", {}, lambda capture: _run_containers(capture, JOB)),
    "BENCH_JOB_CONTAINER": ("l4", BENCH, lambda capture: _run_containers(capture, JOB)),
    "TPU_SERVING_CONTAINER": ("tpu-v6e", {}, _tpu_containers),
    "TPU_COLLECTOR_CONTAINER": ("tpu-v6e", {}, _tpu_containers),
    "TPU_SCRAPE_JOB": ("tpu-v6e", {}, _scrape_jobs),
    "TPU_STARTUP_LOG_PREFIX": (
        "tpu-v6e",
        {},
        lambda capture: set(re.findall(r"[\w-]+-startup:", _startup_script(capture))),
    ),
    "GKE_SERVING_CONTAINER": ("gke-tpu-v6e", {}, _gke_containers),
    "GKE_APP_LABEL": ("gke-tpu-v6e", {}, _gke_labels),
}
# Constants that are not a name of their own: the suffix `StackNames.import_run` appends (checked above).
NOT_A_NAME = frozenset({"IMPORT_RUN_SUFFIX"})


def _constants() -> dict[str, str]:
    return {name: value for name, value in vars(naming).items() if name.isupper() and isinstance(value, str)}


def test_every_constant_of_the_module_has_a_place_in_a_plan() -> None:
    """Guards against a name added to serving/naming.py that no plan is checked for."""
    assert set(_constants()) - NOT_A_NAME == set(WHERE)


@pytest.mark.parametrize("constant", sorted(WHERE))
def test_from_the_module_constants_to_the_plan(constant: str) -> None:
    """Guards against `verify status` or `verify logs` selecting a container, tag or label the program renamed."""
    stack, overrides, read = WHERE[constant]
    value = _constants()[constant]
    found = read(render_stack(stack, overrides))
    assert value in found, (value, found)


@pytest.mark.parametrize(("stack", "overrides"), [("l4", BENCH), ("tpu-v6e", {}), ("gke-tpu-v6e", {})])
def test_from_the_plan_containers_to_the_module(stack: str, overrides: dict[str, str]) -> None:
    """Guards against a container named outside serving/naming.py (a reader selecting it would spell it again)."""
    capture = render_stack(stack, overrides)
    containers = _run_containers(capture, SERVICE) | _run_containers(capture, JOB) | _gke_containers(capture)
    if capture.of_type(QUEUED_RESOURCE):
        containers |= _tpu_containers(capture)
    assert containers, "the plan has no containers: the readers above read nothing"
    assert containers - set(_constants().values()) - UPSTREAM_CONTAINERS == set()


# --- component type tokens: `gemma:<module>:<Type>`, as URNs and readers name them -------------------------

DERIVED = OPTIONAL["derived_image"][1]
# The plans that between them register every component: each platform, and the optional blocks.
TOKEN_PLANS: list[tuple[str, dict[str, str]]] = [
    ("l4", BENCH),
    ("l4", DERIVED),
    ("tpu-v6e", {}),
    ("gke-tpu-v6e", {}),
    ("gemma4-12b-adapters-l4", {}),
]


def _type_tokens() -> set[str]:
    return {value for name, value in vars(TypeToken).items() if name.isupper() and isinstance(value, str)}


def _registered_types() -> set[str]:
    found: set[str] = set()
    for stack, overrides in TOKEN_PLANS:
        found |= {resource.type for resource in render_stack(stack, overrides).resources}
    return {token for token in found if token.startswith("gemma:")}


def test_component_types_both_ways() -> None:
    """Guards against a component registered under a type spelt outside `TypeToken` (a reader selecting it by
    type, or an alias naming its former URN, would spell it again), and a token no component uses."""
    registered, tokens = _registered_types(), _type_tokens()
    assert registered - tokens == set(), "registered under a type TypeToken does not name"
    assert tokens - registered == set(), "a TypeToken no plan registers"


# --- display names: what Google's consoles and alert mails show for the stack's things -----------------------


@pytest.mark.parametrize("stack", sorted(IN_PLAN))
def test_display_names_come_from_the_module(stack: str) -> None:
    """Guards against a console or alert mail naming one stack's thing in a way another stack's could share
    (a service account or an alert policy that does not say which stack it belongs to)."""
    names, capture = StackNames(stack), render_stack(stack, BENCH if stack == "l4" else {})
    shown = {
        resource.inputs["displayName"]
        for resource in capture.resources
        if isinstance(resource.inputs.get("displayName"), str)
    }
    assert shown, "the plan has no display names: the check reads nothing"
    prefixes = (f"{names.display_name()} ", names.display_title(""))
    assert [name for name in shown if name != names.display_name() and not name.startswith(prefixes)] == []
