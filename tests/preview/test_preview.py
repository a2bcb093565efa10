"""The offline preview as users run it: `python -m preview --stack ... [--format json]`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.preview_cli import SHARES_SHIPPED_PLANS, run_preview, shipped_plan, stack_root_with


@SHARES_SHIPPED_PLANS
def test_text_plan_says_it_is_offline_and_shows_the_command() -> None:
    """Reviewers see that the plan is offline and read the exact vLLM command, JSON flags and mount options intact."""
    result = shipped_plan("rtx6000")
    assert result.returncode == 0, result.stderr
    assert "OFFLINE PLAN" in result.stdout
    assert "not `pulumi preview`" in result.stdout
    assert "gcp:project is not set" in result.stdout
    assert "python3 -c '<launcher: vLLM behind the route guard, serving/route_guard.py>'" in result.stdout
    assert "serve /mnt/models/gemma-4-12B-it-qat-w4a16-ct" in result.stdout
    assert '\'{"method":"mtp","model":"/mnt/models/gemma-4-12B-it-assistant","num_speculative_tokens":3}\'' in (
        result.stdout
    )
    assert "uid=1001,gid=1001" in result.stdout


@SHARES_SHIPPED_PLANS
def test_json_plan_is_the_only_thing_on_stdout() -> None:
    """`FORMAT=json` output is piped into tools: one JSON document, nothing else."""
    result = shipped_plan("l4", "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["stack"] == "l4"
    assert document["offline"] is True
    types = {resource["type"] for resource in document["resources"]}
    assert "gcp:cloudrunv2/service:Service" in types
    for resource in document["resources"]:
        assert set(resource) >= {"type", "name", "parent", "inputs"}
    assert document["outputs"]["servedModelName"] == "gemma-4-12b-it"


def test_bad_stack_file_gives_the_message_not_a_traceback(tmp_path: Path) -> None:
    """A stack file mistake prints one line per problem with its key, exits 1, and prints no traceback or plan."""
    root = stack_root_with(tmp_path, "l4", {"gemma-serving:cloudRun": {"cpu": 2, "memoryGib": 16, "concurrency": 4}})
    result = run_preview("--stack", "l4", root=root)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "cloudRun.cpu: 2 is below the NVIDIA L4 minimum of 4 CPU per instance" in result.stderr
    assert "cloudRun.concurrency: 4 is below vllm.maxNumSeqs (64)" in result.stderr
    assert result.stdout == ""


def test_unknown_stack_is_a_usage_error() -> None:
    """A mistyped stack name is a usage error (exit 2) that lists the stacks there are."""
    result = run_preview("--stack", "h100")
    assert result.returncode == 2
    assert "no stack file Pulumi.h100.yaml; stacks here:" in result.stderr
    assert "Traceback" not in result.stderr


def test_secure_values_are_masked(tmp_path: Path) -> None:
    """Encrypted stack values cannot be decrypted offline; they are stood in for and never printed."""
    root = stack_root_with(tmp_path, "l4", {"gemma-serving:someSecret": {"secure": "v1:AAAAcipher"}})
    result = run_preview("--stack", "l4", root=root)
    # The program refuses the unknown key, but the ciphertext must not leak into any message.
    assert "v1:AAAAcipher" not in result.stdout + result.stderr


@SHARES_SHIPPED_PLANS
@pytest.mark.parametrize("stack", ["l4", "rtx6000"])
def test_every_shipped_stack_previews(stack: str) -> None:
    """FORMAT=json prints one parseable document with the resources, for every GPU stack file we ship."""
    result = shipped_plan(stack, "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["resources"]


def _unsorted_keys(value: object, where: str) -> list[str]:
    if isinstance(value, dict):
        keys = list(value)
        found = [where] if keys != sorted(keys) else []
        return found + [problem for key in keys for problem in _unsorted_keys(value[key], f"{where}.{key}")]
    if isinstance(value, list):
        return [problem for index, item in enumerate(value) for problem in _unsorted_keys(item, f"{where}[{index}]")]
    return []


@SHARES_SHIPPED_PLANS
@pytest.mark.parametrize("stack", ["l4", "rtx6000", "tpu-v6e"])
def test_plans_read_the_same_whatever_protobuf_orders_maps(stack: str) -> None:
    """A plan diffed between CI and a laptop showed reordered inputs: protobuf 5 and 6 iterate a Struct's
    map in different orders. Every mapping of inputs and outputs is in key order, so the bytes are the same."""
    result = shipped_plan(stack, "json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    problems = [
        problem
        for resource in document["resources"]
        for problem in _unsorted_keys(resource["inputs"], f"{resource['name']}.inputs")
    ]
    assert problems + _unsorted_keys(document["outputs"], "outputs") == []
