"""The whole program for each GPU stack, rendered under mocks: what the engine would receive."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from policy.image_pins import image_pin_problem
from preview.capture import Capture, CapturedResource
from preview.render import clean
from serving.shapes import Accelerator, the_cloud_run_shape
from serving.vllm_args import check_serve_args
from stacks.loading import settings_from_config
from stacks.settings import CloudRunStack
from tests.cloud_run_instance import instance_size, vllm_container
from tests.conftest import render_stack, stack_config

GPU_STACKS = {"l4": Accelerator("nvidia-l4"), "rtx6000": Accelerator("nvidia-rtx-pro-6000")}
SERVICE = "gcp:cloudrunv2/service:Service"


@pytest.fixture(scope="module", params=sorted(GPU_STACKS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, Capture]:
    stack: str = request.param
    return stack, render_stack(stack)


def service_inputs(capture: Capture) -> dict[str, Any]:
    return dict(clean(capture.one(SERVICE).inputs))


def container(capture: Capture) -> dict[str, Any]:
    """vLLM's container (the metrics sidecar is the other one)."""
    return vllm_container(service_inputs(capture)["template"])


def test_gpu_limit_and_node_selector(rendered: tuple[str, Capture]) -> None:
    """One GPU per instance, and the node selector that makes Cloud Run attach the right one."""
    stack, capture = rendered
    template = service_inputs(capture)["template"]
    gpu = the_cloud_run_shape(GPU_STACKS[stack])
    assert container(capture)["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert template["nodeSelector"] == {"accelerator": gpu.cloud_run_selector}
    assert template["gpuZonalRedundancyDisabled"] is True


def test_instance_billing_and_startup_boost(rendered: tuple[str, Capture]) -> None:
    """Cloud Run refuses a GPU with CPU throttling; boost shortens the model load."""
    _, capture = rendered
    resources = container(capture)["resources"]
    assert resources["cpuIdle"] is False
    assert resources["startupCpuBoost"] is True


def test_cpu_and_memory_meet_gpu_minimum(rendered: tuple[str, Capture]) -> None:
    """Each shipped GPU stack's instance (its containers together) and vLLM's container alone have at least the
    GPU's minimum CPU and memory (Cloud Run rejects less; its GPU page does not say which of the two it counts)."""
    stack, capture = rendered
    gpu = the_cloud_run_shape(GPU_STACKS[stack])
    cpu, memory_gib = instance_size(service_inputs(capture)["template"])
    assert cpu >= gpu.host_vcpu
    assert memory_gib >= gpu.host_memory_gib
    # And vLLM's container alone (it holds the GPU), in case Google counts the minimum per GPU container.
    limits = container(capture)["resources"]["limits"]
    assert float(limits["cpu"]) >= gpu.host_vcpu
    assert limits["memory"].endswith("Gi")
    assert int(limits["memory"][:-2]) >= gpu.host_memory_gib


def test_gcs_mount_with_uid_gid_read_only_gen2(rendered: tuple[str, Capture]) -> None:
    """Without uid/gid the container user cannot read the weights."""
    _, capture = rendered
    template = service_inputs(capture)["template"]
    assert template["executionEnvironment"] == "EXECUTION_ENVIRONMENT_GEN2"
    (volume,) = [volume for volume in template["volumes"] if "gcs" in volume]
    assert volume["gcs"]["readOnly"] is True
    assert volume["gcs"]["mountOptions"][:2] == ["uid=1001", "gid=1001"]
    (mount,) = container(capture)["volumeMounts"]
    assert mount == {"name": volume["name"], "mountPath": "/mnt/models"}
    assert container(capture)["args"][0].startswith("/mnt/models/")


def test_probes_within_cloud_run_limits_and_cover_the_load(rendered: tuple[str, Capture]) -> None:
    """Probe values outside Cloud Run's ranges are rejected; a startup window shorter than the load kills instances."""
    stack, capture = rendered
    probe = container(capture)["startupProbe"]
    assert probe["httpGet"]["path"] == "/health"
    for key in ("initialDelaySeconds", "periodSeconds", "timeoutSeconds"):
        assert 0 <= probe[key] <= 240
    assert probe["timeoutSeconds"] < probe["periodSeconds"]
    window = probe["initialDelaySeconds"] + probe["periodSeconds"] * probe["failureThreshold"]
    settings = settings_from_config(stack_config(stack).values)
    assert isinstance(settings, CloudRunStack)
    assert window >= settings.startup_load_seconds  # the load the stack's checkpoint and load mode need
    liveness = container(capture)["livenessProbe"]
    assert liveness["timeoutSeconds"] < liveness["periodSeconds"] <= 240


def test_concurrency_not_below_max_num_seqs(rendered: tuple[str, Capture]) -> None:
    """The known failure: Cloud Run concurrency below vLLM's batch capped throughput at ~3 req/s."""
    _, capture = rendered
    args = container(capture)["args"]
    max_num_seqs = int(args[args.index("--max-num-seqs") + 1])
    assert service_inputs(capture)["template"]["maxInstanceRequestConcurrency"] >= max_num_seqs
    assert capture.outputs["concurrency"] >= max_num_seqs


def test_request_timeout_and_port(rendered: tuple[str, Capture]) -> None:
    """Long generations need the 60-minute timeout, and Cloud Run must route to the port vLLM listens on."""
    _, capture = rendered
    template = service_inputs(capture)["template"]
    assert template["timeout"] == "3600s"
    args = container(capture)["args"]
    assert container(capture)["ports"]["containerPort"] == int(args[args.index("--port") + 1])


def test_no_public_invoker_and_private_bucket(rendered: tuple[str, Capture]) -> None:
    """Neither the GPU endpoint nor the weights may be public."""
    _, capture = rendered
    for member in capture.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember"):
        assert member.inputs["member"] not in {"allUsers", "allAuthenticatedUsers"}
    assert service_inputs(capture)["invokerIamDisabled"] is False
    bucket = clean(capture.one("gcp:storage/bucket:Bucket").inputs)
    assert bucket["uniformBucketLevelAccess"] is True
    assert bucket["publicAccessPrevention"] == "enforced"
    assert bucket["forceDestroy"] is False


def test_service_account_reads_the_bucket_only(rendered: tuple[str, Capture]) -> None:
    """The serving identity is dedicated and gets objectViewer on the model bucket; its one project-level role is
    the metric writer its metrics sidecar needs, nothing broader."""
    _, capture = rendered
    # The serving identity's account (the weight imports have accounts of their own).
    (account,) = [r for r in capture.of_type("gcp:serviceaccount/account:Account") if r.name.endswith("-identity-sa")]
    email = f"{account.inputs['accountId']}@offline-placeholder-project.iam.gserviceaccount.com"
    assert service_inputs(capture)["template"]["serviceAccount"] == email
    readers = [
        r for r in capture.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if r.inputs["member"].endswith(email)
    ]
    assert [r.inputs["role"] for r in readers] == ["roles/storage.objectViewer"]
    project_roles = [
        r.inputs["role"]
        for r in capture.of_type("gcp:projects/iAMMember:IAMMember")
        if clean(r.inputs["member"]).endswith(email)
    ]
    assert project_roles == ["roles/monitoring.metricWriter"]


def test_vllm_args_accepted_by_the_recorded_parser(rendered: tuple[str, Capture]) -> None:
    """Every flag and choice must be one vLLM 0.32 accepts (checked against the repo's own copy)."""
    _, capture = rendered
    assert check_serve_args(container(capture)["args"]) == []


def test_children_are_parented_and_named_after_their_component(rendered: tuple[str, Capture]) -> None:
    """Every resource sits under a component and is named after it, so the plan reads as a tree."""
    _, capture = rendered
    components = {r.urn: r for r in capture.resources if r.type.startswith("gemma:")}
    for resource in capture.resources:
        if resource.type.startswith("gemma:"):
            continue
        parent: CapturedResource | None = components.get(resource.parent or "")
        assert parent is not None, f"{resource.type} {resource.name} has no component parent"
        assert resource.name.startswith(parent.name + "-")


def test_outputs_verify_needs(rendered: tuple[str, Capture]) -> None:
    """`verify --stack` reads these outputs; a GPU stack without them could not be health-checked."""
    stack, capture = rendered
    outputs = capture.outputs
    assert outputs["authKind"] == "google-id-token"
    assert outputs["platform"] == "cloud-run"
    assert outputs["accelerator"] == GPU_STACKS[stack]
    assert outputs["servedModelName"] == "gemma-4-12b-it"
    assert {"endpoint", "maxModelLen", "maxNumSeqs", "maxInstances"} <= set(outputs)


def test_l4_stack_encodes_the_best_l4_configuration() -> None:
    """The L4 settings the hand-made sweeps found best, including the CUDA compatibility switch."""
    capture = render_stack("l4")
    args = container(capture)["args"]
    for flag, value in [
        ("--quantization", "compressed-tensors"),
        ("--dtype", "bfloat16"),
        ("--kv-cache-dtype", "fp8"),
        ("--max-model-len", "32768"),
        ("--gpu-memory-utilization", "0.95"),
        ("--max-num-batched-tokens", "8192"),
        ("--tool-call-parser", "gemma4"),
        ("--reasoning-parser", "gemma4"),
    ]:
        assert args[args.index(flag) + 1] == value
    for switch in ("--enable-chunked-prefill", "--async-scheduling", "--enable-auto-tool-choice"):
        assert switch in args
    assert "--speculative-config" not in args
    envs = {env["name"]: env["value"] for env in container(capture)["envs"]}
    assert envs["VLLM_ENABLE_CUDA_COMPATIBILITY"] == "1"
    assert envs["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert envs["HF_HUB_OFFLINE"] == "1"


def test_rtx6000_speculative_config_survives_as_one_json_argument() -> None:
    """gcloud's comma splitting once mangled this JSON; as a list item it must arrive intact."""
    capture = render_stack("rtx6000")
    args = container(capture)["args"]
    config = json.loads(args[args.index("--speculative-config") + 1])
    assert config == {"method": "mtp", "model": "/mnt/models/gemma-4-12B-it-assistant", "num_speculative_tokens": 3}
    assert not any(flag in args for flag in ("--speculative-model", "--num-speculative-tokens", "--model"))


def test_image_is_pinned(rendered: tuple[str, Capture]) -> None:
    """The service runs a pinned image, so two `pulumi up` runs of one commit deploy the same vLLM build."""
    _, capture = rendered
    assert image_pin_problem(container(capture)["image"].split("/", 3)[-1]) is None


def test_real_run_requires_a_project() -> None:
    """`pulumi up` without gcp:project must stop with the command to fix it, not deploy somewhere."""
    with pytest.raises(pulumi.RunError, match="pulumi config set gcp:project"):
        render_stack("l4", {"gcp:project": ""})


def test_program_reports_invalid_settings_cleanly() -> None:
    """The program itself (not only the preview) refuses a bad stack with the key at fault."""
    with pytest.raises(pulumi.RunError, match=r"cloudRun\.concurrency: 4 is below vllm\.maxNumSeqs"):
        render_stack("l4", {"gemma-serving:cloudRun": json.dumps({"cpu": 8, "memoryGib": 32, "concurrency": 4})})
