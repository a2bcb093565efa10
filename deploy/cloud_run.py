"""A Cloud Run GPU stack: the identity, the model bucket, the images, the weights and the vLLM service."""

from __future__ import annotations

from typing import Any

import pulumi

from components.bench_job import BenchJob, BenchJobArgs
from components.image_mirror import ImageMirror
from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.vllm_gpu_service import HttpProbe, ModelMount, VllmGpuService, VllmGpuServiceArgs
from components.weight_access import CacheMount, StreamedWeights
from deploy.apis import google_cloud
from deploy.bench_image import bench_image
from deploy.context import StackContext
from deploy.images import image_supply
from deploy.monitoring import sidecar_supply, watch_stack
from deploy.outputs import ExportedOutputs, exported, settings_outputs
from deploy.rollout_state import obeyed_traffic, rollout_for
from deploy.weights import adapter_routes, model_bucket, model_supply
from serving.compile_cache import GPU_CACHE_PREFIX, GPU_CONTAINER_CACHE_DIR
from serving.outputs import CloudRunOutputs
from serving.watch import CloudRunWatch
from stacks.cloud_run import CloudRunSettings
from stacks.model_load import FuseLoad, StreamLoad
from stacks.settings import CloudRunStack


def deploy_cloud_run(settings: CloudRunStack, context: StackContext) -> ExportedOutputs:
    names = context.names
    # Every component uses a Google provider that waits for the project's APIs.
    cloud = google_cloud(context, settings.apis)
    identity = ServingIdentity(
        names.identity,
        ServingIdentityArgs(account_id=names.account_id("vllm"), display_name=names.display_name("vLLM")),
        cloud,
    )
    bucket = model_bucket(settings, context, identity.member, cloud)
    images = image_supply(settings, context, cloud)
    weights = model_supply(settings, context, bucket.name, cloud, job_image=images.job)
    run = obeyed_traffic(settings.cloud_run)
    metrics = sidecar_supply(settings, context, identity.member, cloud)
    service = VllmGpuService(
        names.serving,
        VllmGpuServiceArgs(
            region=settings.region,
            gpu=settings.shape,
            image=images.serving,
            serve_args=settings.serve_args(),
            max_num_seqs=settings.vllm.max_num_seqs,
            bucket_name=bucket.name,
            service_account_email=identity.email,
            labels=context.labels,
            # Adapters are not waited for: they load by name when first asked for, and adding one must not
            # touch the service; only the adapters/ folder itself must exist before vLLM's resolver starts.
            wait_for=[*weights.ready, *bucket.kept_folders, *metrics.ready],
            rollout=rollout_for(run),
            metrics_sidecar=metrics.sidecar,
            **_service_shape(run, settings),
        ),
        cloud,
    )
    watch_stack(settings, context, CloudRunWatch(context.names.serving, run.min_instances), cloud)
    bench_job = _bench_job(settings, context, service, cloud, images.mirror) if settings.bench is not None else None
    return exported(
        CloudRunOutputs,
        bench_job=bench_job,
        **settings_outputs(settings),
        endpoint=service.url,
        concurrency=settings.concurrency,
        max_instances=run.max_instances,
        service_name=service.service_name,
        # The rollout (gemma-verify promote reads these; docs/rollouts.md).
        rollout=run.rollout,
        cloud_run_service=service.resource_name,
        candidate_revision=service.candidate_revision,
        candidate_url=service.candidate_url,
        serving_revision=service.serving_revision,
        previous_revision=service.previous_revision,
        candidate_percent=run.traffic.candidate_percent,
        model_bucket=bucket.name,
        adapter_routes=adapter_routes(settings, bucket.name),
        service_account=identity.email,
        image=images.serving,
        import_jobs=weights.by_hand(),
    )


def _service_shape(run: CloudRunSettings, settings: CloudRunStack) -> dict[str, Any]:
    """The service's instance, probes, mount and access from the stack's cloudRun block, thresholds resolved."""
    load = settings.model.load
    streamed = StreamedWeights(network=load.network, subnet=load.subnet) if isinstance(load, StreamLoad) else None
    options = (*run.mount.mount_options(), *(load.mount_options() if isinstance(load, FuseLoad) else ()))
    if settings.adapters and "implicit-dirs" not in options:
        # vLLM's resolver needs adapters/<name>/ as directories; their objects carry no folder placeholders.
        options = (*options, "implicit-dirs")
    return {
        "cpu": run.cpu,
        "memory_gib": run.memory_gib,
        "concurrency": run.concurrency,
        "min_instances": run.min_instances,
        "max_instances": run.max_instances,
        "request_timeout_seconds": run.request_timeout_seconds,
        "startup_probe": HttpProbe(
            failure_threshold=run.startup_failure_threshold(settings.startup_load_seconds),
            initial_delay_seconds=run.startup_probe.initial_delay_seconds,
            period_seconds=run.startup_probe.period_seconds,
            timeout_seconds=run.startup_probe.timeout_seconds,
        ),
        "liveness_probe": HttpProbe(
            failure_threshold=run.liveness_failure_threshold(),
            initial_delay_seconds=run.liveness_probe.initial_delay_seconds,
            period_seconds=run.liveness_probe.period_seconds,
            timeout_seconds=run.liveness_probe.timeout_seconds,
        ),
        "mount": ModelMount(mount_path=run.mount.mount_path, options=options),
        "streamed": streamed,
        "compile_cache": (
            CacheMount(GPU_CACHE_PREFIX, GPU_CONTAINER_CACHE_DIR, owner_options=run.mount.owner_options())
            if settings.compile_cache.keep
            else None
        ),
        "port": run.port,
        "env": {**run.env, **settings.lora_env()},
        "bucket_env": settings.adapter_bucket_env(),
        "command": tuple(settings.serving_command()),
        "invokers": run.invokers,
        "ingress": run.ingress,
        "gpu_zonal_redundancy_disabled": run.gpu_zonal_redundancy_disabled,
        "deletion_protection": run.deletion_protection,
    }


def _bench_job(
    settings: CloudRunStack,
    context: StackContext,
    service: VllmGpuService,
    cloud: pulumi.ResourceOptions,
    mirror: ImageMirror | None,
) -> dict[str, Any]:
    """The optional load generator beside the service (stacks/bench.py); what verify needs to start it."""
    bench = settings.bench
    if bench is None:  # pragma: no cover - the caller checks
        raise ValueError("bench: no load-generator job configured")
    job = BenchJob(
        context.names.bench_job,
        BenchJobArgs(
            region=settings.region,
            service_name=service.service_name,
            service_url=service.url,
            served_model_name=settings.model.served_name,
            account_id=context.names.account_id("bench"),
            display_name=context.names.display_name("benchmark load generator"),
            image=bench_image(settings, context, mirror, cloud),
            tasks=bench.tasks,
            cpu_per_task=bench.cpu_per_task,
            # Resolved here from the stack's policy (2 GiB per CPU unless bench.memoryGib is set).
            memory_gib=bench.memory(),
            task_timeout_seconds=bench.timeout_minutes * 60,
            results_prefix=bench.results_prefix,
            keep_days=bench.keep_days,
            project=context.project,
            labels=context.labels,
        ),
        cloud,
    )
    return {
        "name": job.job_name,
        "region": settings.region,
        "project": context.project,
        "tasks": bench.tasks,
        "cpuPerTask": bench.cpu_per_task,
        "resultsBucket": job.results_bucket,
        "resultsPrefix": bench.results_prefix,
    }
