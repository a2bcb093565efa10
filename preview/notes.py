"""The plan's notes: every step the user must take by hand, and what is likely to fail, for this stack.

Why in the plan: each of these fails a first `pulumi up` or the first `verify` far from its cause (a
revision that never starts for want of GPU quota, a 403 for a CI account nobody granted, a TPU request
that cannot attach to a network the project does not have). They are read from what the program
registered (the capture), so they follow the stack's real settings.
"""

from __future__ import annotations

from typing import Any

from preview.capture import Capture, CapturedResource
from preview.monitoring_notes import monitoring_notes
from preview.render import clean
from preview.supply_plan import API, JOB, SERVICE
from preview.supply_plan import RUN as RUN_ON_UP
from preview.tpu_plan import QUEUED_RESOURCE
from serving.cloud_run_containers import SOURCES as SIZING_SOURCES
from serving.naming import TypeToken
from serving.shapes import Platform, ResolvedShape, resolved_shapes

INVOKER = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
METRICS_ADAPTER = TypeToken.GKE_METRICS_ADAPTER
PROXY_SUBNET = "gcp:compute/subnetwork:Subnetwork"
BUCKET = "gcp:storage/bucket:Bucket"


def _inputs(resource: CapturedResource) -> dict[str, Any]:
    return dict(clean(resource.inputs))


def _shape_named(platform: Platform, name: object) -> ResolvedShape | None:
    """The shape a captured resource names (a GKE machine type, a TPU slice), None for one the table lacks."""
    return next((shape for shape in resolved_shapes(platform=platform) if shape.name == name), None)


def _gpu_notes(service: CapturedResource, capture: Capture) -> list[str]:
    inputs = _inputs(service)
    template = inputs.get("template") or {}
    region = inputs.get("location")
    selector = (template.get("nodeSelector") or {}).get("accelerator")
    gpu = next((shape for shape in resolved_shapes(platform="cloud-run") if shape.cloud_run_selector == selector), None)
    name = gpu.display_name if gpu else selector
    zonal = "without" if template.get("gpuZonalRedundancyDisabled") else "with"
    instances = (template.get("scaling") or {}).get("maxInstanceCount", 1)
    cpu, memory = _instance_size(template.get("containers") or [{}])
    gpu_quota = (
        f"quota: Cloud Run needs {instances} {name} GPU(s) {zonal} zonal redundancy in {region} (the Cloud Run "
        f"Admin API quota for {name} GPUs {zonal} zonal redundancy, per project per region; "
        "cloudRun.gpuZonalRedundancyDisabled decides which of the two quotas). New projects often have none: "
        "request it in the console (IAM & Admin > Quotas) before `pulumi up`, or the revision never starts."
    )
    size_quota = (
        f"quota: {instances} instance(s) x {cpu} CPU / {memory} also count against "
        f"Cloud Run's CPU and memory quotas in {region} (defaults can be as low as 20 vCPU / 40 GiB)."
    )
    notes = [gpu_quota, size_quota, _sizing_note(template.get("containers") or [], name, gpu)]
    invokers = [
        str(_inputs(r).get("member"))
        for r in capture.of_type(INVOKER)
        if r.parent == service.parent and _inputs(r).get("role") == "roles/run.invoker"
    ]
    if invokers:
        notes.append(
            f"access: only {', '.join(invokers)} may call the service. Any other caller, such as the deploy "
            "workflow's service account running `verify`, gets 403 until it is listed in cloudRun.invokers "
            "(docs/ci.md, 'One-time set-up in Google Cloud')."
        )
    else:
        notes.append(
            "access: no invoker is granted (cloudRun.invokers is empty): every caller gets 403, the deploy "
            "workflow's service account running `verify` included. List yourself and that account in "
            "cloudRun.invokers (docs/ci.md, 'One-time set-up in Google Cloud'); never allUsers."
        )
    return notes


def _instance_size(containers: list[dict[str, Any]]) -> tuple[str, str]:
    """An instance's CPU and memory: the sum of its containers' limits (vLLM's and the metrics sidecar's)."""
    cpu, mib = 0.0, 0
    units = {"Mi": 1, "Gi": 1024}
    for container in containers:
        limits = (container.get("resources") or {}).get("limits") or {}
        cpu += float(limits.get("cpu") or 0)
        memory = str(limits.get("memory") or "0Mi")
        mib += int(memory[:-2]) * units.get(memory[-2:], 0)
    memory_text = f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"
    return f"{cpu:g}", memory_text


def _sizing_note(containers: list[dict[str, Any]], name: object, gpu: ResolvedShape | None) -> str:
    """How the instance is shared between its containers, and the Google sources that decided it."""
    parts = []
    for container in containers:
        limits = (container.get("resources") or {}).get("limits") or {}
        holds = " (holds the GPU)" if "nvidia.com/gpu" in limits else ""
        parts.append(f"{container.get('name')}{holds} {limits.get('cpu')} CPU / {limits.get('memory')}")
    minimum = f"{gpu.host_vcpu} CPU / {gpu.host_memory_gib:g} GiB" if gpu else "the GPU's minimum"
    return (
        f"sizing: {'; '.join(parts)}. The container holding the {name} has the GPU's whole minimum ({minimum}) by "
        "itself, and each container a CPU value Cloud Run allows with the memory that value allows, so the "
        f"instance passes whether Google counts the minimum per instance or per GPU container (sources: "
        f"{'; '.join(SIZING_SOURCES)})."
    )


def _tpu_notes(resource: CapturedResource) -> list[str]:
    inputs = _inputs(resource)
    body = inputs.get("requestBody") or {}
    spec = ((body.get("tpu") or {}).get("nodeSpec") or [{}])[0]
    node = spec.get("node") or {}
    network = (node.get("networkConfig") or {}).get("network")
    zone = inputs.get("zone")
    accelerator = node.get("acceleratorType")
    placements = inputs.get("placements") or []
    if placements:
        quota = _placement_quota_note(str(accelerator), placements)
    else:
        preemptible = body.get("provisioningModel") == "FLEX_START" or "spot" in body
        kind = "preemptible" if preemptible else "on-demand"
        which = (
            "flex-start and spot use the preemptible quota" if preemptible else "guaranteed uses the on-demand quota"
        )
        quota = (
            f"quota: the {accelerator} request draws on {kind} {_generation(accelerator)} quota in {zone} (Cloud TPU "
            f"API; {which}). "
            "Without it the request fails at once; with it, it may still wait for capacity (WAITING_FOR_RESOURCES)."
        )
    vpc = (
        f"network: the node, its firewall rules and its Cloud NAT use the VPC network {network!r} (tpu.network). "
        "It must exist in the project: projects created under the org policy "
        "constraints/compute.skipDefaultNetworkCreation have no 'default' network; create one or name yours."
    )
    notes = [quota, vpc]
    if not (node.get("networkConfig") or {}).get("enableExternalIps"):
        notes.append(
            "access: the node has an internal IP only: run `verify` from a VM in that network or through an IAP "
            "tunnel, with the API key from Secret Manager (docs/tpu.md, 'Reaching the node'); the deploy workflow "
            "verifies it only with VERIFY_TPU_FROM_RUNNER=true."
        )
    return notes


def _generation(slice_name: object) -> str:
    """`v6e-1` -> `TPU v6e`: the generation whose quota a slice draws on, from the shapes table."""
    found = _shape_named("tpu-vm", str(slice_name))
    return found.short_name if found else "TPU"


def _placement_quota_note(accelerator: str, placements: list[dict[str, Any]]) -> str:
    """One quota line per placement, in the order `pulumi up` tries them."""
    needs = "; ".join(
        f"{index + 1}. {placement.get('zone')} {placement.get('provisioningModel')}: "
        + ("on-demand" if placement.get("provisioningModel") == "guaranteed" else "preemptible")
        + f" {_generation(accelerator)} quota in {placement.get('zone')}"
        for index, placement in enumerate(placements)
    )
    return (
        f"quota: the {accelerator} request tries {len(placements)} placements in order, each with its own quota "
        f"(Cloud TPU API; flex-start and spot use the preemptible quota, guaranteed the on-demand one): {needs}. "
        "A placement without quota is refused and the next is tried; `gemma-verify preflight` shows which can be "
        "granted now (docs/tpu.md)."
    )


def _gke_notes(pool: CapturedResource, capture: Capture) -> list[str]:
    inputs = _inputs(pool)
    config = inputs.get("nodeConfig") or {}
    machine = config.get("machineType")
    nodes = (inputs.get("autoscaling") or {}).get("totalMaxNodeCount")
    zones = ", ".join(inputs.get("nodeLocations") or [])
    tier = "flex-start" if config.get("flexStart") else "spot" if config.get("spot") else "on-demand"
    shape = _shape_named("gke", str(machine))
    what = f"{shape.chips} x {shape.accelerator}" if shape else "its accelerators"
    kind = "preemptible" if tier != "on-demand" else "on-demand"
    quota = (
        f"quota: up to {nodes} {machine} node(s) ({what} each) in {zones}: the project needs {kind} quota for "
        "that many accelerators in the region (Compute Engine quotas; GPUS_ALL_REGIONS counts GPUs too; check it "
        "with `gemma-verify preflight`), or pods stay Pending with FailedScaleUp (`gemma-verify status` shows it)."
    )
    notes = [quota]
    if not capture.of_type(METRICS_ADAPTER):
        notes.append(
            "metrics: gke.metricsAdapter is false, so the HPA reads its metrics through the Custom Metrics "
            "Stackdriver Adapter the cluster already runs; without one the HPA reports FailedGetPodsMetric (or "
            "FailedGetExternalMetric) and keeps the replica count."
        )
    if capture.of_type(GATEWAY):
        notes.append(
            "access: the fleet is reached through an internal Application Load Balancer (the inference gateway, "
            "output `gatewayEndpoint`): call it from the VPC, or run the stack's `portForward` output (the plain "
            "Service, no picker) and `gemma-verify health --url http://127.0.0.1:<port>` with the API key from Secret "
            "Manager."
        )
    else:
        notes.append(
            "access: the Service is an internal load balancer: call it from the VPC, or run the stack's "
            "`portForward` output and `gemma-verify health --url http://127.0.0.1:<port>` with the API key from Secret "
            "Manager."
        )
    if not capture.of_type(CLUSTER):
        notes.append(
            "cluster: the stack uses an existing cluster; it must have Workload Identity, the GCS FUSE CSI driver, "
            "the Secret Manager add-on and Managed Prometheus enabled, and enforce NetworkPolicy (Dataplane V2 or "
            "Calico; without it the fleet's ingress policy is not applied) (docs/gke.md)"
            + (
                ", and the Gateway API (GKE 1.34.0-gke.1626000 or later: its CRDs come with it)."
                if capture.of_type(GATEWAY)
                else "."
            )
        )
    if capture.of_type(GATEWAY) and not capture.of_type(PROXY_SUBNET):
        notes.append(
            "gateway: gke.gateway.proxySubnetRange is null, so the VPC must already have an ACTIVE proxy-only subnet "
            "(purpose REGIONAL_MANAGED_PROXY) in the region, or the Gateway never gets an address."
        )
    return notes


def _revision_notes(capture: Capture) -> list[str]:
    notes = []
    for job in capture.of_type(JOB):
        containers = (_inputs(job).get("template") or {}).get("template", {}).get("containers") or [{}]
        env = {e.get("name"): e.get("value") for e in containers[0].get("envs") or []}
        source, revision = env.get("IMPORT_SOURCE"), env.get("IMPORT_REVISION")
        if not (isinstance(source, str) and source.startswith("hf://") and revision):
            continue
        repo = source.removeprefix("hf://")
        notes.append(
            f"revision: {repo} is pinned at {revision}: check it against the repository's history "
            f"(https://huggingface.co/{repo}/commits/main) before `pulumi up`; an id the Hub does not know fails "
            "the import job, and a stale one serves an old chat template."
        )
    return notes


def manual_steps(capture: Capture) -> list[str]:
    """The notes a stack implies, in the order a first deployment meets them."""
    notes: list[str] = []
    if capture.of_type(API):
        notes.append(
            "billing: the project needs billing enabled, and the deployer the roles listed in docs/deploying.md, "
            "'What you need before `pulumi up`'; `pulumi up` enables the APIs itself."
        )
    if capture.of_type(RUN_ON_UP):
        notes.append(
            "local: `pulumi up` runs each weight import with `gcloud run jobs execute --wait`: gcloud must be "
            "installed and logged in as the deployer where `pulumi up` runs."
        )
    notes += _revision_notes(capture)
    if capture.of_type(BUCKET) and not capture.of_type(JOB):
        notes.append(
            "weights: no weight source is set (model.source), so nothing imports the checkpoint: the bucket path "
            "vLLM reads must hold it before the server starts, or it fails to load. Set model.source (or the "
            "catalog form model.id/variant/revision) to have `pulumi up` import it (docs/deploying.md, "
            "'What `pulumi up` does, in order')."
        )
    for service in capture.of_type(SERVICE):
        notes += _gpu_notes(service, capture)
    for resource in capture.of_type(QUEUED_RESOURCE):
        notes += _tpu_notes(resource)
    for pool in capture.of_type(NODE_POOL):
        if (_inputs(pool).get("autoscaling") or {}).get("totalMaxNodeCount") is not None:
            notes += _gke_notes(pool, capture)
    notes += monitoring_notes(capture)
    buckets = capture.of_type(BUCKET)
    if any(not _inputs(bucket).get("forceDestroy") for bucket in buckets):
        notes.append(
            "teardown: `pulumi destroy` stops everything that bills by the hour but keeps the model bucket while "
            "it holds weights (bucket.forceDestroy is false) and leaves the APIs enabled (docs/deploying.md, "
            "'Tear a stack down')."
        )
    elif buckets:
        notes.append(
            "teardown: bucket.forceDestroy is true: `pulumi destroy` deletes the model bucket with the weights "
            "in it (a new stack imports them again); the APIs stay enabled."
        )
    return notes
