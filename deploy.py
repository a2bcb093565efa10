"""Wire one stack's settings to the components it needs and return the stack outputs.

Why separate from `__main__.py`: the offline preview and the tests run exactly this function under
Pulumi's mocks, so what they check is what `pulumi up` deploys.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.model_bucket import ModelBucket, ModelBucketArgs
from components.serving_identity import ServingIdentity, ServingIdentityArgs, account_id_for
from components.vllm_gpu_service import VllmGpuService, VllmGpuServiceArgs
from stacks.settings import StackSettings

# Labels every resource carries, so costs and ownership can be traced back to the stack.
MANAGED_BY = "gemma-serving"


def deploy(settings: StackSettings, stack: str) -> dict[str, Any]:
    """Create the stack's resources; returns the outputs `verify` reads (see docs/architecture.md)."""
    labels = {"managed-by": MANAGED_BY, "stack": _label_value(stack), **settings.labels}
    if settings.gpu is not None:
        return _deploy_cloud_run(settings, stack, labels)
    raise NotImplementedError(f"accelerator {settings.accelerator.value!r} has no deployment wired yet")


def _deploy_cloud_run(settings: StackSettings, stack: str, labels: dict[str, str]) -> dict[str, Any]:
    gpu = settings.gpu
    run = settings.cloud_run
    assert gpu is not None
    assert run is not None
    base = f"gemma-{stack}"
    identity = ServingIdentity(
        f"{base}-identity",
        ServingIdentityArgs(
            account_id=account_id_for(stack, "vllm"),
            display_name=f"gemma-serving {stack} vLLM",
        ),
    )
    bucket = ModelBucket(
        f"{base}-models",
        ModelBucketArgs(
            location=settings.bucket.location or settings.region,
            readers={"serving": identity.member},
            labels=labels,
            force_destroy=settings.bucket.force_destroy,
        ),
    )
    service = VllmGpuService(
        f"{base}-vllm",
        VllmGpuServiceArgs(
            region=settings.region,
            gpu=gpu,
            image=settings.image_ref,
            serve_args=settings.serve_args(),
            max_num_seqs=settings.vllm.max_num_seqs,
            run=run,
            bucket_name=bucket.name,
            service_account_email=identity.email,
            labels=labels,
        ),
    )
    return {
        "endpoint": service.url,
        "servedModelName": settings.model.served_name,
        "authKind": "google-id-token",
        "platform": "cloud-run",
        "accelerator": settings.accelerator.value,
        "region": settings.region,
        "maxModelLen": settings.vllm.max_model_len,
        "maxNumSeqs": settings.vllm.max_num_seqs,
        "concurrency": settings.cloud_run_concurrency(),
        "maxInstances": run.max_instances,
        "serviceName": service.service_name,
        "modelBucket": bucket.name,
        "serviceAccount": identity.email,
        "image": settings.image_ref,
        "vllmArgs": settings.serve_args(),
    }


def _label_value(value: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in value.lower())[:63]


def export_all(outputs: dict[str, Any]) -> None:
    for key, value in outputs.items():
        pulumi.export(key, value)
