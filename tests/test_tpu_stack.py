"""The whole program for the tpu-v6e stack under mocks: what Google would receive, and what it must not."""

from __future__ import annotations

import json
import runpy
from typing import Any

import pytest
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import settings as pulumi_settings
from pulumi.runtime.config import set_all_config

from preview.capture import SECRET_SIGNATURE, Capture, OfflineMocks, RecordingMonitor, run_registrations
from preview.render import clean, plan_document, text_plan
from preview.tpu_plan import tpu_section
from stacks.vllm_args import check_serve_args
from tests.conftest import ROOT, render_stack, stack_config

QUEUED = "pulumi-python:dynamic/tpu:QueuedResource"
FIREWALL = "gcp:compute/firewall:Firewall"
STACK = "tpu-v6e"


@pytest.fixture(scope="module")
def rendered() -> Capture:
    return render_stack(STACK)


def body(capture: Capture) -> dict[str, Any]:
    return dict(clean(capture.one(QUEUED).inputs)["requestBody"])


def test_request_is_a_v6e_1_flex_start_node_with_internal_ip(rendered: Capture) -> None:
    """The stack asks for one v6e chip on flex-start for 4 hours, with no external IP."""
    request = body(rendered)
    assert request["provisioningModel"] == "FLEX_START"
    assert request["runDuration"] == {"maxRunDuration": "14400s"}
    assert "spot" not in request
    assert "guaranteed" not in request
    spec = request["tpu"]["nodeSpec"][0]
    assert spec["parent"].endswith("/locations/us-east5-a")
    node = spec["node"]
    assert node["acceleratorType"] == "v6e-1"
    assert node["runtimeVersion"] == "v2-alpha-tpuv6e"
    assert node["networkConfig"]["enableExternalIps"] is False
    assert node["serviceAccount"]["email"].startswith("gemma-tpu-v6e-vllm@")
    assert node["labels"]["stack"] == "tpu-v6e"
    assert clean(rendered.one(QUEUED).inputs)["activeDeadlineSeconds"] == 7200


def test_vllm_arguments_are_the_tpu_settings_and_vllm_accepts_them(rendered: Capture) -> None:
    """Tensor parallel 1, bf16, fp8 KV cache, 16K context, 4096 batched tokens, Gemma 4 parsers; all valid."""
    args = rendered.outputs["vllmArgs"]
    assert check_serve_args(args) == []
    pairs = {args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("--")}
    assert pairs["--tensor-parallel-size"] == "1"
    assert pairs["--dtype"] == "bfloat16"
    assert pairs["--kv-cache-dtype"] == "fp8"
    assert pairs["--max-model-len"] == "16384"
    assert pairs["--max-num-batched-tokens"] == "4096"
    assert pairs["--tool-call-parser"] == "gemma4"
    assert pairs["--reasoning-parser"] == "gemma4"
    assert "--api-key" not in args
    script = body(rendered)["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"]
    assert "--tensor-parallel-size 1" in script


def test_no_port_is_open_to_the_internet(rendered: Capture) -> None:
    """Internal only: the one rule is SSH from IAP's range; nothing anywhere says 0.0.0.0/0 or ::/0."""
    rules = rendered.of_type(FIREWALL)
    assert [rule.inputs["sourceRanges"] for rule in rules] == [["35.235.240.0/20"]]
    assert [rule.inputs["allows"] for rule in rules] == [[{"protocol": "tcp", "ports": ["22"]}]]
    document = json.dumps(plan_document(rendered, stack=STACK, project="gemma-serving", notes=[]))
    assert "0.0.0.0/0" not in document
    assert "::/0" not in document


def test_public_endpoint_is_firewalled_to_the_named_ranges() -> None:
    """Asking for a public endpoint opens the vLLM port to exactly the configured ranges, nothing more."""
    tpu = json.loads(stack_config(STACK).values["gemma-serving:tpu"])
    tpu.update(publicEndpoint=True, allowedSourceRanges=["203.0.113.0/24"], iapSsh=False)
    capture = render_stack(STACK, {"gemma-serving:tpu": json.dumps(tpu)})
    (rule,) = capture.of_type(FIREWALL)
    assert rule.inputs["sourceRanges"] == ["203.0.113.0/24"]
    assert rule.inputs["allows"] == [{"protocol": "tcp", "ports": ["8000"]}]
    assert body(capture)["tpu"]["nodeSpec"][0]["node"]["networkConfig"]["enableExternalIps"] is True


def test_spot_variant_is_unbounded_by_design() -> None:
    """Spot needs no run duration (preemptible); the body carries the spot tier instead."""
    tpu = json.loads(stack_config(STACK).values["gemma-serving:tpu"])
    tpu.update(zone="us-east5-b", provisioning={"model": "spot"})
    request = body(render_stack(STACK, {"gemma-serving:tpu": json.dumps(tpu)}))
    assert request["spot"] == {}
    assert "runDuration" not in request


def test_outputs_are_what_verify_reads(rendered: Capture) -> None:
    """docs/architecture.md's contract for an api-key TPU endpoint, plus the request's name and node id."""
    outputs = clean(rendered.outputs)
    assert outputs["authKind"] == "api-key"
    assert outputs["platform"] == "tpu"
    assert outputs["accelerator"] == "tpu-v6e"
    assert outputs["servedModelName"] == "gemma-4-12b-it"
    assert outputs["maxModelLen"] == 16384
    assert outputs["maxNumSeqs"] == 64
    assert outputs["nodeId"] == "gemma-tpu-v6e-vllm"
    assert outputs["apiKeySecret"].endswith("/secrets/gemma-tpu-v6e-vllm-api-key")
    assert "endpoint" in outputs
    assert "queuedResourceName" in outputs


def test_text_plan_shows_request_firewall_and_script(rendered: Capture) -> None:
    """Reviewers see the request body, the firewall and the startup script in `make preview`."""
    section = "\n".join(tpu_section(rendered))
    assert '"provisioningModel": "FLEX_START"' in section
    assert '"maxRunDuration": "14400s"' in section
    assert "INGRESS tcp:22 from 35.235.240.0/20" in section
    assert '"startup-script": "<the startup script below>"' in section
    assert '|   docker "${DOCKER_RUN_ARGS[@]}"' in section


class CanaryMocks(OfflineMocks):
    """Gives the generated API key a recognisable value; it must never surface unmasked."""

    CANARY = "CANARY-generated-vllm-key-6f1d2c"

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == "random:index/randomPassword:RandomPassword":
            state["result"] = self.CANARY
        return resource_id, state


def _unmasked(value: Any) -> list[str]:
    """Strings holding the canary that are not inside a secret wrapper."""
    if isinstance(value, dict):
        if SECRET_SIGNATURE in value or SECRET_SIGNATURE in value.values():
            return []
        return [hit for item in value.values() for hit in _unmasked(item)]
    if isinstance(value, list):
        return [hit for item in value for hit in _unmasked(item)]
    return [value] if isinstance(value, str) and CanaryMocks.CANARY in value else []


def test_no_secret_value_anywhere_in_the_plan() -> None:
    """The API key is a secret end to end: wrapped in every input that carries it, absent from both plans."""
    config = stack_config(STACK)
    config.values.setdefault("gcp:project", "test-project")
    capture = Capture()
    mocks = CanaryMocks(project="test-project")
    pulumi_settings.reset_options()
    pulumi_mocks.set_mocks(
        mocks, project=config.project, stack=STACK, preview=True, monitor=RecordingMonitor(mocks, capture)
    )
    set_all_config(config.values, config.secret_keys)
    run_registrations(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), capture)
    carriers = [r for r in capture.resources if "secretData" in r.inputs]
    assert [r.type for r in carriers] == ["gcp:secretmanager/secretVersion:SecretVersion"]
    # The canary did reach the plan (so the checks below are not vacuous), wrapped as a secret.
    assert carriers[0].inputs["secretData"]["value"] == CanaryMocks.CANARY
    assert [hit for r in capture.resources for hit in _unmasked(r.inputs)] == []
    text = text_plan(capture, stack=STACK, project=config.project, notes=[]) + "\n".join(tpu_section(capture))
    document = json.dumps(plan_document(capture, stack=STACK, project=config.project, notes=[]))
    assert CanaryMocks.CANARY not in text
    assert CanaryMocks.CANARY not in document
