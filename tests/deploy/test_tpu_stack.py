"""The whole program for the tpu-v6e stack under mocks: what Google would receive, and what it must not.

Also what the node needs before vLLM starts: the pinned image pulled through the stack's Docker Hub mirror
(its account a reader of that repository only, docker logged in to the registry host), and the weights
imported into the bucket before the queued resource is even requested.
"""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import mocks as pulumi_mocks

from components.tpu.startup_script import DATA_END_MARKER
from deploy.weights import SecretConfigError
from policy.images import IMAGES_PINNED
from preview import pulumi_sdk
from preview.capture import SECRET_SIGNATURE, Capture, OfflineMocks, RecordingMonitor, run_registrations
from preview.render import clean, plan_document, text_plan
from preview.supply_plan import supply_section
from preview.tpu_plan import script_value, startup_scripts, tpu_section
from serving.vllm_args import check_serve_args
from tests.conftest import ROOT, render_stack, stack_config
from tests.stacks.test_settings import long_form

QUEUED = "pulumi-python:dynamic/tpu:QueuedResource"
FIREWALL = "gcp:compute/firewall:Firewall"
REPOSITORY = "gcp:artifactregistry/repository:Repository"
REPOSITORY_READER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
IMPORT_RUN = "command:local:Command"
STACK = "tpu-v6e"
# The bf16 checkpoint the stack serves, at the commit the stack file pins.
CHECKPOINT = "hf://google/gemma-4-12B-it @ 707f0a3b8a3c7ad586ed01e27eafbad8a27dd0f7"


@pytest.fixture(scope="module")
def rendered() -> Capture:
    return render_stack(STACK)


def body(capture: Capture) -> dict[str, Any]:
    return dict(clean(capture.one(QUEUED).inputs)["requestBody"])


def script(capture: Capture) -> str:
    return str(body(capture)["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"])


def node_member(capture: Capture) -> str:
    return "serviceAccount:" + str(body(capture)["tpu"]["nodeSpec"][0]["node"]["serviceAccount"]["email"])


def test_node_pulls_the_pinned_tpu_image_through_the_stack_mirror(rendered: Capture) -> None:
    """No Docker Hub pull from the VM (rate limits, unpinned drift): the script runs the pinned tag from
    the mirror in the TPU zone's own region, and the `image` output names exactly that reference."""
    (repository,) = [clean(r.inputs) for r in rendered.of_type(REPOSITORY)]
    assert repository["remoteRepositoryConfig"]["dockerRepository"]["publicRepository"] == "DOCKER_HUB"
    assert repository["location"] == "us-east5"
    assert body(rendered)["tpu"]["nodeSpec"][0]["parent"].endswith(f"/locations/{repository['location']}-a")
    expected = (
        f"{repository['location']}-docker.pkg.dev/{repository['project']}/{repository['repositoryId']}"
        "/vllm/vllm-tpu:v0.32.0"
    )
    assert script_value(script(rendered), "IMAGE") == expected
    assert clean(rendered.outputs)["image"] == expected
    data = script(rendered).split(DATA_END_MARKER, 1)[0] + '\nprintf "%s\\0" "${DOCKER_RUN_ARGS[@]}"\n'
    argv = subprocess.run(["bash", "-c", data], capture_output=True, check=True, timeout=30).stdout.decode().split("\0")
    # `--entrypoint python3 <image> -c <launcher> <guard config> serve ...`: the image right after the entrypoint.
    assert argv[argv.index("--entrypoint") + 2] == expected
    assert argv[argv.index(expected) + 1 : argv.index(expected) + 2] == ["-c"]
    assert IMAGES_PINNED.violations(QUEUED, rendered.one(QUEUED).inputs) == []


def test_pinning_policy_reads_the_mirrored_reference(rendered: Capture) -> None:
    """The images-pinned guardrail still sees the image behind the mirror path: a moving tag is caught."""
    inputs = json.loads(json.dumps(clean(rendered.one(QUEUED).inputs)))
    metadata = inputs["requestBody"]["tpu"]["nodeSpec"][0]["node"]["metadata"]
    metadata["startup-script"] = metadata["startup-script"].replace("vllm-tpu:v0.32.0", "vllm-tpu:latest")
    assert IMAGES_PINNED.violations(QUEUED, inputs)


def test_node_account_reads_the_mirror_and_no_other_repository(rendered: Capture) -> None:
    """The VM pulls with its own account: reader on the stack's mirror only, never project-wide."""
    readers = [clean(r.inputs) for r in rendered.of_type(REPOSITORY_READER)]
    (repository,) = [clean(r.inputs) for r in rendered.of_type(REPOSITORY)]
    assert [(r["repository"], r["location"], r["role"], r["member"]) for r in readers] == [
        (repository["repositoryId"], repository["location"], "roles/artifactregistry.reader", node_member(rendered))
    ]
    project_roles = [clean(r.inputs)["role"] for r in rendered.of_type("gcp:projects/iAMMember:IAMMember")]
    # Writing logs, and metrics for the collector beside vLLM; nothing else project-wide.
    assert project_roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]


def test_startup_script_logs_docker_in_to_the_registry_and_is_valid_bash(rendered: Capture, tmp_path: Path) -> None:
    """Without docker credentials for <region>-docker.pkg.dev the pull is refused and vLLM never starts; a
    script that does not parse does nothing at boot."""
    text = script(rendered)
    assert script_value(text, "REGISTRY_HOST") == "us-east5-docker.pkg.dev"
    assert 'gcloud auth configure-docker "$REGISTRY_HOST" --quiet' in text
    path = tmp_path / "startup.sh"
    path.write_text(text)
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=30)
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    result = subprocess.run(
        [shellcheck, "--severity=style", str(path)], check=False, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout


def test_queued_resource_waits_for_the_weight_import_and_the_mirror_grant(rendered: Capture) -> None:
    """vLLM must never boot against an empty bucket path, nor try to pull before it may read the mirror:
    the request depends on the import run and the reader binding."""
    dependencies = set(rendered.one(QUEUED).dependencies)
    (run,) = rendered.of_type(IMPORT_RUN)
    (reader,) = rendered.of_type(REPOSITORY_READER)
    assert run.urn in dependencies
    assert reader.urn in dependencies


def test_weights_come_from_the_bf16_checkpoint_at_a_pinned_commit(rendered: Capture) -> None:
    """The import copies the checkpoint the node serves (model.path, bf16) into that very bucket path."""
    (job,) = rendered.of_type("gcp:cloudrunv2/job:Job")
    container = clean(job.inputs)["template"]["template"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["envs"]}
    assert (env["IMPORT_SOURCE"], env["IMPORT_REVISION"]) == ("hf://google/gemma-4-12B-it", CHECKPOINT[-40:])
    assert env["IMPORT_PREFIX"] == "gemma-4-12B-it"
    assert "MODEL_DIRS=(\n  gemma-4-12B-it\n)" in script(rendered)
    assert set(clean(rendered.outputs)["importJobs"]) == {"target"}


def test_plan_shows_the_import_job_and_the_image_the_node_pulls(rendered: Capture) -> None:
    """`make preview STACK=tpu-v6e` shows what runs before vLLM: the import and the node's image."""
    section = "\n".join(supply_section(rendered))
    assert "Weight import gemma-tpu-v6e-import-target:" in section
    assert CHECKPOINT in section
    image = script_value(script(rendered), "IMAGE")
    assert f"tpu node gemma-tpu-v6e-vllm <- {image} (docker logs in to us-east5-docker.pkg.dev" in section
    assert f"readers: {node_member(rendered)}" in section
    assert f"Image:         {image}" in "\n".join(tpu_section(rendered))


def test_gated_checkpoint_without_a_token_names_the_key() -> None:
    """Should the checkpoint become gated, `pulumi up` stops with the key to set, not a 401 in the job."""
    values = long_form(stack_config(STACK).values)
    model = json.loads(values["gemma-serving:model"])
    model["source"]["huggingFace"]["gated"] = True
    with pytest.raises(SecretConfigError, match="pulumi config set --secret gemma-serving:hfToken"):
        render_stack(
            STACK, {"gemma-serving:model": json.dumps(model), "gemma-serving:vllm": values["gemma-serving:vllm"]}
        )


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
    assert (outputs["zone"], outputs["acceleratorType"], outputs["provisioningModel"]) == (
        "us-east5-a",
        "v6e-1",
        "flex-start",
    )


def test_text_plan_shows_request_firewall_and_script(rendered: Capture) -> None:
    """Reviewers see the request body, the firewall and the startup script in `make preview`."""
    section = "\n".join(tpu_section(rendered))
    assert '"provisioningModel": "FLEX_START"' in section
    assert '"maxRunDuration": "14400s"' in section
    assert "INGRESS tcp:22 from 35.235.240.0/20" in section
    assert '"startup-script": "<the startup script below>"' in section
    assert "| IMAGE=" in section  # the rendered values stay visible
    assert "# --- end of rendered data ---" in section


def test_text_plan_folds_the_startup_script_and_json_keeps_it_whole(rendered: Capture) -> None:
    """The TPU text plan was 367 lines, 250 of them the startup script: the text shows its rendered data
    and folds the fixed code into one line; the JSON plan keeps the whole script."""
    section = tpu_section(rendered)
    (fold,) = [line for line in section if "more lines: the fixed code of components/tpu/startup_script.py" in line]
    assert "the whole script is in the FORMAT=json plan" in fold
    assert not any('docker "${DOCKER_RUN_ARGS[@]}"' in line for line in section)
    (script,) = [script for _, script in startup_scripts(rendered)]
    assert 'docker "${DOCKER_RUN_ARGS[@]}"' in script
    assert len(section) < 120


class CanaryMocks(OfflineMocks):
    """Gives the generated API key a recognisable value; it must never surface unmasked."""

    CANARY = "CANARY-generated-vllm-key-6f1d2c"
    # A Hugging Face token set with `pulumi config set --secret` (the import job would read it).
    HF_TOKEN = "hf_CanaryTokenForTheTpuStack0123456789"

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
    canaries = (CanaryMocks.CANARY, CanaryMocks.HF_TOKEN)
    return [value] if isinstance(value, str) and any(canary in value for canary in canaries) else []


def test_no_secret_value_anywhere_in_the_plan() -> None:
    """The API key and a Hugging Face token are secrets end to end: wrapped in every input that carries
    them, absent from both plans, the outputs and the log; only the import job may read the token."""
    config = stack_config(STACK)
    config.values.setdefault("gcp:project", "test-project")
    config.values["gemma-serving:hfToken"] = CanaryMocks.HF_TOKEN
    config.secret_keys = [*config.secret_keys, "gemma-serving:hfToken"]
    capture = Capture()
    mocks = CanaryMocks(project="test-project")
    pulumi_sdk.reset_options()
    pulumi_mocks.set_mocks(
        mocks, project=config.project, stack=STACK, preview=True, monitor=RecordingMonitor(mocks, capture)
    )
    pulumi_sdk.set_all_config(config.values, config.secret_keys)
    run_registrations(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"), capture)
    carriers = [r for r in capture.resources if "secretData" in r.inputs]
    assert {r.type for r in carriers} == {"gcp:secretmanager/secretVersion:SecretVersion"}
    # Both canaries did reach the plan (so the checks below are not vacuous), wrapped as secrets.
    assert sorted(r.inputs["secretData"]["value"] for r in carriers) == sorted(
        [CanaryMocks.CANARY, CanaryMocks.HF_TOKEN]
    )
    assert [hit for r in capture.resources for hit in _unmasked(r.inputs)] == []
    text = "\n".join(
        [
            text_plan(capture, stack=STACK, project=config.project, notes=[]),
            *tpu_section(capture),
            *supply_section(capture),
        ]
    )
    document = json.dumps(plan_document(capture, stack=STACK, project=config.project, notes=[]))
    outputs = json.dumps(clean(capture.outputs))
    for canary in (CanaryMocks.CANARY, CanaryMocks.HF_TOKEN):
        assert canary not in text
        assert canary not in document
        assert canary not in outputs
        assert all(canary not in message for _, message in capture.logs)
    token_readers = [
        clean(r.inputs)
        for r in capture.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
        if clean(r.inputs)["secretId"].endswith("hf-token")
    ]
    assert [r["member"] for r in token_readers] == [
        "serviceAccount:gemma-tpu-v6e-imp-target@test-project.iam.gserviceaccount.com"
    ]
