"""`model.load: fuse | stream`: what each mode renders, and every way a stack is refused with the reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.vllm_gpu_service import VllmGpuService
from components.weight_access import StreamedWeights
from policy.gpu_service import check_model_mount_owner
from preview.capture import Capture
from preview.stack_file import available_stacks
from serving.cold_start import (
    FUSE_SEQUENTIAL,
    STREAM,
    STREAMER_MAX_MEMORY_GIB,
    VLLM_HOST_RESERVE_GIB,
    ColdStartEstimate,
    is_qat_checkpoint,
    size_streamer,
)
from serving.model_profiles import find_builtin_profile
from stacks.loading import settings_from_config
from stacks.settings import CloudRunStack
from tests.components.test_vllm_gpu_service import args as service_args
from tests.conftest import ROOT, render_stack
from tests.stacks.test_settings import config_with, problems_of

SERVICE = "gcp:cloudrunv2/service:Service"
STREAM_BLOCK = {"mode": "stream", "network": "default", "subnet": "default"}


def stream_config(stack: str = "l4", **changes: Any) -> dict[str, str]:
    return config_with(stack, **{"model__load": STREAM_BLOCK, "bucket__name": "my-project-gemma-models", **changes})


def _service(capture: Capture) -> dict[str, Any]:
    (service,) = capture.of_type(SERVICE)
    return dict(service.inputs)


def test_the_stream_example_reads_gs_with_the_streamer_over_direct_vpc() -> None:
    """Guards the done-when: gs:// model path, --load-format runai_streamer, Direct VPC egress, no FUSE volume."""
    template = _service(render_stack("l4-stream"))["template"]
    container = template["containers"][0]
    argv = container["args"]
    assert argv[0] == "gs://my-project-gemma-l4-stream-models/gemma-4-12B-it-qat-w4a16-ct"
    assert argv[argv.index("--load-format") + 1] == "runai_streamer"
    assert json.loads(argv[argv.index("--model-loader-extra-config") + 1]) == {
        "concurrency": 16,
        "memory_limit": 8 * 1024**3,
    }
    assert not [volume for volume in template.get("volumes") or [] if "gcs" in volume]  # no FUSE volume
    assert not container.get("volumeMounts")
    assert template["vpcAccess"] == {
        "egress": "ALL_TRAFFIC",
        "networkInterfaces": [{"network": "default", "subnetwork": "default"}],
    }


def test_the_policy_pack_accepts_the_stream_example() -> None:
    """No mount is allowed exactly when vLLM streams from gs:// (the pack's rule for model access)."""
    assert list(check_model_mount_owner(SERVICE, _service(render_stack("l4-stream")), {})) == []


def test_the_drafter_follows_the_mode() -> None:
    """A speculative drafter is streamed from the same bucket, not looked for on a mount that is not there."""
    settings = settings_from_config(stream_config("rtx6000"))
    assert isinstance(settings, CloudRunStack)
    argv = settings.serve_args()
    config = json.loads(argv[argv.index("--speculative-config") + 1])
    assert config["model"] == "gs://my-project-gemma-models/gemma-4-12B-it-assistant"


def test_stream_needs_a_bucket_name() -> None:
    """vLLM's arguments name gs://<bucket> before the bucket exists, so Pulumi cannot pick its name."""
    message = problems_of(config_with(model__load="stream"))
    assert "bucket.name: model.load: stream puts gs://<bucket>/<path> in vLLM's arguments" in message


def test_stream_refuses_a_buffer_that_does_not_fit_beside_vllm() -> None:
    """A staging buffer as big as the instance would starve vLLM of host memory mid-load."""
    message = problems_of(stream_config(model__load={**STREAM_BLOCK, "memoryLimitGib": 30}))
    assert "model.load.memoryLimitGib: 30 GiB does not fit beside vLLM" in message


def test_stream_refuses_more_threads_than_the_cpus_can_carry() -> None:
    message = problems_of(stream_config(model__load={**STREAM_BLOCK, "concurrency": 64}))
    assert "model.load.concurrency: 64 threads on 8 vCPU would starve vLLM's own start; allowed: 1-32" in message


def test_stream_refuses_another_load_format() -> None:
    message = problems_of(stream_config(vllm__loadFormat="safetensors"))
    assert "vllm.loadFormat: 'safetensors' contradicts model.load: stream" in message


def test_a_tpu_stack_streaming_a_qat_checkpoint_is_refused_with_the_reason() -> None:
    """Guards the done-when: QAT + runai_streamer on TPU fails in tpu-inference (issue 3225): refused up front."""
    values = config_with("tpu-v6e", model__load="stream", model__path="gemma-4-12B-it-qat-w4a16-ct", vllm__dtype="auto")
    message = problems_of(values)
    assert (
        "model.load: stream on TPU with the QAT checkpoint 'gemma-4-12B-it-qat-w4a16-ct' is known not to work"
        in message
    )
    assert "https://github.com/vllm-project/tpu-inference/issues/3225" in message


def test_a_tpu_stack_cannot_stream_at_all_yet() -> None:
    message = problems_of(config_with("tpu-v6e", model__load="stream"))
    assert "model.load: stream is not wired for TPU stacks here" in message


def test_fuse_parallel_downloads_need_a_cache_that_fits() -> None:
    """gcsfuse's file cache lives in the instance's memory: it needs a size, and the size must fit."""
    assert "model.load.fileCacheGib: parallelDownloads reads through gcsfuse's file cache" in problems_of(
        config_with(model__load={"mode": "fuse", "parallelDownloads": True})
    )
    assert "does not fit beside vLLM" in problems_of(
        config_with(model__load={"mode": "fuse", "parallelDownloads": True, "fileCacheGib": 30})
    )


def test_fuse_parallel_downloads_become_mount_options() -> None:
    values = config_with(model__load={"mode": "fuse", "parallelDownloads": True, "fileCacheGib": 16})
    template = _service(render_stack("l4", values))["template"]
    options = template["volumes"][0]["gcs"]["mountOptions"]
    assert "file-cache-max-size-mb=16384" in options
    assert "file-cache-enable-parallel-downloads=true" in options
    assert "uid=1001" in options


def test_the_probe_window_derives_from_the_checkpoint_and_the_mode() -> None:
    """Streaming reads faster, so its window is shorter; modelLoadSeconds still overrides the estimate."""
    fuse = settings_from_config(config_with())
    stream = settings_from_config(stream_config())
    assert isinstance(fuse, CloudRunStack)
    assert isinstance(stream, CloudRunStack)
    profile = find_builtin_profile("gemma-4-12B-it-qat-w4a16-ct")
    assert profile is not None
    assert fuse.startup_load_seconds == ColdStartEstimate(profile.weight_bytes, FUSE_SEQUENTIAL).window_s
    assert stream.startup_load_seconds < fuse.startup_load_seconds
    explicit = settings_from_config(config_with(cloudRun__modelLoadSeconds=900))
    assert isinstance(explicit, CloudRunStack)
    assert explicit.startup_load_seconds == 900


def test_the_estimate_adds_its_parts() -> None:
    estimate = ColdStartEstimate(weight_bytes=10_000_000_000, throughput=STREAM)
    assert estimate.weights_s == 20.0
    assert estimate.total_s == 60 + 20 + 120
    assert estimate.window_s == 300


def test_streamer_sizing_follows_the_instance() -> None:
    """Threads from vCPU (two each, 4 to 16); the buffer is what vLLM leaves, at most 8 GiB."""
    small = size_streamer(cpu=4, memory_gib=16)
    big = size_streamer(cpu=20, memory_gib=80)
    assert not isinstance(small, list)
    assert not isinstance(big, list)
    assert (small.concurrency, small.memory_limit_gib) == (8, 16 - VLLM_HOST_RESERVE_GIB)
    assert (big.concurrency, big.memory_limit_gib) == (16, STREAMER_MAX_MEMORY_GIB)
    assert isinstance(size_streamer(cpu=4, memory_gib=11), list)


def test_qat_checkpoints_are_recognised_by_name() -> None:
    assert is_qat_checkpoint("gemma-4-12B-it-qat-w4a16-ct")
    assert is_qat_checkpoint("models/gemma-4-E2B-it-qat-q4_0-unquantized")
    assert not is_qat_checkpoint("gemma-4-12B-it")
    assert not is_qat_checkpoint("aqaton-7b")


def test_the_component_refuses_a_mount_path_when_streaming() -> None:
    """A streamed service whose model is not a gs:// path would look for files on a volume it does not have."""
    with pytest.raises(ValueError, match="the model path must come first and be a gs:// path"):
        service_args(streamed=StreamedWeights(network="default", subnet="default"))


def test_the_component_streams_without_a_volume(register: Any) -> None:
    streamed = StreamedWeights(network="vpc-1", subnet="sub-1")
    argv = ["gs://weights/m", "--served-model-name", "m", "--port", "8000", "--max-num-seqs", "16"]
    capture = register(lambda: VllmGpuService("svc", service_args(streamed=streamed, serve_args=argv)))
    template = _service(capture)["template"]
    assert "volumes" not in template
    assert template["vpcAccess"]["networkInterfaces"] == [{"network": "vpc-1", "subnetwork": "sub-1"}]


def test_a_gke_fleet_is_refused_stream_with_the_reason() -> None:
    """A fleet mounts the bucket through the FUSE CSI driver; asking it to stream must not pass silently."""
    gke = next(name for name in available_stacks(ROOT) if "gke" in name)
    message = problems_of(config_with(gke, model__load="stream"))
    assert "model.load: a GKE fleet reads the bucket through the Cloud Storage FUSE CSI driver" in message
