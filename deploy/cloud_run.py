"""A Cloud Run GPU stack: the identity, the model bucket, the images, the weights and the vLLM service."""

from __future__ import annotations

from components.model_bucket import ModelBucket, ModelBucketArgs
from components.serving_identity import ServingIdentity, ServingIdentityArgs, account_id_for
from components.vllm_gpu_service import HttpProbe, ModelMount, VllmGpuService, VllmGpuServiceArgs
from deploy.apis import google_cloud
from deploy.context import StackContext
from deploy.images import image_supply
from deploy.outputs import ExportedOutputs, exported, settings_outputs
from deploy.weights import model_supply
from serving.outputs import CloudRunOutputs
from stacks.cloud_run import CloudRunSettings
from stacks.settings import CloudRunStack


def deploy_cloud_run(settings: CloudRunStack, context: StackContext) -> ExportedOutputs:
    base, stack = context.base, context.stack
    # Every component uses a Google provider that waits for the project's APIs.
    cloud = google_cloud(context, settings.apis)
    identity = ServingIdentity(
        f"{base}-identity",
        ServingIdentityArgs(account_id=account_id_for(stack, "vllm"), display_name=f"gemma-serving {stack} vLLM"),
        cloud,
    )
    bucket = ModelBucket(
        f"{base}-models",
        ModelBucketArgs(
            location=settings.bucket.location or settings.region,
            readers={"serving": identity.member},
            labels=context.labels,
            force_destroy=settings.bucket.force_destroy,
        ),
        cloud,
    )
    images = image_supply(settings, context, cloud)
    weights = model_supply(settings, context, bucket.name, cloud, job_image=images.job)
    run = settings.cloud_run
    serve_args = settings.serve_args()
    service = VllmGpuService(
        f"{base}-vllm",
        VllmGpuServiceArgs(
            region=settings.region,
            gpu=settings.gpu,
            image=images.serving,
            serve_args=serve_args,
            max_num_seqs=settings.vllm.max_num_seqs,
            cpu=run.cpu,
            memory_gib=run.memory_gib,
            mount=ModelMount(bucket_name=bucket.name, path=run.mount.mount_path, options=run.mount.mount_options()),
            service_account_email=identity.email,
            startup_probe=_startup_probe(run),
            liveness_probe=HttpProbe(
                initial_delay_seconds=run.liveness_probe.initial_delay_seconds,
                period_seconds=run.liveness_probe.period_seconds,
                timeout_seconds=run.liveness_probe.timeout_seconds,
                failure_threshold=run.liveness_failure_threshold(),
            ),
            concurrency=settings.concurrency,
            min_instances=run.min_instances,
            max_instances=run.max_instances,
            request_timeout_seconds=run.request_timeout_seconds,
            ingress=run.ingress,
            invokers=run.invokers,
            gpu_zonal_redundancy_disabled=run.gpu_zonal_redundancy_disabled,
            env=run.env,
            port=settings.port,
            deletion_protection=run.deletion_protection,
            labels=context.labels,
            wait_for=weights.ready,
        ),
        cloud,
    )
    return exported(
        CloudRunOutputs,
        **settings_outputs(settings),
        endpoint=service.url,
        concurrency=settings.concurrency,
        max_instances=run.max_instances,
        service_name=service.service_name,
        model_bucket=bucket.name,
        service_account=identity.email,
        image=images.serving,
        import_jobs=weights.by_hand(),
    )


def _startup_probe(run: CloudRunSettings) -> HttpProbe:
    return HttpProbe(
        initial_delay_seconds=run.startup_probe.initial_delay_seconds,
        period_seconds=run.startup_probe.period_seconds,
        timeout_seconds=run.startup_probe.timeout_seconds,
        failure_threshold=run.startup_failure_threshold(),
    )
