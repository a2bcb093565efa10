"""Settings Google or vLLM would refuse at deploy or start time are refused at load, with the key and what
is allowed.

Guards against a preview that passes and a rollout that fails ten minutes later: an L4 instance with 100
CPU, 100000 instances, a batch of 2048 behind Cloud Run's 1000-request ceiling, a two-hour startup probe,
the TPU image on a GPU, an unknown quantization or load format, a quantization the checkpoint contradicts,
and a firewall opened to the whole internet in two halves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.tpu.node import TpuVllmNodeArgs
from components.vllm_gpu_service import VllmGpuServiceArgs
from preview.__main__ import main as preview_main
from stacks.loading import settings_from_config
from stacks.settings import TpuStack
from tests.components.test_tpu_node import node_args
from tests.components.test_vllm_gpu_service import args as service_args
from tests.deploy.test_credentials import stack_root
from tests.stacks.test_settings import config_with, problems_of

P = "gemma-serving:"


@pytest.mark.parametrize(
    ("stack", "changes", "message"),
    [
        pytest.param(
            "l4",
            {"cloudRun__cpu": 100},
            "cloudRun.cpu: 100 is above what a Cloud Run instance with an NVIDIA L4 may have; allowed: 4-8 (Cloud "
            "Run's 8 vCPU / 32 GiB instance maximum)",
            id="l4-cpu",
        ),
        pytest.param(
            "l4",
            {"cloudRun__memoryGib": 64},
            "cloudRun.memoryGib: 64 is above what a Cloud Run instance with an NVIDIA L4 may have; allowed: 16-32 "
            "(Cloud Run's 8 vCPU / 32 GiB instance maximum)",
            id="l4-memory",
        ),
        pytest.param(
            "rtx6000",
            {"cloudRun__cpu": 96},
            "cloudRun.cpu: 96 is above what a Cloud Run instance with an NVIDIA RTX PRO 6000 Blackwell may have; "
            "allowed: 20-48 (the one-GPU g4-standard-48 host (48 vCPU, 180 GB))",
            id="rtx6000-cpu",
        ),
        pytest.param(
            "l4",
            {"cloudRun__maxInstances": 100000},
            "cloudRun.maxInstances: 100000 is beyond Cloud Run's per-service maximum; allowed: 1-1000 (and only as "
            "many GPUs as the project's quota grants)",
            id="max-instances",
        ),
        pytest.param(
            "l4",
            {"vllm__maxNumSeqs": 2048},
            "vllm.maxNumSeqs: 2048 needs a Cloud Run concurrency of 2048 (concurrency follows maxNumSeqs and may "
            "not be below it), above Cloud Run's maximum of 1000 requests per instance; allowed on Cloud Run: 1-1000",
            id="derived-concurrency",
        ),
        pytest.param(
            "l4",
            {"cloudRun__modelLoadSeconds": 7200},
            "cloudRun.modelLoadSeconds: 7200 needs a startup probe of 717 x 10 s = 7170 s, above Cloud Run's 1800 s "
            "cap (failureThreshold x periodSeconds) for a GPU service; allowed: at most 1830 with this probe "
            "(initialDelaySeconds 30 + 1800); a model that loads slower needs faster storage, not a longer probe",
            id="startup-window",
        ),
        pytest.param(
            "rtx6000",
            {"cloudRun__startupProbe": {"periodSeconds": 60, "timeoutSeconds": 5, "failureThreshold": 40}},
            "cloudRun.startupProbe.failureThreshold: 40 x periodSeconds 60 = 2400 s, above Cloud Run's 1800 s cap for "
            "a GPU service's startup probe; allowed: at most 30",
            id="explicit-threshold",
        ),
        pytest.param(
            "l4",
            {"cloudRun__env": {"PORT": "9000"}},
            "cloudRun.env.PORT: Cloud Run sets this variable itself and refuses it in a revision; allowed: any name "
            "but K_CONFIGURATION, K_REVISION, K_SERVICE, PORT and X_GOOGLE_*",
            id="reserved-env",
        ),
        pytest.param(
            "l4",
            {"image": "vllm/vllm-tpu:v0.32.0"},
            "image: 'vllm/vllm-tpu:v0.32.0' is vLLM's TPU build; a nvidia-l4 stack needs the CUDA build "
            "(vllm/vllm-openai:<release>, the default when image is unset)",
            id="tpu-image-on-gpu",
        ),
        pytest.param(
            "tpu-v6e",
            {"image": "vllm/vllm-openai:v0.32.0"},
            "image: 'vllm/vllm-openai:v0.32.0' is vLLM's CUDA (NVIDIA) build; a tpu-v6e stack needs the TPU build "
            "(vllm/vllm-tpu:<release>, the default when image is unset)",
            id="cuda-image-on-tpu",
        ),
        pytest.param(
            "l4",
            {"vllm__quantization": "fp8"},
            "vllm.quantization: 'fp8' contradicts google/gemma-4-12B-it-qat-w4a16-ct, which is stored as "
            "compressed-tensors (vLLM refuses to start); allowed: compressed-tensors (or unset: vLLM reads it from the "
            "checkpoint)",
            id="quantization-contradicts-checkpoint",
        ),
        pytest.param(
            "tpu-v6e",
            {"vllm__quantization": "compressed-tensors"},
            "vllm.quantization: 'compressed-tensors' reads a checkpoint stored in that format, but "
            "google/gemma-4-12B-it is unquantized; allowed: unset, or an online method (experts_int8, fp8, "
            "fp8_per_block, fp8_per_channel, fp8_per_tensor, int8_per_channel_weight_only, mxfp8, nvfp4_per_token, "
            "online)",
            id="checkpoint-format-on-bf16",
        ),
    ],
)
def test_limits_refused_at_load(stack: str, changes: dict[str, object], message: str) -> None:
    """Each limit: the exact message, with the key, the value and what is allowed."""
    assert problems_of(config_with(stack, **changes)) == f"{P}{message}"


def test_vllm_registries_come_from_vllm_itself() -> None:
    """quantization and loadFormat are free strings to vLLM's parser; the engine refuses unknown ones at start."""
    quantization = problems_of(config_with("l4", vllm__quantization="int4"))
    assert quantization.startswith(f"{P}vllm.quantization: 'int4' is not a quantization method that vLLM 0.32.0 ")
    assert "allowed: awq, auto_awq, fp8, " in quantization
    assert "compressed-tensors" in quantization
    load_format = problems_of(config_with("l4", vllm__loadFormat="gguf"))
    assert load_format == (
        f"{P}vllm.loadFormat: 'gguf' is not a load format that vLLM 0.32.0 accepts; allowed: auto, dummy, "
        "fastsafetensors, hf, instanttensor, ipc_cache, mistral, modelexpress, npcache, pt, runai_streamer, "
        "runai_streamer_sharded, safetensors, sharded_state, tensorizer"
    )
    # Through extraArgs it is refused before its value is read: the typed setting is the one checked.
    extra = problems_of(config_with("l4", vllm__extraArgs=["--quantization", "int4"]))
    assert "vllm.extraArgs sets ['--quantization'], which the program renders from typed settings" in extra


def test_online_quantization_of_a_bf16_checkpoint_is_allowed() -> None:
    """fp8 quantizes bf16 weights while loading: a legitimate choice on the TPU stack's unquantized checkpoint."""
    settings = settings_from_config(config_with("tpu-v6e", vllm__quantization="fp8"))
    assert "--quantization" in settings.serve_args()


def test_the_component_refuses_the_same_limits() -> None:
    """VllmGpuServiceArgs used without a stack file keeps Cloud Run's upper limits too."""
    with pytest.raises(ValueError, match=r"VllmGpuServiceArgs\.cpu: 100 is above what a Cloud Run instance"):
        service_args(cpu=100)
    with pytest.raises(ValueError, match=r"VllmGpuServiceArgs\.max_num_seqs: 2048 needs a Cloud Run concurrency"):
        service_args(max_num_seqs=2048)
    assert isinstance(service_args(), VllmGpuServiceArgs)


TPU_OPEN = "tpu__publicEndpoint"


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        (
            ["0.0.0.0/1", "128.0.0.0/1"],
            "['0.0.0.0/1', '128.0.0.0/1'] together let in the whole public IPv4 internet (their union: 0.0.0.0/0).",
        ),
        (
            ["::/1", "8000::/1"],
            "['::/1', '8000::/1'] together let in the whole public IPv6 internet (their union: ::/0).",
        ),
        (
            ["128.0.0.0/1"],
            "['128.0.0.0/1'] together let in 43% of the public IPv4 internet (their union: 128.0.0.0/1).",
        ),
    ],
)
def test_tpu_source_ranges_are_judged_as_a_union(ranges: list[str], message: str) -> None:
    """Two halves of the internet are the internet; the message says /metrics and /tokenize need no key."""
    problems = problems_of(config_with("tpu-v6e", **{TPU_OPEN: True, "tpu__allowedSourceRanges": ranges}))
    assert problems.startswith(f"{P}tpu.allowedSourceRanges: {message}")
    assert (
        "vLLM's --api-key guards only /v1/*: /metrics, /tokenize and /health answer anyone who can reach the port. "
        "Allowed: at most a /8's worth of public IPv4 and a /32's worth of public IPv6 space in all (private ranges "
        "such as 10.0.0.0/8 do not count); name the networks that call it"
    ) in problems


def test_named_networks_and_private_space_pass() -> None:
    """A company's /16s plus all of RFC 1918 stay well inside the limit."""
    ranges = ["203.0.113.0/24", "198.51.100.0/24", "34.120.0.0/16", "10.0.0.0/8", "172.16.0.0/12"]
    settings = settings_from_config(config_with("tpu-v6e", **{TPU_OPEN: True, "tpu__allowedSourceRanges": ranges}))
    assert isinstance(settings, TpuStack)
    assert len(settings.tpu.allowed_source_ranges) == len(ranges)


def test_the_tpu_component_judges_the_union_and_the_secret_name() -> None:
    """TpuVllmNodeArgs without a stack file: the same union rule, and no token where a secret id belongs."""
    problems = node_args(public_endpoint=True, allowed_source_ranges=("0.0.0.0/1", "128.0.0.0/1")).problems()
    assert any("together let in the whole public IPv4 internet" in problem for problem in problems)
    problems = node_args(hf_token_secret="hf_" + "x" * 34).problems()
    assert "hf_token_secret holds a Hugging Face token; it names a Secret Manager secret (its id), never the token" in (
        problems
    )
    assert isinstance(node_args(), TpuVllmNodeArgs)


def test_max_instances_beyond_a_new_projects_quota_warns_in_both_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A warning, not an error (quota can be raised), in the text plan and in the JSON plan's warnings."""
    # 50 is far beyond what a project has unasked (0) or gets on a first request; 10 would not warn.
    root = stack_root(tmp_path, "l4", {"cloudRun.maxInstances": 50})
    warning = (
        "quota: cloudRun.maxInstances 50 needs 50 NVIDIA L4 GPUs of quota without zonal redundancy in this region, "
        "and a new project has 0: instances past the granted quota never start, so under load requests queue and "
        "fail with 429 instead of scaling out. Request 'Total NVIDIA L4 GPU allocation without zonal redundancy, "
        "per project per region' (IAM & Admin > Quotas) for the number you mean to reach, or lower maxInstances to it"
    )
    assert preview_main(["--stack", "l4", "--root", str(root)]) == 0
    assert f"  ! {warning}" in capsys.readouterr().out
    assert preview_main(["--stack", "l4", "--root", str(root), "--format", "json"]) == 0
    assert warning in json.loads(capsys.readouterr().out)["warnings"]


def test_shipped_stacks_give_no_quota_warning(capsys: pytest.CaptureFixture[str]) -> None:
    """maxInstances 1 is no stretch (the plan's notes already ask for the quota): no warning to learn to ignore."""
    assert preview_main(["--stack", "l4", "--format", "json"]) == 0
    assert not [w for w in json.loads(capsys.readouterr().out)["warnings"] if w.startswith("quota:")]
