"""Each guardrail against crafted resource properties: what passes, and every way we know it can fail.

The properties are in the engine's wire form (camelCase, floats, secrets wrapped). Every bad case is
also run in the form the Pulumi engine hands a policy pack (mappings wrapped in proxies that raise on
unknowns, secrets unwrapped), so a rule cannot pass here and miss the real thing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pulumi.output import Unknown
from pulumi_policy import ResourceValidationPolicy
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy
from pydantic import TypeAdapter, ValidationError

from policy import images as policy_images
from policy.access import BUCKET_NOT_PUBLIC, BUCKET_PRIVATE, CLOUD_RUN_NOT_PUBLIC
from policy.gpu_service import (
    CLOUD_RUN_GPU_ACCELERATORS,
    GPU_CONCURRENCY_COVERS_BATCH,
    GPU_CPU_ALWAYS_ALLOCATED,
    GPU_MATCHES_ACCELERATOR,
    GPU_MODEL_MOUNT_OWNER,
)
from policy.guardrail import Guardrail
from policy.images import IMAGES_PINNED
from policy.network import VLLM_PORT_NOT_PUBLIC
from policy.plaintext_secrets import NO_PLAINTEXT_SECRETS
from policy.rules import GUARDRAILS, policies
from policy.storage_writes import CACHE_FOLDER as POLICY_CACHE_FOLDER
from policy.storage_writes import SERVING_MEMBER, SERVING_WRITES_ONLY_THE_CACHE
from policy.tpu import TPU_QUEUED_RESOURCE_BOUNDED
from serving.compile_cache import CACHE_FOLDER
from serving.naming import StackNames
from serving.shapes import resolved_shapes
from stacks.images import PinnedImage
from tests.policy.gateway_cases import GATEWAY_BAD, GATEWAY_GOOD
from tests.policy.gke_cluster_cases import GKE_CLUSTER_BAD, GKE_CLUSTER_GOOD
from tests.policy.kubernetes_cases import K8S_BAD, K8S_GOOD
from tests.policy.props import (
    JOB,
    PLAIN_DYNAMIC,
    SERVICE,
    TPU_DYNAMIC,
    container,
    flex_start,
    gpu_service,
    private_bucket,
    reported,
    secret,
    tpu_request,
    validation_args,
)
from tests.policy.route_guard_cases import GUARD_BAD, GUARD_GOOD

RUN_MEMBER = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
RUN_BINDING = "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"
RUN_POLICY = "gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy"
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
BUCKET_BINDING = "gcp:storage/bucketIAMBinding:BucketIAMBinding"
BUCKET_POLICY = "gcp:storage/bucketIAMPolicy:BucketIAMPolicy"
BUCKET_ACL = "gcp:storage/bucketACL:BucketACL"
FIREWALL = "gcp:compute/firewall:Firewall"
GCP_QUEUED = "gcp:tpu/v2QueuedResource:V2QueuedResource"
SA = "serviceAccount:caller@p.iam.gserviceaccount.com"


@dataclass(frozen=True)
class Case:
    id: str
    guardrail: Guardrail
    resource_type: str
    build: Callable[[], dict[str, Any]]
    # For a bad case: a phrase the message must contain (so the user learns what to fix).
    expect: str | None = None
    config: dict[str, Any] | None = None


def edited(base: Callable[[], dict[str, Any]], edit: Callable[[dict[str, Any]], None]) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        props = base()
        edit(props)
        return props

    return build


def set_container(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda props: container(props).__setitem__(key, value)


def set_template(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda props: props["template"].__setitem__(key, value)


def set_resources(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda props: container(props)["resources"].__setitem__(key, value)


def drop_template(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda props: props["template"].pop(key)


def set_mount_options(options: list[str]) -> Callable[[dict[str, Any]], None]:
    return lambda props: props["template"]["volumes"][0]["gcs"].__setitem__("mountOptions", options)


def no_gpu(props: dict[str, Any]) -> None:
    props["template"].pop("nodeSelector")
    limits = container(props)["resources"]["limits"]
    limits.pop("nvidia.com/gpu")
    container(props)["resources"].pop("cpuIdle")
    props["template"].pop("volumes")


def stream_weights_from_gcs(props: dict[str, Any]) -> None:
    props["template"].pop("volumes")
    container(props).update(args=["gs://b/gemma", "--load-format", "runai_streamer", "--max-num-seqs", "64"])


def firewall(ranges: list[str], allows: list[dict[str, Any]], **extra: Any) -> Callable[[], dict[str, Any]]:
    return lambda: {"network": "default", "direction": "INGRESS", "sourceRanges": ranges, "allows": allows, **extra}


def constant(props: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: json.loads(json.dumps(props))


def job(image: str) -> Callable[[], dict[str, Any]]:
    return constant({"location": "us-east4", "template": {"template": {"containers": [{"image": image}]}}})


def tpu_script(script: str) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        props = tpu_request(spot={})
        props["requestBody"]["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"] = script
        return props

    return build


def tpu_metadata(key: str, value: str) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        props = tpu_request(spot={})
        props["requestBody"]["tpu"]["nodeSpec"][0]["node"]["metadata"][key] = value
        return props

    return build


VLLM_SA = "serviceAccount:gemma-l4-vllm@p.iam.gserviceaccount.com"
FOLDER_MEMBER = "gcp:storage/managedFolderIamMember:ManagedFolderIamMember"


def cache_volume(only_dir: str | None, read_only: bool = False) -> Callable[[dict[str, Any]], None]:
    """A second Cloud Storage volume on the model bucket, as compileCache.keep mounts it (or not)."""
    options = ["uid=1001", "gid=1001", *([f"only-dir={only_dir}"] if only_dir else [])]
    volume = {
        "name": "compile-cache",
        "gcs": {"bucket": "models-bucket", "readOnly": read_only, "mountOptions": options},
    }
    return lambda props: props["template"]["volumes"].append(volume)


HF_TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"

GOOD: list[Case] = [
    Case(
        "serving-reads-the-bucket",
        SERVING_WRITES_ONLY_THE_CACHE,
        BUCKET_MEMBER,
        constant({"bucket": "b", "role": "roles/storage.objectViewer", "member": VLLM_SA}),
    ),
    Case(
        "serving-writes-the-cache-folder",
        SERVING_WRITES_ONLY_THE_CACHE,
        FOLDER_MEMBER,
        constant(
            {"bucket": "b", "managedFolder": "compile-cache/", "role": "roles/storage.objectUser", "member": VLLM_SA}
        ),
    ),
    Case(
        "import-job-writes-its-folder",
        SERVING_WRITES_ONLY_THE_CACHE,
        FOLDER_MEMBER,
        constant({"bucket": "b", "managedFolder": "gemma/", "role": "roles/storage.objectUser", "member": SA}),
    ),
    Case("model-volume-read-only", SERVING_WRITES_ONLY_THE_CACHE, SERVICE, gpu_service),
    Case(
        "cache-volume-in-the-cache-folder",
        SERVING_WRITES_ONLY_THE_CACHE,
        SERVICE,
        edited(gpu_service, cache_volume("compile-cache/torch")),
    ),
    Case(
        "invoker-named-account", CLOUD_RUN_NOT_PUBLIC, RUN_MEMBER, constant({"role": "roles/run.invoker", "member": SA})
    ),
    Case("service-iam-enabled", CLOUD_RUN_NOT_PUBLIC, SERVICE, gpu_service),
    Case(
        "reader-serving-account",
        BUCKET_NOT_PUBLIC,
        BUCKET_MEMBER,
        constant({"bucket": "b", "role": "roles/storage.objectViewer", "member": SA}),
    ),
    Case(
        "acl-project-owners",
        BUCKET_NOT_PUBLIC,
        BUCKET_ACL,
        constant({"bucket": "b", "roleEntities": ["OWNER:project-owners-1"]}),
    ),
    Case("bucket-private", BUCKET_PRIVATE, BUCKET, private_bucket),
    Case("gpu-cpu-always-on", GPU_CPU_ALWAYS_ALLOCATED, SERVICE, gpu_service),
    Case("cpu-service-may-idle", GPU_CPU_ALWAYS_ALLOCATED, SERVICE, edited(gpu_service, no_gpu)),
    Case("gpu-l4", GPU_MATCHES_ACCELERATOR, SERVICE, gpu_service),
    Case(
        "gpu-rtx",
        GPU_MATCHES_ACCELERATOR,
        SERVICE,
        edited(gpu_service, set_template("nodeSelector", {"accelerator": "nvidia-rtx-pro-6000"})),
    ),
    Case(
        "gpu-count-as-float",
        GPU_MATCHES_ACCELERATOR,
        SERVICE,
        edited(gpu_service, set_resources("limits", {"nvidia.com/gpu": 1.0})),
    ),
    Case("concurrency-equal", GPU_CONCURRENCY_COVERS_BATCH, SERVICE, gpu_service),
    Case(
        "concurrency-above",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(gpu_service, set_template("maxInstanceRequestConcurrency", 256.0)),
    ),
    Case(
        "gpu-not-vllm",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(
            gpu_service,
            lambda p: container(p).update(image="us-docker.pkg.dev/p/r/trainer:1.2", args=["--epochs", "3"]),
        ),
    ),
    Case("mount-uid-gid", GPU_MODEL_MOUNT_OWNER, SERVICE, gpu_service),
    Case(
        "mount-extra-options",
        GPU_MODEL_MOUNT_OWNER,
        SERVICE,
        edited(gpu_service, set_mount_options(["implicit-dirs", "gid=0", "uid=2000", "only-dir=gemma"])),
    ),
    Case(
        "stream-from-gcs",
        GPU_MODEL_MOUNT_OWNER,
        SERVICE,
        edited(gpu_service, stream_weights_from_gcs),
    ),
    Case("release-tag", IMAGES_PINNED, SERVICE, gpu_service),
    Case(
        "digest",
        IMAGES_PINNED,
        SERVICE,
        edited(gpu_service, set_container("image", "vllm/vllm-openai@sha256:" + "a" * 64)),
    ),
    Case(
        "registry-port-and-tag",
        IMAGES_PINNED,
        SERVICE,
        edited(gpu_service, set_container("image", "registry.local:5000/vllm/vllm-openai:v0.32.0")),
    ),
    Case("job-tag", IMAGES_PINNED, JOB, job("us-docker.pkg.dev/p/r/importer:2026.11.1")),
    Case("tpu-script-tag", IMAGES_PINNED, TPU_DYNAMIC, lambda: tpu_request(spot={})),
    Case(
        "named-source",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["10.128.0.0/9", "35.235.240.0/20"], [{"protocol": "tcp", "ports": ["8000"]}]),
    ),
    Case(
        "private-space-and-a-slash-8",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        # Private space does not count: all of RFC 1918 plus one public /8 is within the limit.
        firewall(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "34.0.0.0/8"], [{"protocol": "tcp"}]),
    ),
    Case(
        "ssh-world",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["0.0.0.0/0"], [{"protocol": "tcp", "ports": ["22", "443"]}]),
    ),
    Case("udp-8000", VLLM_PORT_NOT_PUBLIC, FIREWALL, firewall(["0.0.0.0/0"], [{"protocol": "udp", "ports": ["8000"]}])),
    Case("egress", VLLM_PORT_NOT_PUBLIC, FIREWALL, firewall(["0.0.0.0/0"], [{"protocol": "tcp"}], direction="EGRESS")),
    Case("disabled", VLLM_PORT_NOT_PUBLIC, FIREWALL, firewall(["0.0.0.0/0"], [{"protocol": "tcp"}], disabled=True)),
    Case("flex-start", TPU_QUEUED_RESOURCE_BOUNDED, TPU_DYNAMIC, lambda: tpu_request(**flex_start())),
    Case("spot", TPU_QUEUED_RESOURCE_BOUNDED, TPU_DYNAMIC, lambda: tpu_request(spot={})),
    Case(
        "node-spot",
        TPU_QUEUED_RESOURCE_BOUNDED,
        TPU_DYNAMIC,
        edited(
            tpu_request,
            lambda p: p["requestBody"]["tpu"]["nodeSpec"][0]["node"].__setitem__("schedulingConfig", {"spot": True}),
        ),
    ),
    Case(
        "other-dynamic-resource",
        TPU_QUEUED_RESOURCE_BOUNDED,
        PLAIN_DYNAMIC,
        constant({"__provider": "x", "url": "https://example.invalid"}),
    ),
    Case(
        "plain-env",
        NO_PLAINTEXT_SECRETS,
        SERVICE,
        edited(
            gpu_service,
            set_container(
                "envs", [{"name": "TOKENIZERS_PARALLELISM", "value": "false"}, {"name": "HF_HUB_OFFLINE", "value": "1"}]
            ),
        ),
    ),
    Case(
        "secret-ref",
        NO_PLAINTEXT_SECRETS,
        SERVICE,
        edited(
            gpu_service,
            set_container(
                "envs",
                [
                    {
                        "name": "VLLM_API_KEY",
                        "valueSource": {"secretKeyRef": {"secret": "vllm-key", "version": "latest"}},
                    }
                ],
            ),
        ),
    ),
    Case(
        "api-key-from-env", NO_PLAINTEXT_SECRETS, TPU_DYNAMIC, tpu_script('vllm serve /mnt/m --api-key "$VLLM_API_KEY"')
    ),
    Case("tpu-clean", NO_PLAINTEXT_SECRETS, TPU_DYNAMIC, lambda: tpu_request(**flex_start())),
]

BAD: list[Case] = [
    Case(
        "serving-writes-the-weights-bucket",
        SERVING_WRITES_ONLY_THE_CACHE,
        BUCKET_MEMBER,
        constant({"bucket": "b", "role": "roles/storage.objectUser", "member": VLLM_SA}),
        "could replace the weights",
    ),
    Case(
        "serving-admin-in-a-binding",
        SERVING_WRITES_ONLY_THE_CACHE,
        BUCKET_BINDING,
        constant({"bucket": "b", "role": "roles/storage.objectAdmin", "members": [SA, VLLM_SA]}),
        "writes only the compile-cache/ managed folder",
    ),
    Case(
        "serving-writes-a-weights-folder",
        SERVING_WRITES_ONLY_THE_CACHE,
        FOLDER_MEMBER,
        constant({"bucket": "b", "managedFolder": "gemma/", "role": "roles/storage.objectUser", "member": VLLM_SA}),
        "managed folder 'gemma/'",
    ),
    Case(
        "model-volume-writable",
        SERVING_WRITES_ONLY_THE_CACHE,
        SERVICE,
        edited(gpu_service, lambda props: props["template"]["volumes"][0]["gcs"].__setitem__("readOnly", False)),
        "mount the model bucket readOnly: true",
    ),
    Case(
        "cache-volume-on-the-weights",
        SERVING_WRITES_ONLY_THE_CACHE,
        SERVICE,
        edited(gpu_service, cache_volume("gemma")),
        "outside the compile-cache/ folder",
    ),
    Case(
        "cache-volume-not-narrowed",
        SERVING_WRITES_ONLY_THE_CACHE,
        SERVICE,
        edited(gpu_service, cache_volume(None)),
        "outside the compile-cache/ folder",
    ),
    Case(
        "invoker-allusers",
        CLOUD_RUN_NOT_PUBLIC,
        RUN_MEMBER,
        constant({"role": "roles/run.invoker", "member": "allUsers"}),
        "allUsers",
    ),
    Case(
        "invoker-secret-allusers",
        CLOUD_RUN_NOT_PUBLIC,
        RUN_MEMBER,
        lambda: {"role": "roles/run.invoker", "member": secret("allUsers")},
        "allUsers",
    ),
    Case(
        "invoker-binding-authenticated",
        CLOUD_RUN_NOT_PUBLIC,
        RUN_BINDING,
        constant({"role": "roles/run.invoker", "members": [SA, "allAuthenticatedUsers"]}),
        "allAuthenticatedUsers",
    ),
    Case(
        "invoker-policy",
        CLOUD_RUN_NOT_PUBLIC,
        RUN_POLICY,
        constant({"policyData": json.dumps({"bindings": [{"role": "roles/run.invoker", "members": ["allUsers"]}]})}),
        "allUsers",
    ),
    Case(
        "invoker-iam-disabled",
        CLOUD_RUN_NOT_PUBLIC,
        SERVICE,
        edited(gpu_service, lambda p: p.__setitem__("invokerIamDisabled", True)),
        "invokerIamDisabled",
    ),
    Case(
        "bucket-allusers",
        BUCKET_NOT_PUBLIC,
        BUCKET_MEMBER,
        constant({"bucket": "b", "role": "roles/storage.objectViewer", "member": "allUsers"}),
        "allUsers",
    ),
    Case(
        "bucket-binding",
        BUCKET_NOT_PUBLIC,
        BUCKET_BINDING,
        constant({"bucket": "b", "role": "roles/storage.objectViewer", "members": ["allAuthenticatedUsers"]}),
        "allAuthenticatedUsers",
    ),
    Case(
        "bucket-policy",
        BUCKET_NOT_PUBLIC,
        BUCKET_POLICY,
        constant(
            {
                "bucket": "b",
                "policyData": json.dumps(
                    {"bindings": [{"role": "roles/storage.objectViewer", "members": ["allUsers"]}]}
                ),
            }
        ),
        "allUsers",
    ),
    Case(
        "bucket-acl",
        BUCKET_NOT_PUBLIC,
        BUCKET_ACL,
        constant({"bucket": "b", "roleEntities": ["READER:allUsers"]}),
        "allUsers",
    ),
    Case(
        "bucket-predefined-acl",
        BUCKET_NOT_PUBLIC,
        BUCKET_ACL,
        constant({"bucket": "b", "predefinedAcl": "publicRead"}),
        "publicRead",
    ),
    Case(
        "no-uniform-access",
        BUCKET_PRIVATE,
        BUCKET,
        edited(private_bucket, lambda p: p.pop("uniformBucketLevelAccess")),
        "uniformBucketLevelAccess",
    ),
    Case(
        "prevention-inherited",
        BUCKET_PRIVATE,
        BUCKET,
        edited(private_bucket, lambda p: p.__setitem__("publicAccessPrevention", "inherited")),
        "'enforced'",
    ),
    Case(
        "cpu-idle-true",
        GPU_CPU_ALWAYS_ALLOCATED,
        SERVICE,
        edited(gpu_service, set_resources("cpuIdle", True)),
        "cpuIdle",
    ),
    Case(
        "cpu-idle-unset",
        GPU_CPU_ALWAYS_ALLOCATED,
        SERVICE,
        edited(gpu_service, lambda p: container(p)["resources"].pop("cpuIdle")),
        "cpuIdle",
    ),
    Case(
        "no-node-selector",
        GPU_MATCHES_ACCELERATOR,
        SERVICE,
        edited(gpu_service, drop_template("nodeSelector")),
        "nodeSelector.accelerator",
    ),
    Case(
        "not-a-cloud-run-gpu",
        GPU_MATCHES_ACCELERATOR,
        SERVICE,
        edited(gpu_service, set_template("nodeSelector", {"accelerator": "nvidia-tesla-a100"})),
        "not a Cloud Run GPU",
    ),
    Case(
        "selector-without-limit",
        GPU_MATCHES_ACCELERATOR,
        SERVICE,
        edited(gpu_service, lambda p: container(p)["resources"]["limits"].pop("nvidia.com/gpu")),
        "no container sets",
    ),
    Case(
        "two-gpus",
        GPU_MATCHES_ACCELERATOR,
        SERVICE,
        edited(gpu_service, lambda p: container(p)["resources"]["limits"].__setitem__("nvidia.com/gpu", "2")),
        "exactly 1 GPU",
    ),
    Case(
        "concurrency-below-batch",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(gpu_service, set_template("maxInstanceRequestConcurrency", 4.0)),
        "below vLLM's --max-num-seqs",
    ),
    Case(
        "concurrency-unset",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(gpu_service, drop_template("maxInstanceRequestConcurrency")),
        "not set",
    ),
    Case(
        "batch-inline-flag",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(gpu_service, set_container("args", ["/mnt/models/m", "--max-num-seqs=128"])),
        "128",
    ),
    Case(
        "batch-underscore-flag",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(gpu_service, set_container("args", ["/mnt/models/m", "--max_num_seqs", "96"])),
        "96",
    ),
    Case(
        "batch-in-shell-line",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(
            gpu_service,
            lambda p: container(p).update(
                commands=["sh", "-c"], args=["exec vllm serve /mnt/models/m --max-num-seqs 256"]
            ),
        ),
        "256",
    ),
    Case(
        "batch-unstated",
        GPU_CONCURRENCY_COVERS_BATCH,
        SERVICE,
        edited(gpu_service, set_container("args", ["/mnt/models/m", "--served-model-name", "g"])),
        "without --max-num-seqs",
    ),
    Case(
        "no-uid", GPU_MODEL_MOUNT_OWNER, SERVICE, edited(gpu_service, set_mount_options(["gid=1001"])), "uid=<number>"
    ),
    Case(
        "no-gid",
        GPU_MODEL_MOUNT_OWNER,
        SERVICE,
        edited(gpu_service, set_mount_options(["uid=1001", "implicit-dirs"])),
        "gid=<number>",
    ),
    Case(
        "gcloud-style-options",
        GPU_MODEL_MOUNT_OWNER,
        SERVICE,
        edited(gpu_service, set_mount_options(["uid=1001;gid=1001"])),
        "one list item per option",
    ),
    Case(
        "no-model-volume",
        GPU_MODEL_MOUNT_OWNER,
        SERVICE,
        edited(gpu_service, drop_template("volumes")),
        "mounts no GCS volume",
    ),
    Case(
        "latest",
        IMAGES_PINNED,
        SERVICE,
        edited(gpu_service, set_container("image", "vllm/vllm-openai:latest")),
        ":latest",
    ),
    Case(
        "nightly",
        IMAGES_PINNED,
        SERVICE,
        edited(gpu_service, set_container("image", "vllm/vllm-openai:nightly")),
        ":nightly",
    ),
    Case("untagged", IMAGES_PINNED, SERVICE, edited(gpu_service, set_container("image", "vllm/vllm-openai")), "no tag"),
    Case(
        "registry-port-untagged",
        IMAGES_PINNED,
        SERVICE,
        edited(gpu_service, set_container("image", "registry.local:5000/vllm/vllm-openai")),
        "no tag",
    ),
    Case(
        "short-digest",
        IMAGES_PINNED,
        SERVICE,
        edited(gpu_service, set_container("image", "vllm/vllm-openai@sha256:abc")),
        "malformed digest",
    ),
    Case("job-latest", IMAGES_PINNED, JOB, job("us-docker.pkg.dev/p/r/importer:latest"), ":latest"),
    Case(
        "tpu-script-nightly",
        IMAGES_PINNED,
        TPU_DYNAMIC,
        tpu_script('IMAGE=vllm/vllm-tpu:nightly\ndocker run "$IMAGE"'),
        ":nightly",
    ),
    Case(
        "tpu-script-untagged",
        IMAGES_PINNED,
        TPU_DYNAMIC,
        tpu_script("docker run --privileged us-docker.pkg.dev/p/mirror/vllm/vllm-tpu serve /m"),
        "no tag",
    ),
    Case(
        "world-8000",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["0.0.0.0/0"], [{"protocol": "tcp", "ports": ["8000"]}]),
        "0.0.0.0/0",
    ),
    Case(
        "world-range",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["10.0.0.0/8", "0.0.0.0/0"], [{"protocol": "tcp", "ports": ["22", "7000-9000"]}]),
        "8000",
    ),
    Case(
        "two-halves-of-the-internet",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["0.0.0.0/1", "128.0.0.0/1"], [{"protocol": "tcp", "ports": ["8000"]}]),
        "opens port 8000 (vLLM) to the whole public IPv4 internet (their union: 0.0.0.0/0); vLLM's --api-key "
        "guards only /v1/*, so /metrics and /tokenize answer anyone there without the key",
    ),
    Case(
        "ipv6-halves",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["::/1", "8000::/1"], [{"protocol": "tcp", "ports": ["8000"]}]),
        "the whole public IPv6 internet (their union: ::/0)",
    ),
    Case(
        "sixteen-slash-fours",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall([f"{16 * i}.0.0.0/4" for i in range(16)], [{"protocol": "tcp", "ports": ["8000"]}]),
        "the whole public IPv4 internet",
    ),
    Case(
        "half-the-internet",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["128.0.0.0/1"], [{"protocol": "tcp", "ports": ["8000"]}]),
        "43% of the public IPv4 internet (their union: 128.0.0.0/1)",
    ),
    Case("world-all-tcp", VLLM_PORT_NOT_PUBLIC, FIREWALL, firewall(["0.0.0.0/0"], [{"protocol": "tcp"}]), "8000"),
    Case("world-all-protocols", VLLM_PORT_NOT_PUBLIC, FIREWALL, firewall(["0.0.0.0/0"], [{"protocol": "all"}]), "8000"),
    Case(
        "ipv6-world",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["::/0"], [{"protocol": "tcp", "ports": ["8000"]}]),
        "::/0",
    ),
    Case(
        "configured-port",
        VLLM_PORT_NOT_PUBLIC,
        FIREWALL,
        firewall(["0.0.0.0/0"], [{"protocol": "tcp", "ports": ["8080"]}]),
        "8080",
        {"vllmPorts": [8080.0]},
    ),
    Case(
        "guaranteed",
        TPU_QUEUED_RESOURCE_BOUNDED,
        TPU_DYNAMIC,
        lambda: tpu_request(guaranteed={}),
        "neither spot nor bounded",
    ),
    Case(
        "flex-start-unbounded",
        TPU_QUEUED_RESOURCE_BOUNDED,
        TPU_DYNAMIC,
        lambda: tpu_request(provisioningModel="FLEX_START"),
        "no runDuration.maxRunDuration",
    ),
    Case(
        "zero-duration",
        TPU_QUEUED_RESOURCE_BOUNDED,
        TPU_DYNAMIC,
        lambda: tpu_request(**flex_start("0s")),
        "not a positive duration",
    ),
    Case(
        "duration-without-flex",
        TPU_QUEUED_RESOURCE_BOUNDED,
        TPU_DYNAMIC,
        lambda: tpu_request(runDuration={"maxRunDuration": "3600s"}),
        "FLEX_START",
    ),
    Case(
        "pulumi-gcp-queued",
        TPU_QUEUED_RESOURCE_BOUNDED,
        GCP_QUEUED,
        constant(
            {
                "zone": "us-east5-b",
                "tpu": {
                    "nodeSpecs": [
                        {
                            "parent": "projects/p/locations/us-east5-b",
                            "nodeId": "n",
                            "node": {"runtimeVersion": "v2-alpha-tpuv6e", "acceleratorType": "v6e-1"},
                        }
                    ]
                },
            }
        ),
        "cannot express",
    ),
    Case(
        "hf-token-env",
        NO_PLAINTEXT_SECRETS,
        SERVICE,
        edited(gpu_service, set_container("envs", [{"name": "HF_TOKEN", "value": "x"}])),
        "HF_TOKEN",
    ),
    Case(
        "secret-marked-env",
        NO_PLAINTEXT_SECRETS,
        SERVICE,
        edited(gpu_service, set_container("envs", [{"name": "VLLM_API_KEY", "value": secret("k")}])),
        "VLLM_API_KEY",
    ),
    Case(
        "api-key-arg",
        NO_PLAINTEXT_SECRETS,
        SERVICE,
        edited(gpu_service, set_container("args", ["/mnt/models/m", "--api-key", "sk-123"])),
        "--api-key",
    ),
    Case(
        "hf-token-in-script",
        NO_PLAINTEXT_SECRETS,
        TPU_DYNAMIC,
        tpu_script(f"export HF_TOKEN={HF_TOKEN}\nvllm serve /m"),
        "Hugging Face token",
    ),
    Case(
        "api-key-in-script",
        NO_PLAINTEXT_SECRETS,
        TPU_DYNAMIC,
        tpu_script("vllm serve /mnt/m --api-key sk-live-123"),
        "literal key",
    ),
    Case(
        "google-api-key-anywhere",
        NO_PLAINTEXT_SECRETS,
        SERVICE,
        edited(gpu_service, set_container("args", ["/mnt/models/m", "--served-model-name", "AIza" + "x" * 35])),
        "contains a Google API key; keep it in Secret Manager",
    ),
    Case("token-metadata", NO_PLAINTEXT_SECRETS, TPU_DYNAMIC, tpu_metadata("hf-token", "abc"), "hf-token"),
]


GOOD += [Case(*case) for case in K8S_GOOD + GATEWAY_GOOD + GUARD_GOOD]
BAD += [Case(*case) for case in K8S_BAD + GATEWAY_BAD + GUARD_BAD]
GOOD += [Case(*case) for case in GKE_CLUSTER_GOOD]
BAD += [Case(*case) for case in GKE_CLUSTER_BAD]


def engine_form(props: dict[str, Any]) -> Any:
    """What pulumi-policy's analyzer hands a policy: secrets unwrapped, then the unknown-checking proxy."""
    return unknown_checking_proxy(deserialize_properties(json.loads(json.dumps(props))))


def _id(case: Case) -> str:
    return f"{case.guardrail.name}:{case.id}"


@pytest.mark.parametrize("case", GOOD, ids=_id)
def test_good_properties_pass(case: Case) -> None:
    """A stack that keeps the promise must not be blocked (a false alarm trains people to override)."""
    assert reported(case.guardrail, case.resource_type, case.build(), case.config) == []
    assert reported(case.guardrail, case.resource_type, engine_form(case.build()), case.config) == []


@pytest.mark.parametrize("case", BAD, ids=_id)
def test_bad_properties_are_reported(case: Case) -> None:
    """Each known way to break the promise is refused, with a message that says what to change."""
    assert case.expect is not None
    for props in (case.build(), engine_form(case.build())):
        messages = reported(case.guardrail, case.resource_type, props, case.config)
        assert messages, f"{case.id} passed {case.guardrail.name}"
        assert any(case.expect in message for message in messages), messages


def test_every_guardrail_fails_on_a_crafted_input_and_passes_another() -> None:
    """No guardrail is a stub that can never fire (or never pass)."""
    assert {case.guardrail.name for case in BAD} == {g.name for g in GUARDRAILS}
    assert {case.guardrail.name for case in GOOD} == {g.name for g in GUARDRAILS}


def test_a_guardrail_judges_only_its_own_resource_types() -> None:
    """A guardrail only judges the resources it understands: the same violating inputs are reported on the
    type it judges and ignored on another (the old test fed inputs no guardrail could object to)."""
    props = gpu_service()
    container(props)["image"] = "vllm/vllm-openai:latest"
    assert reported(IMAGES_PINNED, SERVICE, props) != []
    assert not IMAGES_PINNED.applies_to("gcp:storage/bucket:Bucket")
    assert reported(IMAGES_PINNED, "gcp:storage/bucket:Bucket", props) == []


def test_unknown_value_during_preview_is_not_a_pass() -> None:
    """A value computed later (e.g. an image from a build) must not silently pass; pulumi-policy turns the
    raised UnknownValueError into a "can't run during preview" note, and `pulumi up` checks the real value."""
    props = gpu_service()
    container(props)["image"] = Unknown()  # type: ignore[no-untyped-call]
    with pytest.raises(UnknownValueError):
        reported(IMAGES_PINNED, SERVICE, props)


def test_unknown_irrelevant_values_do_not_stop_a_check() -> None:
    """The bucket name is unknown in every preview; the mount-options check must still run and pass."""
    props = gpu_service()
    props["template"]["volumes"][0]["gcs"]["bucket"] = Unknown()  # type: ignore[no-untyped-call]
    assert reported(GPU_MODEL_MOUNT_OWNER, SERVICE, props) == []
    set_mount_options(["implicit-dirs"])(props)
    assert len(reported(GPU_MODEL_MOUNT_OWNER, SERVICE, props)) == 2


def test_pack_policies_wrap_the_same_guardrails() -> None:
    """The pack the CLI loads runs exactly these guardrails, mandatory, with unique names."""
    pack = policies()
    assert [p.name for p in pack] == [g.name for g in GUARDRAILS]
    assert len({p.name for p in pack}) == len(pack)
    bad = next(case for case in BAD if case.guardrail is IMAGES_PINNED)
    messages: list[str] = []
    policy = pack[[g.name for g in GUARDRAILS].index(IMAGES_PINNED.name)]
    assert isinstance(policy, ResourceValidationPolicy)

    def report(message: str, urn: str | None = None) -> None:
        messages.append(message)

    policy.validate(validation_args(bad.resource_type, bad.build()), report)
    assert messages


def test_gpu_accelerators_match_the_stack_table() -> None:
    """The pack runs without the project's code, so it keeps its own list; it must not drift from stacks/."""
    assert {shape.cloud_run_selector for shape in resolved_shapes(platform="cloud-run")} == CLOUD_RUN_GPU_ACCELERATORS


@pytest.mark.parametrize(
    ("reference", "pinned"),
    [
        ("vllm/vllm-openai:v0.32.0", True),
        ("vllm/vllm-openai:latest", False),
        ("vllm/vllm-openai:Nightly", False),
        ("vllm/vllm-openai", False),
        ("host:5000/vllm/vllm-openai", False),
        ("host:5000/vllm/vllm-openai:v1", True),
        ("vllm/vllm-openai@sha256:" + "0" * 64, True),
        ("vllm/vllm-openai@sha256:xyz", False),
        ("vllm/vllm-openai:bad tag", False),
    ],
)
def test_the_pack_and_the_settings_judge_an_image_alike(reference: str, pinned: bool) -> None:
    """The settings and the pack judge an image reference the same way: no image the one accepts and the
    other refuses (both gates run here, the pack's guardrail on a service and the settings' image type)."""
    props = gpu_service()
    props["template"]["containers"][0]["image"] = reference
    pack_refuses = list(policy_images.check_images_pinned(SERVICE, props, {}))
    try:
        TypeAdapter(PinnedImage).validate_python(reference)
        settings_refuse = False
    except ValidationError:
        settings_refuse = True
    assert (not pack_refuses, not settings_refuse) == (pinned, pinned)


def test_secret_env_with_a_computed_value_is_still_plain_text() -> None:
    """A token wired in as a plain env value from another resource's output is refused even while its
    value is unknown, and an unrelated env var with a computed value does not stop the check."""
    props = gpu_service()
    container(props)["envs"] = [
        {"name": "MODEL_BUCKET", "value": Unknown()},  # type: ignore[no-untyped-call]
        {"name": "HF_TOKEN", "value": Unknown()},  # type: ignore[no-untyped-call]
    ]
    messages = reported(NO_PLAINTEXT_SECRETS, SERVICE, props)
    assert len(messages) == 1
    assert "HF_TOKEN" in messages[0]


@pytest.mark.parametrize("stack", ["l4", "tpu-v6e", "a-very-long-stack-name-that-gets-cut"])
def test_the_pack_knows_the_serving_identity_and_the_cache_folder(stack: str) -> None:
    """The pack cannot import the program; if the serving account's name or the cache folder moved, the
    write rule would stop recognising the server and wave a writable weights bucket through."""
    account = StackNames(stack).account_id("vllm")
    assert SERVING_MEMBER.match(f"serviceAccount:{account}@p.iam.gserviceaccount.com")
    assert not SERVING_MEMBER.match(f"serviceAccount:{StackNames(stack).account_id('imp-target')}@p.iam")
    assert POLICY_CACHE_FOLDER == CACHE_FOLDER
