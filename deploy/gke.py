"""A GKE stack: the identities, the model bucket, the image mirror, the weights, the API key, the cluster
(created or existing), one accelerator node pool and the vLLM fleet on it."""

from __future__ import annotations

from typing import Any

import pulumi

from components.gke.api_key import FleetApiKey, FleetApiKeyArgs
from components.gke.cluster import CreatedCluster, ExistingCluster, GkeCluster, GkeClusterArgs
from components.gke.fleet import VllmFleet, VllmFleetArgs
from components.gke.manifests import FleetSpec
from components.gke.node_identity import NodeIdentity, NodeIdentityArgs
from components.gke.node_pool import AcceleratorNodePool, AcceleratorNodePoolArgs, Tier
from components.gke.tracks import CANDIDATE_SUFFIX
from components.serving_identity import ServingIdentity, ServingIdentityArgs
from deploy.apis import google_cloud
from deploy.context import StackContext
from deploy.gke_routing import gateway_outputs, inference_gateway, metrics_adapter, picker_peers
from deploy.images import image_supply
from deploy.monitoring import watch_stack
from deploy.outputs import ExportedOutputs, exported, settings_outputs
from deploy.weights import adapter_routes, model_bucket, model_supply
from serving.outputs import GkeOutputs
from serving.watch import GkeWatch
from stacks.gke import GkeSettings
from stacks.settings import GkeStack


def deploy_gke(settings: GkeStack, context: StackContext) -> ExportedOutputs:
    gke, names = settings.gke, context.names
    pool = gke.node_pool
    cloud = google_cloud(context, settings.apis)
    identity = ServingIdentity(
        names.identity,
        ServingIdentityArgs(account_id=names.account_id("vllm"), display_name=names.display_name("GKE vLLM")),
        cloud,
    )
    nodes = NodeIdentity(
        names.gke_nodes,
        NodeIdentityArgs(
            project=context.project,
            account_id=names.account_id("nodes"),
            display_name=names.display_name("GKE nodes"),
        ),
        cloud,
    )
    bucket = model_bucket(settings, context, identity.member, cloud)
    # Nodes pull the pinned image through the mirror in the stack's region, as their own account.
    images = image_supply(settings, context, cloud, readers={"gke-nodes": nodes.member})
    weights = model_supply(settings, context, bucket.name, cloud, job_image=images.job)
    api_key = FleetApiKey(
        names.gke_api_key,
        FleetApiKeyArgs(
            project=context.project,
            secret_id=names.gke_api_key_secret,
            location=settings.region,
            reader=identity.member,
            labels=context.labels,
        ),
        cloud,
    )
    cluster_spec: CreatedCluster | ExistingCluster
    existing_name = gke.cluster.existing_name
    if existing_name is None:
        cluster_spec = CreatedCluster(
            name=names.gke_cluster,
            location=gke.cluster_location,
            node_zones=pool.zones,
            kubernetes_version=gke.cluster.kubernetes_version,
            release_channel=gke.cluster.release_channel,
            network=gke.cluster.network,
            subnetwork=gke.cluster.subnetwork,
            system_machine_type=gke.cluster.system_machine_type,
            deletion_protection=gke.cluster.deletion_protection,
            node_service_account=nodes.email,
            gateway_api=gke.uses_gateway,
            authorized_networks=gke.cluster.control_plane.authorized_networks,
            cloud_nat=gke.cluster.cloud_nat,
        )
    else:
        cluster_spec = ExistingCluster(name=existing_name, location=gke.cluster_location)
    cluster = GkeCluster(
        names.gke_cluster_component,
        GkeClusterArgs(project=context.project, cluster=cluster_spec, labels=context.labels),
        cloud,
    )
    node_pool = AcceleratorNodePool(
        names.gke_accelerators,
        AcceleratorNodePoolArgs(
            project=context.project,
            cluster=cluster.name,
            location=gke.cluster_location,
            pool_name=names.gke_node_pool(pool.machine_type),
            shape=pool.shape,
            zones=pool.zones,
            tier=Tier(pool.provisioning.value),
            min_nodes=pool.min_nodes,
            max_nodes=pool.max_nodes,
            disk_size_gb=pool.disk_size_gb,
            node_service_account=nodes.email,
            max_run_seconds=pool.max_run_duration,
            labels=context.labels,
        ),
        pulumi.ResourceOptions(parent=cluster),
    )
    # What the HPA reads through, and what users reach the fleet through: both before the fleet's HPA.
    adapter = metrics_adapter(settings, context, cluster.provider, pulumi.ResourceOptions(parent=cluster))
    gateway = inference_gateway(settings, context, cluster.provider, pulumi.ResourceOptions(parent=cluster))
    name = names.serving
    spec = FleetSpec(
        name=name,
        namespace=gke.namespace,
        image=images.serving,
        serve_args=settings.serve_args(),
        port=settings.port,
        shape=pool.shape,
        cpu=settings.pod_cpu,
        memory_gib=settings.pod_memory_gib,
        accelerators_per_pod=settings.accelerator_chips,
        bucket=bucket.name,
        mount_path=gke.mount.mount_path,
        mount_options=settings.mount_options,
        run_as_user=gke.mount.uid,
        run_as_group=gke.mount.gid,
        service_account_email=identity.email,
        api_key_version=api_key.version,
        min_replicas=gke.replicas.min,
        max_replicas=gke.replicas.max,
        parked=gke.replicas.parked,
        target_waiting_per_pod=gke.replicas.target_waiting_per_pod,
        scale_down_stabilization_seconds=gke.replicas.scale_down_stabilization,
        model_load_seconds=gke.model_load_seconds,
        public_endpoint=gke.service.public_endpoint,
        allowed_source_ranges=gke.service.allowed_source_ranges,
        client_ranges=gke.client_ranges,
        # Behind the gateway the pickers scrape each pod's /metrics on the vLLM port (the NetworkPolicy).
        admitted_peers=picker_peers(gateway),
        # With adapters, the resolver's env; always, the launcher that starts vLLM behind the route guard.
        env={**gke.env, **settings.lora_env()},
        bucket_env=settings.adapter_bucket_env(),
        serving_command=settings.serving_command(),
        labels=context.labels,
    )
    fleet = VllmFleet(
        name,
        VllmFleetArgs(
            project=context.project,
            spec=spec,
            serving_account=identity.email.apply(lambda email: f"projects/{context.project}/serviceAccounts/{email}"),
            # The gateway owns the InferencePools (with their pickers); the fleet registers none of its own.
            endpoint_picker=None,
            tracks=(gke.rollout.serving_track, gke.rollout.candidate_track) if gke.rollout.gated else None,
            picker_pool=gateway.pools[0] if gateway is not None else None,
            target_kv_cache_utilization=gke.gateway.target_kv_cache_utilization,
            autoscaler_after=[
                *(adapter.ready if adapter is not None else []),
                *(gateway.pickers if gateway is not None else []),
            ],
        ),
        cluster.provider,
        # vLLM must never start against an empty bucket path, nor before its nodes may pull the image. Adapter
        # imports are not waited for (they load by name when first asked for; adding one must not touch the
        # pods); only the adapters/ folder itself must exist before vLLM's resolver starts.
        pulumi.ResourceOptions(
            depends_on=[
                node_pool,
                *weights.ready,
                *bucket.kept_folders,
                bucket,
                *([images.mirror] if images.mirror is not None else []),
            ]
        ),
    )
    watch_stack(settings, context, GkeWatch(gke.namespace, name, 0 if gke.replicas.parked else gke.replicas.min), cloud)
    return exported(
        GkeOutputs,
        **settings_outputs(settings),
        endpoint=gateway.endpoint if gateway is not None else fleet.endpoint,
        api_key_secret=api_key.secret,
        model_bucket=bucket.name,
        adapter_routes=adapter_routes(settings, bucket.name),
        service_account=identity.email,
        image=images.serving,
        import_jobs=weights.by_hand(),
        cluster=cluster.path,
        cluster_endpoint=cluster.endpoint,
        namespace=gke.namespace,
        deployment=f"{name}-{gke.rollout.serving_track}" if gke.rollout.gated else name,
        service_name=fleet.service_name,
        hpa=name,
        node_pool=node_pool.name,
        zones=list(pool.zones),
        port_forward=_port_forward(cluster_spec, context.project, gke.namespace, name, settings.port),
        **gateway_outputs(gateway),
        **_gated_outputs(
            gke,
            fleet,
            _port_forward(cluster_spec, context.project, gke.namespace, f"{name}{CANDIDATE_SUFFIX}", settings.port),
        ),
    )


def _gated_outputs(gke: GkeSettings, fleet: VllmFleet, candidate_port_forward: str) -> dict[str, Any]:
    """What `verify promote` reads from a gated fleet; nothing for a direct one (its outputs stay as they were)."""
    if not gke.rollout.gated:
        return {}
    return {
        "serving_track": gke.rollout.serving_track,
        "candidate_track": gke.rollout.candidate_track,
        "candidate_endpoint": fleet.candidate_endpoint,
        "candidate_port_forward": candidate_port_forward,
    }


def _port_forward(cluster: CreatedCluster | ExistingCluster, project: str, namespace: str, name: str, port: int) -> str:
    """How a laptop reaches the internal Service: credentials for the cluster, then a port-forward to it."""
    # A created cluster's public IP endpoint is off unless networks are authorized: its DNS endpoint works.
    dns = " --dns-endpoint" if isinstance(cluster, CreatedCluster) else ""
    where = f"--location {cluster.location} --project {project}{dns}"
    return (
        f"gcloud container clusters get-credentials {cluster.name} {where} && "
        f"kubectl port-forward --namespace {namespace} service/{name} {port}:{port}"
    )
