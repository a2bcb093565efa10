"""A stack's plan imports what its platform needs and nothing of another platform's.

Why: the offline plan of a Cloud Run stack slowed from 0.73 s to 1.76 s when it began importing the TPU
provider, its REST client (httpx, google-auth's transports and their TLS, rich and cryptography), the
Docker provider SDK and the GKE components whether the stack used them or not; every `pulumi preview`
and `pulumi up` pays the same imports. Timing a plan in a test would be flaky on a shared machine, so
this checks what is *imported*, which is deterministic; benchmarks/preview_time.py measures the time.

A fresh interpreter is the point here (the test process has imported everything): one child renders the
Cloud Run stack, records what is loaded, then renders the TPU stack and a GKE stack in the same process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# What no Cloud Run or TPU plan imports: GKE's code and SDK, the Docker SDK (only a stack that builds an image),
# the libraries only `pulumi up` or the readers use (the TPU REST client's httpx and google-auth, with their
# TLS, rich and cryptography imports), and the readers themselves.
NOT_FOR_A_PLAN = (
    "components.gke",
    "deploy.gke",
    "pulumi_kubernetes",
    "pulumi_docker",
    # components.wire.command registers the import job's command: the SDK (and its parver) is not imported.
    "pulumi_command",
    "pulumi_gcp.compute",
    "pulumi_gcp.container",
    "httpx",
    "google.auth",
    "requests",
    "rich",
    "cryptography",
    "verify",
    "gemma_mcp",
)
# A Cloud Run GPU plan imports nothing of the TPU platform either.
NOT_FOR_CLOUD_RUN = (*NOT_FOR_A_PLAN, "components.tpu", "deploy.tpu", "pulumi_random", "pulumi_gcp.tpu")
NOT_FOR_TPU = NOT_FOR_A_PLAN

_SCRIPT = """
import contextlib, io, json, sys
SDKS = ("pulumi_gcp.", "pulumi_kubernetes.", "pulumi_random.", "pulumi_command.", "pulumi_docker.")
from preview.__main__ import main
loaded = {}
for stack in ("l4", "tpu-v6e", "gke-l4-adapters"):  # in this order: each list includes the ones before
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["--stack", stack, "--format", "json"])
    assert code == 0, (stack, code)
    # A provider SDK registers its submodules unloaded (a lazy module); only a used one is really loaded.
    real = {name: module for name, module in sys.modules.items() if type(module).__name__ != "_LazyModule"}
    loaded[stack] = sorted(real)
    # The provider SDKs' subpackages (each loads every type of its service at once): see PROVIDER_PACKAGES.
    loaded[stack + ":packages"] = sorted(
        name
        for name, module in real.items()
        if name.startswith(SDKS) and name.count(".") == 1 and hasattr(module, "__path__")
    )
    # The installed distributions it loads, by top-level name (see THIRD_PARTY).
    loaded[stack + ":third-party"] = sorted(
        {
            name.split(".")[0]
            for name, module in real.items()
            if "site-packages" in (getattr(module, "__file__", None) or "") and not name.startswith("_")
        }
    )
    # The settings and output-contract models whose validators the plans so far have built (see BUILT_BY_NONE).
    from pydantic import BaseModel
    models, every_model = [BaseModel], []
    while models:
        model = models.pop()
        models.extend(model.__subclasses__())
        every_model.append(model)
    loaded[stack + ":built"] = sorted(
        f"{model.__module__}.{model.__qualname__}"
        for model in every_model
        if model.__module__.startswith(("stacks.", "serving.outputs")) and model.__pydantic_complete__
    )
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def loaded_by_plan() -> dict[str, list[str]]:
    completed = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=ROOT, capture_output=True, text=True, check=False, timeout=120
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    loaded: dict[str, list[str]] = json.loads(completed.stdout)
    return loaded


def _offending(modules: list[str], forbidden: tuple[str, ...]) -> list[str]:
    return [name for name in modules if any(name == bad or name.startswith(f"{bad}.") for bad in forbidden)]


def test_a_cloud_run_plan_imports_no_other_platform_and_no_rest_client(loaded_by_plan: dict[str, list[str]]) -> None:
    """Guards against a Cloud Run preview (and `pulumi up`) that pays for the TPU provider, GKE or Docker."""
    assert _offending(loaded_by_plan["l4"], NOT_FOR_CLOUD_RUN) == []


def test_a_tpu_plan_imports_no_rest_client_and_no_gke(loaded_by_plan: dict[str, list[str]]) -> None:
    """Guards against a TPU preview that loads httpx and google-auth for a provider that only runs on up."""
    assert _offending(loaded_by_plan["tpu-v6e"], NOT_FOR_TPU) == []


# The import budget: the provider SDK subpackages a plan may load. A generated subpackage loads every type of
# its service on the first use of any class (pulumi_gcp.cloudrunv2 ~0.2 s, pulumi_gcp.compute ~1 s on a quiet
# machine), and the SDK reads the type hints of a generated class's inputs on every registration
# (pulumi_command.local's CommandArgs ~12 ms), so the components register provider resources by type token
# instead (components/wire/): no plan loads one.
PROVIDER_PACKAGES: dict[str, list[str]] = {
    "l4": [],
    "tpu-v6e": [],
    # The GKE example with the inference gateway and the metrics adapter: the most Kubernetes kinds.
    "gke-l4-adapters": [],
}


@pytest.mark.parametrize("stack", sorted(PROVIDER_PACKAGES))
def test_a_plan_loads_no_provider_subpackage_beyond_its_budget(
    loaded_by_plan: dict[str, list[str]], stack: str
) -> None:
    """Guards against a plan (and every `pulumi preview`/`up`) slowed again by a whole provider subpackage:
    one `gcp.storage.Bucket(...)` instead of `components.wire.gcp.Bucket(...)` costs ~0.1-0.2 s per run."""
    assert loaded_by_plan[f"{stack}:packages"] == PROVIDER_PACKAGES[stack]


# The other half of the budget: the installed packages a plan may load at all (each list includes the stacks
# rendered before it). The Pulumi SDK brings grpc, protobuf (`google`), opentelemetry, dill, semver and
# packaging; the settings bring pydantic and yaml; the TPU provider tenacity. A new name here is a new
# import on every `pulumi preview`/`up` of that platform: add it deliberately, with its cost measured
# (`python -X importtime`, benchmarks/preview_time.py).
_EVERY_PLAN = [
    "annotated_types",
    "dill",
    "google",
    "grpc",
    "opentelemetry",
    "packaging",
    "pulumi",
    "pulumi_gcp",
    "pulumi_policy",
    "pydantic",
    "pydantic_core",
    "semver",
    "typing_extensions",
    "typing_inspection",
    "yaml",
]
THIRD_PARTY = {
    "l4": sorted(_EVERY_PLAN),
    "tpu-v6e": sorted([*_EVERY_PLAN, "pulumi_random", "tenacity"]),
    # pulumi_kubernetes' own `_utilities` parses its version with parver.
    "gke-l4-adapters": sorted([*_EVERY_PLAN, "pulumi_random", "tenacity", "pulumi_kubernetes", "parver"]),
}


@pytest.mark.parametrize("stack", sorted(THIRD_PARTY))
def test_a_plan_loads_only_the_installed_packages_in_its_budget(
    loaded_by_plan: dict[str, list[str]], stack: str
) -> None:
    """Guards against a plan that starts importing a new library (an HTTP client, a cloud SDK, a CLI toolkit)
    on every `pulumi preview` and `pulumi up`, unnoticed until the plan is slow again."""
    assert sorted(set(loaded_by_plan[f"{stack}:third-party"]) - set(THIRD_PARTY[stack])) == []


def test_the_plans_did_import_their_own_platform(loaded_by_plan: dict[str, list[str]]) -> None:
    """Guards against a check that passes because the child rendered nothing."""
    assert "deploy.cloud_run" in loaded_by_plan["l4"]
    assert "components.vllm_gpu_service" in loaded_by_plan["l4"]
    assert "components.tpu.node" in loaded_by_plan["tpu-v6e"]
    assert "components.gke.gateway" in loaded_by_plan["gke-l4-adapters"]


# Validators a plan never builds (pydantic builds one per model; a large one costs milliseconds): another
# platform's settings (stacks.settings.stack_variant validates the stack's own model, each built on first
# use) and the output contract, which the program reads field names from and only `verify` validates.
_OUTPUT_CONTRACT = [
    "serving.outputs.BenchJobOutputs",
    "serving.outputs.CloudRunOutputs",
    "serving.outputs.CloudRunRolloutOutputs",
    "serving.outputs.DeployedOutputs",
    "serving.outputs.GkeOutputs",
    "serving.outputs.TpuOutputs",
]
NOT_BUILT = {
    "l4": ["stacks.gke_stack.GkeStack", "stacks.tpu_stack.TpuStack", *_OUTPUT_CONTRACT],
    "tpu-v6e": ["stacks.gke_stack.GkeStack", *_OUTPUT_CONTRACT],
    "gke-l4-adapters": _OUTPUT_CONTRACT,
}
OWN_SETTINGS = {
    "l4": "stacks.cloud_run_stack.CloudRunStack",
    "tpu-v6e": "stacks.tpu_stack.TpuStack",
    "gke-l4-adapters": "stacks.gke_stack.GkeStack",
}


@pytest.mark.parametrize("stack", sorted(NOT_BUILT))
def test_a_plan_builds_no_validator_it_does_not_use(loaded_by_plan: dict[str, list[str]], stack: str) -> None:
    """Guards against every plan paying again for the validators of the platforms it is not (the union's
    validator held all three) or of the output contract only readers validate."""
    built = loaded_by_plan[f"{stack}:built"]
    assert sorted(set(built) & set(NOT_BUILT[stack])) == []
    # And the check sees real builds: the stack's own settings model was built to validate it.
    assert OWN_SETTINGS[stack] in built
