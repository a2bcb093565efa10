"""A TPU stack: the identity, the model bucket, the image mirror, the weights and one TPU node."""

from __future__ import annotations

import pulumi

from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.tpu.node import NetworkEdge, NodeWeights, QueueTerms, TpuVllmNode, TpuVllmNodeArgs
from components.tpu.request_body import FlexStart, Guaranteed, Placement, Provisioning, Spot
from components.tpu.startup_script import NodeCollector
from deploy.apis import google_cloud
from deploy.context import StackContext
from deploy.images import image_supply
from deploy.monitoring import watch_stack
from deploy.outputs import ExportedOutputs, exported, settings_outputs
from deploy.weights import model_bucket, model_supply
from serving.collectors import OTELCOL_GOOGLE_IMAGE, tpu_collector_config
from serving.compile_cache import TPU_CACHE_PREFIX
from serving.naming import TypeToken
from serving.outputs import TpuOutputs
from serving.watch import TpuWatch
from stacks.settings import TpuStack
from stacks.tpu import ProvisioningModel, TpuProvisioning

NODE_TYPE = TypeToken.TPU_VLLM_NODE


def deploy_tpu(settings: TpuStack, context: StackContext) -> ExportedOutputs:
    tpu = settings.tpu
    names = context.names
    node_name = names.serving
    # The APIs (tpu and compute included) are enabled first; the node's Google resources wait for them.
    cloud = google_cloud(context, settings.apis)
    # Made before the node, so the image mirror and the bucket can grant it read access first.
    identity = ServingIdentity(
        names.identity,
        ServingIdentityArgs(account_id=names.account_id("vllm"), display_name=names.display_name("TPU vLLM node")),
        cloud,
    )
    former_node = pulumi.create_urn(node_name, NODE_TYPE)
    # Until the bucket granted it, the node did (`<node>-weights-reader`); moved, not replaced.
    bucket = model_bucket(
        settings,
        context,
        identity.member,
        cloud,
        reader_aliases=[pulumi.Alias(name=f"{node_name}-weights-reader", parent=former_node)],
    )
    # The VM pulls the pinned vllm/vllm-tpu tag through the mirror in the stack's region (the TPU zone's).
    images = image_supply(settings, context, cloud, readers={"tpu-node": identity.member})
    weights = model_supply(settings, context, bucket.name, cloud, job_image=images.job)
    serve_args = settings.serve_args()
    node = TpuVllmNode(
        node_name,
        TpuVllmNodeArgs(
            project=context.project,
            zone=tpu.zone,
            accelerator_type=tpu.accelerator_type,
            runtime_version=settings.shape.tpu_vm_runtime,
            queue=QueueTerms(
                provisioning=_provisioning(tpu.provisioning),
                valid_until_seconds=tpu.valid_until_duration,
                active_deadline_seconds=tpu.active_deadline,
                fallbacks=[
                    Placement(placement.zone, _provisioning(placement.provisioning))
                    for placement in tpu.placement_list[1:]
                ],
            ),
            image=images.serving,
            serve_args=serve_args,
            serving_command=settings.serving_command(),
            tensor_parallel_size=settings.vllm.tensor_parallel_size,
            port=settings.port,
            weights=NodeWeights(
                bucket_name=bucket.name,
                dirs=settings.model_dirs,
                root=settings.model_root,
                compile_cache_prefix=TPU_CACHE_PREFIX if settings.compile_cache.keep else None,
            ),
            edge=NetworkEdge(
                network=tpu.network,
                subnetwork=tpu.subnetwork,
                public_endpoint=tpu.public_endpoint,
                allowed_source_ranges=tpu.allowed_source_ranges,
                iap_ssh=tpu.iap_ssh,
                egress_nat=tpu.egress_nat,
            ),
            hf_token_secret=tpu.hf_token_secret,
            labels=context.labels,
            identity=identity,
            collector=node_collector(settings, node_name),
            # vLLM must never boot against an empty or unreadable bucket path, nor before it may pull
            # through the mirror.
            wait_for=[*weights.ready, bucket, *([images.mirror] if images.mirror is not None else [])],
        ),
        cloud,
    )
    flex_run = (
        tpu.provisioning.flex_start_run_seconds if tpu.provisioning.model is ProvisioningModel.FLEX_START else None
    )
    watch_stack(settings, context, TpuWatch(node_name, flex_run), cloud)
    return exported(
        TpuOutputs,
        **settings_outputs(settings),
        endpoint=node.endpoint,
        api_key_secret=node.api_key_secret,
        # Where the node landed (with tpu.placements, the placement Google granted).
        zone=node.zone,
        accelerator_type=tpu.accelerator_type,
        provisioning_model=node.provisioning_model,
        queued_resource_name=node.queued_resource_name,
        node_id=node.node_id,
        model_bucket=bucket.name,
        service_account=node.service_account_email,
        image=node.image,
        import_jobs=weights.by_hand(),
    )


def _provisioning(provisioning: TpuProvisioning) -> Provisioning:
    match provisioning.model:
        case ProvisioningModel.FLEX_START:
            return FlexStart(provisioning.flex_start_run_seconds)
        case ProvisioningModel.SPOT:
            return Spot()
        case ProvisioningModel.GUARANTEED:
            return Guaranteed(provisioning.reservation)


def node_collector(settings: TpuStack, node_name: str) -> NodeCollector | None:
    """The metrics collector beside vLLM on the node, when the stack's monitoring is on."""
    if not settings.monitoring.enabled:
        return None
    return NodeCollector(
        image=OTELCOL_GOOGLE_IMAGE, config=tpu_collector_config(port=settings.port, namespace=node_name)
    )
