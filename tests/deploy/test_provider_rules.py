"""Every stack file's JSON plan obeys the rules pulumi_gcp's input types document (tests/provider_rules.py).

Guards against a plan that previews cleanly and is refused by the Cloud Run API at `pulumi up` (issue 35:
a sidecar liveness probe whose timeout equalled its period, a 7-CPU container on L4, a 19-CPU / 79.5 GiB
vLLM container beside the sidecar on the RTX PRO 6000).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from preview.render import plan_document
from preview.stack_file import available_stacks
from serving.cloud_run_containers import CONTAINER_CPU_VALUES, ContainerSize, split_instance, split_problem
from serving.shapes import the_cloud_run_shape
from stacks.loading import settings_from_config
from tests.conftest import ROOT, render_stack
from tests.provider_rules import args_class_by_name, class_rules, docstring_cpu_values, plan_findings
from tests.stacks.test_settings import config_with, problems_of

# One xdist group for the whole module: the oracle reads its rules from pulumi_gcp's generated Args classes,
# and importing their packages (compute alone is some 300 modules) costs about 2 s of CPU in each worker
# that does it; the plans themselves are rendered once per run whichever worker asks (tests/conftest.py).
pytestmark = pytest.mark.xdist_group("pulumi-gcp-args-classes")
STACKS = available_stacks(ROOT)
SERVICE = "gcp:cloudrunv2/service:Service"
L4 = the_cloud_run_shape("nvidia-l4")
RTX = the_cloud_run_shape("nvidia-rtx-pro-6000")


def json_plan(stack: str) -> dict[str, Any]:
    """The document `make preview STACK=<stack> FORMAT=json` prints, through JSON as the user reads it."""
    document = plan_document(render_stack(stack), stack=stack, project="offline", notes=[])
    loaded: dict[str, Any] = json.loads(json.dumps(document))
    return loaded


def _containers(document: dict[str, Any]) -> list[dict[str, Any]]:
    (service,) = [r for r in document["resources"] if r["type"] == SERVICE]
    containers: list[dict[str, Any]] = service["inputs"]["template"]["containers"]
    return containers


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_plan_passes_the_provider_rules(stack: str) -> None:
    """The plan of every stack file, shipped and example, breaks none of the provider's documented rules."""
    assert [str(finding) for finding in plan_findings(json_plan(stack))] == []


def test_the_oracle_reads_its_rules_from_the_installed_provider() -> None:
    """The rules come from pulumi_gcp's docstrings, so a provider upgrade that changes them changes the oracle;
    the project's own CPU list must be the one the provider documents."""
    probe = class_rules(args_class_by_name("cloudrunv2", "ServiceTemplateContainerLivenessProbeArgs"))
    assert probe["timeoutSeconds"].smaller_than == "periodSeconds"
    assert probe["timeoutSeconds"].minimum == 1
    assert probe["periodSeconds"].maximum_by_probe["liveness"] == 3600
    ingress = class_rules(args_class_by_name("cloudrunv2", "ServiceArgs"))["ingress"]
    assert ingress.possible is not None
    assert "INGRESS_TRAFFIC_INTERNAL_ONLY" in ingress.possible
    assert docstring_cpu_values() == frozenset(CONTAINER_CPU_VALUES)


@pytest.mark.parametrize(
    ("stack", "change", "expected"),
    [
        pytest.param(
            "l4",
            lambda c: c[1]["livenessProbe"].update(timeoutSeconds=30, periodSeconds=30),
            "template.containers[1].livenessProbe.timeoutSeconds: 30 must be smaller than periodSeconds (30)",
            id="probe-timeout-equals-period",
        ),
        pytest.param(
            "l4",
            lambda c: c[0]["resources"]["limits"].update(cpu="7"),
            "template.containers[0].resources.limits.cpu: 7 is not a supported CPU value [1, 2, 4, 6, 8]",
            id="l4-seven-cpu",
        ),
        pytest.param(
            "rtx6000",
            lambda c: c[0]["resources"]["limits"].update(cpu="19", memory="81408Mi"),
            "the GPU container has 19 CPU / 79.5 GiB, below the nvidia-rtx-pro-6000 minimum",
            id="rtx-gpu-container-below-minimum",
        ),
        pytest.param(
            "l4",
            lambda c: c[1]["resources"]["limits"].update(cpu="1", memory="8Gi"),
            "1 CPU allows 0.5-4 GiB of memory, not 8",
            id="memory-beyond-what-the-cpu-allows",
        ),
        pytest.param(
            "l4",
            lambda c: c[0].update(imageTag="x"),
            "ServiceTemplateContainerArgs has no property 'imageTag'",
            id="unknown-property",
        ),
    ],
)
def test_the_oracle_catches_what_the_api_refuses(stack: str, change: Any, expected: str) -> None:
    """Each defect of issue 35 (and its kin) put back into a real plan is found, with the path at fault."""
    document = copy.deepcopy(json_plan(stack))
    change(_containers(document))
    findings = [str(finding) for finding in plan_findings(document)]
    assert any(expected in finding for finding in findings), findings


def test_an_unknown_enum_value_is_found() -> None:
    """'Possible values are' is a rule too: an ingress the API does not know is refused at deploy time."""
    document = copy.deepcopy(json_plan("l4"))
    (service,) = [r for r in document["resources"] if r["type"] == SERVICE]
    service["inputs"]["ingress"] = "INGRESS_TRAFFIC_EVERYWHERE"
    assert any("is not among the possible values" in str(f) for f in plan_findings(document))


def test_the_split_gives_the_gpu_container_the_whole_minimum() -> None:
    """Whether Google counts the GPU's minimum per instance or per GPU container, the shipped sizes pass:
    vLLM alone holds it, and each container takes a CPU value (and memory) Cloud Run allows."""
    l4 = split_instance(L4, cpu=8, memory_gib=32, with_sidecar=True)
    assert l4 is not None
    assert (l4.vllm, l4.sidecar) == (ContainerSize(6, 24 * 1024), ContainerSize(2, 8 * 1024))
    rtx = split_instance(RTX, cpu=21, memory_gib=81, with_sidecar=True)
    assert rtx is not None
    assert (rtx.vllm, rtx.sidecar) == (ContainerSize(20, 80 * 1024), ContainerSize(1, 1024))
    alone = split_instance(L4, cpu=8, memory_gib=32, with_sidecar=False)
    assert alone is not None
    assert (alone.vllm, alone.sidecar) == (ContainerSize(8, 32 * 1024), None)


def test_an_instance_no_split_fits_is_refused_with_its_keys() -> None:
    """An RTX PRO 6000 instance of exactly 20 CPU / 80 GiB leaves the sidecar nothing the GPU container can
    spare: the stack is refused before `pulumi up`, naming the keys and a size that works."""
    problem = split_problem(
        RTX, cpu=20, memory_gib=80, with_sidecar=True, cpu_key="cloudRun.cpu", memory_key="cloudRun.memoryGib"
    )
    assert problem is not None
    assert problem.startswith("cloudRun.cpu/cloudRun.memoryGib: 20 CPU / 80 GiB cannot be shared")
    assert "allowed e.g. cpu 21, memoryGib 81" in problem
    assert split_problem(L4, cpu=7, memory_gib=28, with_sidecar=False, cpu_key="c", memory_key="m") is not None


def test_a_stack_whose_instance_no_split_fits_is_refused_at_load() -> None:
    """The RTX PRO 6000 stack as it shipped before issue 35 (20 CPU / 80 GiB with the metrics sidecar) is
    refused by the preview, not by the Cloud Run API; without the sidecar the same size is fine."""
    message = problems_of(config_with("rtx6000", cloudRun__cpu=20, cloudRun__memoryGib=80))
    assert "cloudRun.cpu/cloudRun.memoryGib: 20 CPU / 80 GiB cannot be shared the way Cloud Run allows" in message
    settings_from_config(config_with("rtx6000", cloudRun__cpu=20, cloudRun__memoryGib=80, monitoring__enabled=False))
