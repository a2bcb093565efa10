"""Wire one stack's settings to the components it needs and return the stack outputs.

Why separate from `__main__.py`: the offline preview and the tests run exactly this function under
Pulumi's mocks, so what they check is what `pulumi up` deploys.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.bench_job import BenchJob, BenchJobArgs
from components.model_bucket import ModelBucket, ModelBucketArgs
from components.serving_identity import ServingIdentity, ServingIdentityArgs, account_id_for
from components.tpu.node import NodeIdentity, TpuVllmNode, TpuVllmNodeArgs, with_tensor_parallel
from components.tpu.request_body import FlexStart, Guaranteed, Provisioning, Spot
from components.vllm_gpu_service import VllmGpuService, VllmGpuServiceArgs
from rollout_state import rollout_for
from stacks.labels import stack_labels
from stacks.pricing import billing_shape
from stacks.settings import StackSettings
from stacks.tpu import ProvisioningModel, TpuProvisioning
from supply import google_cloud, image_supply, model_supply


def deploy(settings: StackSettings, stack: str) -> dict[str, Any]:
    """Create the stack's resources; returns the outputs `verify` reads (see docs/architecture.md)."""
    labels = {**stack_labels(stack), **settings.labels}
    if settings.gpu is not None:
        return _deploy_cloud_run(settings, stack, labels)
    if settings.tpu is not None:
        return _deploy_tpu(settings, stack, labels)
    raise NotImplementedError(f"accelerator {settings.accelerator.value!r} has no deployment wired yet")


def _deploy_cloud_run(settings: StackSettings, stack: str, labels: dict[str, str]) -> dict[str, Any]:
    gpu = settings.gpu
    run = settings.cloud_run
    assert gpu is not None
    assert run is not None
    base = f"gemma-{stack}"
    # Every component uses a Google provider that waits for the project's APIs (supply.google_cloud).
    cloud = google_cloud(settings, stack)
    identity = ServingIdentity(
        f"{base}-identity",
        ServingIdentityArgs(
            account_id=account_id_for(stack, "vllm"),
            display_name=f"gemma-serving {stack} vLLM",
        ),
        cloud,
    )
    bucket = ModelBucket(
        f"{base}-models",
        ModelBucketArgs(
            location=settings.bucket.location or settings.region,
            readers={"serving": identity.member},
            labels=labels,
            force_destroy=settings.bucket.force_destroy,
        ),
        cloud,
    )
    images = image_supply(settings, stack, labels, cloud)
    weights = model_supply(settings, stack, bucket.name, labels, cloud, job_image=images.job)
    service = VllmGpuService(
        f"{base}-vllm",
        VllmGpuServiceArgs(
            region=settings.region,
            gpu=gpu,
            image=images.serving,
            serve_args=settings.serve_args(),
            max_num_seqs=settings.vllm.max_num_seqs,
            run=run,
            bucket_name=bucket.name,
            service_account_email=identity.email,
            labels=labels,
            wait_for=weights.ready,
            rollout=rollout_for(run),
        ),
        cloud,
    )
    outputs: dict[str, Any] = {
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
        # What is billed (GPU, CPU, memory, zonal redundancy, instances): verify bench prices it (stacks/pricing.py).
        "billing": billing_shape(settings).model_dump(by_alias=True, mode="json"),
        "serviceName": service.service_name,
        # The rollout (python -m verify promote reads these; docs/architecture.md, "Gated rollouts").
        "rollout": run.rollout,
        "cloudRunService": service.resource_name,
        "candidateRevision": service.candidate_revision,
        "candidateUrl": service.candidate_url,
        "servingRevision": service.serving_revision,
        "previousRevision": service.previous_revision,
        "candidatePercent": run.traffic.candidate_percent,
        "modelBucket": bucket.name,
        "serviceAccount": identity.email,
        "image": images.serving,
        "importJobs": weights.by_hand(),
        "vllmArgs": settings.serve_args(),
    }
    if settings.bench is not None:
        outputs["benchJob"] = _bench_job(settings, stack, base, service, labels=labels, cloud=cloud)
    return outputs


def _bench_job(
    settings: StackSettings,
    stack: str,
    base: str,
    service: VllmGpuService,
    *,
    labels: dict[str, str],
    cloud: pulumi.ResourceOptions,
) -> dict[str, Any]:
    """The optional load generator beside the service (stacks/bench.py); what verify needs to start it."""
    assert settings.bench is not None
    job = BenchJob(
        f"{base}-bench",
        BenchJobArgs(
            region=settings.region,
            service_name=service.service_name,
            service_url=service.url,
            served_model_name=settings.model.served_name,
            account_id=account_id_for(stack, "bench"),
            settings=settings.bench,
            project=settings.project,
            labels=labels,
        ),
        cloud,
    )
    return {
        "name": job.job_name,
        "region": settings.region,
        "project": settings.project,
        "tasks": settings.bench.tasks,
        "cpuPerTask": settings.bench.cpu_per_task,
        "resultsBucket": job.results_bucket,
        "resultsPrefix": settings.bench.results_prefix,
    }


def _deploy_tpu(settings: StackSettings, stack: str, labels: dict[str, str]) -> dict[str, Any]:
    """A model bucket filled by the import jobs, the image mirror, and one TPU v6e node running vLLM."""
    tpu = settings.tpu
    assert tpu is not None
    assert settings.project is not None
    base = f"gemma-{stack}"
    # The APIs (tpu and compute included) are enabled first; the node's Google resources wait for them.
    cloud = google_cloud(settings, stack)
    # Made before the node, so the image mirror can grant it artifactregistry.reader on that repository only.
    account_id = account_id_for(stack, "vllm")
    identity = ServingIdentity(
        f"{base}-identity",
        ServingIdentityArgs(account_id=account_id, display_name=f"gemma-serving {stack} TPU vLLM node"),
        cloud,
    )
    # The node grants its account read access on the bucket (with its other grants).
    bucket = ModelBucket(
        f"{base}-models",
        ModelBucketArgs(
            location=settings.bucket.location or settings.region,
            labels=labels,
            force_destroy=settings.bucket.force_destroy,
        ),
        cloud,
    )
    # The VM pulls the pinned vllm/vllm-tpu tag through the mirror in the stack's region (the TPU zone's).
    images = image_supply(settings, stack, labels, cloud, readers={"tpu-node": identity.member})
    weights = model_supply(settings, stack, bucket.name, labels, cloud, job_image=images.job)
    tensor_parallel = settings.vllm.tensor_parallel_size
    serve_args = with_tensor_parallel(settings.serve_args(), tensor_parallel)
    node = TpuVllmNode(
        f"{base}-vllm",
        TpuVllmNodeArgs(
            project=settings.project,
            zone=tpu.zone,
            accelerator_type=tpu.accelerator_type,
            provisioning=_tpu_provisioning(tpu.provisioning),
            image=images.serving,
            serve_args=serve_args,
            tensor_parallel_size=tensor_parallel,
            port=tpu.port,
            model_bucket=bucket.name,
            model_dirs=[settings.model.path, *([settings.drafter_path] if settings.drafter_path else [])],
            model_root=settings.model_root(),
            network=tpu.network,
            subnetwork=tpu.subnetwork,
            public_endpoint=tpu.public_endpoint,
            allowed_source_ranges=tpu.allowed_source_ranges,
            iap_ssh=tpu.iap_ssh,
            egress_nat=tpu.egress_nat,
            hf_token_secret=tpu.hf_token_secret,
            labels=labels,
            valid_until_seconds=tpu.valid_until_duration,
            active_deadline_seconds=tpu.active_deadline,
            identity=NodeIdentity(account_id=account_id, member=identity.member, resource=identity),
            # vLLM must never boot against an empty bucket path, nor before it may pull through the mirror.
            wait_for=[*weights.ready, *([images.mirror] if images.mirror is not None else [])],
        ),
        cloud,
    )
    return {
        "endpoint": node.endpoint,
        "servedModelName": settings.model.served_name,
        "authKind": "api-key",
        "apiKeySecret": node.api_key_secret,
        "platform": "tpu",
        "accelerator": settings.accelerator.value,
        "region": settings.region,
        "zone": tpu.zone,
        "acceleratorType": tpu.accelerator_type,
        "provisioningModel": tpu.provisioning.model.value,
        "billing": billing_shape(settings).model_dump(by_alias=True, mode="json"),
        "maxModelLen": settings.vllm.max_model_len,
        "maxNumSeqs": settings.vllm.max_num_seqs,
        "queuedResourceName": node.queued_resource_name,
        "nodeId": node.node_id,
        "modelBucket": bucket.name,
        "serviceAccount": node.service_account_email,
        "image": node.image,
        "importJobs": weights.by_hand(),
        "vllmArgs": serve_args,
    }


def _tpu_provisioning(provisioning: TpuProvisioning) -> Provisioning:
    if provisioning.model is ProvisioningModel.FLEX_START:
        assert provisioning.max_run_duration is not None
        return FlexStart(provisioning.max_run_duration)
    if provisioning.model is ProvisioningModel.SPOT:
        return Spot()
    return Guaranteed(provisioning.reservation)


def export_all(outputs: dict[str, Any]) -> None:
    for key, value in outputs.items():
        pulumi.export(key, value)
