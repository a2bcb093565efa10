"""The names `serving/naming.py` yields are the names the program really gives a stack's resources.

verify and the MCP server look resources up by these names (a log filter, an import run's URN, the
candidate tag, the TPU container's log lines); if the program named them otherwise, the readers would
find nothing and report "not deployed" for a stack that runs.
"""

from __future__ import annotations

import pytest

from preview.capture import Capture
from serving.naming import (
    CANDIDATE_TAG,
    GPU_SERVING_CONTAINER,
    IMPORT_JOB_CONTAINER,
    TPU_SERVING_CONTAINER,
    TPU_STARTUP_LOG_PREFIX,
    StackNames,
    TypeToken,
)
from tests.conftest import render_stack

SERVICE = "gcp:cloudrunv2/service:Service"
JOB = "gcp:cloudrunv2/job:Job"
ACCOUNT = "gcp:serviceaccount/account:Account"
QUEUED_RESOURCE = "pulumi-python:dynamic/tpu:QueuedResource"


def _names(capture: Capture) -> set[str]:
    return {resource.name for resource in capture.resources}


def _account_ids(capture: Capture) -> set[str]:
    return {str(resource.inputs["accountId"]) for resource in capture.resources if resource.type == ACCOUNT}


@pytest.mark.parametrize("stack", ["l4", "rtx6000", "tpu-v6e"])
def test_every_component_name_is_in_the_plan(stack: str) -> None:
    """A reader that looks for `gemma-<stack>-...` finds the component the program made."""
    capture = render_stack(stack)
    names = StackNames(stack)
    present = _names(capture)
    for expected in (
        names.project_apis,
        names.identity,
        names.model_bucket,
        names.image_mirror,
        names.serving,
        names.import_job("target"),
        names.import_run("target"),
    ):
        assert expected in present, f"{expected} is not a resource of {stack}'s plan"
    assert names.account_id("vllm") in _account_ids(capture)
    assert names.import_role_of_run(names.import_run("target")) == "target"


@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_cloud_run_names_readers_use(stack: str) -> None:
    """`verify status`'s log filter and `verify promote` read the service name, container and tag."""
    capture = render_stack(stack)
    names = StackNames(stack)
    service = capture.one(SERVICE).inputs
    assert service["name"] == names.serving
    assert service["template"]["containers"][0]["name"] == GPU_SERVING_CONTAINER
    assert CANDIDATE_TAG in {target.get("tag") for target in service["traffics"]}
    job = next(resource for resource in capture.resources if resource.type == JOB)
    assert job.inputs["name"].startswith(names.import_job_prefix)
    assert job.inputs["template"]["template"]["containers"][0]["name"] == IMPORT_JOB_CONTAINER


def test_tpu_names_readers_use() -> None:
    """`verify status` asks for the queued resource and node by name; `verify logs` filters on the
    container and the startup script's prefix."""
    capture = render_stack("tpu-v6e")
    names = StackNames("tpu-v6e")
    queued = capture.one(QUEUED_RESOURCE).inputs
    assert queued["queuedResourceId"] == names.serving
    assert queued["nodeId"] == names.serving
    script = queued["requestBody"]["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"]
    assert f"CONTAINER={TPU_SERVING_CONTAINER}" in script
    assert f'echo "{TPU_STARTUP_LOG_PREFIX} $*"' in script
    queued_path = names.queued_resource_path("p", "us-east5-b")
    assert queued_path == f"projects/p/locations/us-east5-b/queuedResources/{names.serving}"


def test_every_type_token_is_a_component_of_some_plan() -> None:
    """A component whose token changed without the readers knowing would be missed in URN lookups."""
    types = {resource.type for stack in ("l4", "tpu-v6e", "gke-tpu-v6e") for resource in render_stack(stack).resources}
    tokens = {value for key, value in vars(TypeToken).items() if key.isupper()}
    # The derived image, the bench job and the adapters' import identity appear only with a `registry.build`,
    # `bench` or `adapters` block.
    assert tokens - types == {TypeToken.DERIVED_IMAGE, TypeToken.BENCH_JOB, TypeToken.IMPORT_IDENTITY}


def test_a_long_stack_name_still_gives_a_valid_account_id() -> None:
    """Google refuses service-account ids over 30 characters: the stack name is cut, the role kept."""
    account = StackNames("a-very-long-stack-name-for-testing").account_id("imp-drafter")
    assert len(account) <= 30
    assert account.endswith("-imp-drafter")
