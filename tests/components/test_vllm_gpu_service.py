"""VllmGpuService on its own: Args validation and invoker bindings, without a stack file."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from components.vllm_gpu_service import HttpProbe, ModelMount, VllmGpuService, VllmGpuServiceArgs
from preview.capture import Capture
from serving.shapes import resolved_shapes, the_cloud_run_shape

L4 = the_cloud_run_shape("nvidia-l4")


def args(**changes: object) -> VllmGpuServiceArgs:
    values: dict[str, object] = {
        "region": "us-east4",
        "gpu": L4,
        "image": "vllm/vllm-openai:v0.32.0",
        "serve_args": ["/mnt/models/m", "--served-model-name", "m", "--port", "8000", "--max-num-seqs", "16"],
        "max_num_seqs": 16,
        "cpu": 4,
        "memory_gib": 16,
        "invokers": ("group:ml-team@example.com", "user:ana@example.com"),
        "bucket_name": "weights",
        "service_account_email": "sa@p.iam.gserviceaccount.com",
    }
    values.update(changes)
    return VllmGpuServiceArgs(**values)  # type: ignore[arg-type]


def test_invokers_are_bound_one_by_one(register: Callable[[Callable[[], object]], Capture]) -> None:
    """Each listed invoker gets its own run.invoker binding, named after the component: nobody else may call."""
    capture = register(lambda: VllmGpuService("svc", args()))
    members = sorted(r.inputs["member"] for r in capture.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember"))
    assert members == ["group:ml-team@example.com", "user:ana@example.com"]
    for binding in capture.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember"):
        assert binding.inputs["role"] == "roles/run.invoker"
        assert binding.name.startswith("svc-invoker-")


def test_args_refuse_concurrency_below_batch() -> None:
    """Concurrency below vLLM's batch would make Cloud Run answer 429 to requests vLLM could serve."""
    with pytest.raises(ValueError, match=r"VllmGpuServiceArgs.concurrency: 8 is below vllm.maxNumSeqs \(16\)"):
        args(concurrency=8)


def test_args_refuse_undersized_instance() -> None:
    """CPU or memory below the GPU's minimum is refused at construction; Cloud Run would reject the revision."""
    with pytest.raises(ValueError, match=r"VllmGpuServiceArgs\.cpu: 2 is below the NVIDIA L4 minimum") as caught:
        args(cpu=2, memory_gib=8)
    assert "VllmGpuServiceArgs.memory_gib: 8 is below the NVIDIA L4 minimum of 16 GiB" in str(caught.value)


def test_args_refuse_removed_vllm_flags() -> None:
    """A flag vLLM removed would crash-loop the container; the component refuses it before anything deploys."""
    with pytest.raises(ValueError, match="--num-speculative-tokens was removed from vLLM"):
        args(serve_args=["/mnt/models/m", "--num-speculative-tokens", "3"])


def test_args_refuse_model_outside_the_mount() -> None:
    """Serve arguments without a model path under the mount would start vLLM without the bucket's weights."""
    with pytest.raises(ValueError, match="the model path must come first"):
        args(serve_args=["--served-model-name", "m"])


def test_args_refuse_a_shape_cloud_run_does_not_rent() -> None:
    """A TPU slice or GKE machine type handed to the Cloud Run component is refused by name at construction,
    not failed later as a missing node selector."""
    other = next(shape for shape in resolved_shapes() if shape.platform != "cloud-run")
    with pytest.raises(ValueError, match=rf"VllmGpuServiceArgs\.gpu: '{other.name}' is a {other.platform} shape"):
        args(gpu=other)


def test_args_refuse_region_without_gpu() -> None:
    """A region where Cloud Run has no such GPU is refused at construction, listing the regions that do."""
    with pytest.raises(ValueError, match="'us-west1' has no Cloud Run NVIDIA L4"):
        args(region="us-west1")


def test_args_refuse_a_startup_probe_cloud_run_caps() -> None:
    """A startup window beyond Cloud Run's 1800 s GPU cap (or a timeout above its period) fails at deploy time."""
    with pytest.raises(ValueError, match=r"VllmGpuServiceArgs\.startup_probe\.failure_threshold: 200 x periodSeconds"):
        args(startup_probe=HttpProbe(failure_threshold=200, period_seconds=10))
    with pytest.raises(
        ValueError, match=r"VllmGpuServiceArgs\.liveness_probe\.timeout_seconds: 20 is not smaller than period"
    ):
        args(liveness_probe=HttpProbe(failure_threshold=3, period_seconds=10, timeout_seconds=20))


def test_args_refuse_public_invokers() -> None:
    """allUsers as an invoker would open a GPU service (and its bill) to the internet."""
    with pytest.raises(ValueError, match=r"VllmGpuServiceArgs\.invokers: 'allUsers' would make the service public"):
        args(invokers=("allUsers",))


def test_the_probes_and_mount_reach_the_template(register: Callable[[Callable[[], object]], Capture]) -> None:
    """The component's own probe and mount values are what Cloud Run gets, not a default in their place."""
    probe = HttpProbe(failure_threshold=90, initial_delay_seconds=60, period_seconds=20, timeout_seconds=4)
    mount = ModelMount(mount_path="/models", options=("uid=2000", "gid=0", "implicit-dirs"))
    serve_args = ["/models/m", "--served-model-name", "m", "--port", "8000", "--max-num-seqs", "16"]
    capture = register(lambda: VllmGpuService("svc", args(startup_probe=probe, mount=mount, serve_args=serve_args)))
    template = capture.one("gcp:cloudrunv2/service:Service").inputs["template"]
    container = template["containers"][0]
    assert container["startupProbe"]["failureThreshold"] == 90
    assert container["startupProbe"]["initialDelaySeconds"] == 60
    assert container["volumeMounts"] == [{"name": "models", "mountPath": "/models"}]
    assert template["volumes"][0]["gcs"]["mountOptions"] == ["uid=2000", "gid=0", "implicit-dirs"]


def test_bucket_env_names_an_object_of_the_model_bucket(register: Callable[[Callable[[], object]], Capture]) -> None:
    """The route middleware reads the route table through Cloud Storage's API: it needs the bucket's name,
    which only the bucket knows, joined to the object's path."""
    capture = register(lambda: VllmGpuService("svc", args(bucket_env={"GEMMA_ADAPTER_ROUTES": "adapter-routes.json"})))
    container = capture.one("gcp:cloudrunv2/service:Service").inputs["template"]["containers"][0]
    env = {item["name"]: item["value"] for item in container["envs"]}
    assert env["GEMMA_ADAPTER_ROUTES"] == "gs://weights/adapter-routes.json"
