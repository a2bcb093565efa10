"""What `advise` can deploy: each shape of the shapes table on its platform, priced as a stack would deploy it.

Why one module: which shapes are compared (the matrix's, `stacks.fit.SHAPES`, and GKE's TPU node pools), the
instance size or node a stack deploys on each, the zone and provisioning model, and where a shape's price comes
from are read here and nowhere else in `advise`. Every price goes through the billing shape the stack's own plan
bills (serving/pricing.py), so the advisor's $/h and `make preview`'s agree (tests/verify/advise/test_prices.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from serving.gcp_names import region_of
from serving.pricing import CloudRunShape, GkeShape, HourlyPrice, TpuShape, deployed_cloud_run_shape
from serving.shapes import Accelerator, accelerator_facts, machine_family, the_cloud_run_shape, tier_zones
from serving.shapes import shape as table_shape
from serving.shapes import shapes as table_shapes
from stacks.fit import SHAPES, Shape
from stacks.gke import ClusterSettings

DEFAULT_CLOUD_RUN_REGION = "us-central1"
DEFAULT_TPU_REGION = "us-east5"
# GKE GPU machine series are all offered in us-central1; GKE's TPU node pools default like the TPU VMs.
DEFAULT_GKE_GPU_REGION = "us-central1"
# The price book's tier names for each provisioning model a user may allow.
TPU_TIERS = {"on-demand": "guaranteed", "spot": "spot", "flex-start": "flex-start"}
# A GKE node pool may grow to 1000 nodes (stacks/gke.py); the --max-replicas option bounds it further.
GKE_MAX_NODES = 1000


@dataclass(frozen=True)
class Offer:
    """One shape on one platform in one region, on one provisioning model, as a stack would deploy it."""

    shape: Shape
    platform: str
    region: str
    provisioning: str
    # One billed unit: a Cloud Run instance, a TPU node, or one GKE node of the machine type.
    billing: CloudRunShape | TpuShape | GkeShape
    # Cloud Run scales to zero and out to many instances; a TPU stack is one node that bills while it exists; a
    # GKE fleet keeps at least one replica (the HPA's floor on the pinned Kubernetes versions).
    scales_to_zero: bool
    max_replicas: int
    zone: str | None = None

    @property
    def name(self) -> str:
        return self.shape.name

    @property
    def chips(self) -> int:
        return self.shape.chips

    @property
    def accelerator(self) -> Accelerator:
        return self.shape.accelerator

    def price(self) -> HourlyPrice:
        """One billed unit for an hour (an instance, a TPU node, a GKE node)."""
        return self.billing.hourly_price()

    def fixed_price(self) -> HourlyPrice | None:
        """What bills whatever the load: a created GKE cluster's fee and its system node."""
        return self.billing.fixed_price()

    def units(self, replicas: int, replicas_per_unit: int = 1) -> int:
        """Billed units for ``replicas`` vLLM replicas (a GKE node holds node GPUs / tensor parallel of them)."""
        return math.ceil(replicas / replicas_per_unit)


def _platform(shape: Shape) -> str:
    return "tpu" if shape.platform == "tpu-vm" else shape.platform


def advised_shapes() -> tuple[Shape, ...]:
    """The matrix's shapes, and GKE's TPU node pools (ct6e-standard-*), which the matrix leaves out as the TPU
    slices over again but which deploy differently: a fleet of nodes with replicas, not one VM (a pool the
    matrix already ranks, having no slice, is not offered twice)."""
    names = set(Accelerator.every())
    ranked = {shape.name for shape in SHAPES}
    tpu_pools = tuple(
        Shape(entry.name, Accelerator(entry.accelerator), "gke", entry.accelerators)
        for entry in table_shapes(platform="gke")
        if entry.accelerator in names
        and accelerator_facts(entry.accelerator).family == "tpu"
        and entry.name not in ranked
    )
    return (*SHAPES, *tpu_pools)


def offers(
    *, platforms: tuple[str, ...], region: str | None, provisioning: tuple[str, ...]
) -> tuple[list[Offer], list[tuple[str, str]]]:
    """Every shape the constraints allow, and (shape, why not) for those they rule out."""
    found: list[Offer] = []
    ruled_out: list[tuple[str, str]] = []
    for shape in advised_shapes():
        platform = _platform(shape)
        if platforms and platform not in platforms:
            ruled_out.append((shape.name, f"platform {platform} not in --platform {', '.join(platforms)}"))
            continue
        # Cloud Run has one provisioning model; a TPU VM and a GKE node pool are tried on each one allowed.
        if platform == "cloud-run":
            tries = {shape.name: _cloud_run(shape, region)}
        elif platform == "tpu":
            tries = {f"{shape.name} {model}": _tpu(shape, region, model) for model in provisioning}
        else:
            tries = {f"{shape.name} {model}": _gke(shape, region, model) for model in provisioning}
        for what, offer in tries.items():
            if isinstance(offer, str):
                ruled_out.append((what, offer))
            else:
                found.append(offer)
    return found, ruled_out


def _cloud_run(shape: Shape, region: str | None) -> Offer | str:
    gpu = the_cloud_run_shape(shape.accelerator)
    where = region or DEFAULT_CLOUD_RUN_REGION
    if where not in gpu.zones:
        return f"Cloud Run offers no {gpu.display_name} in {where} (offered in {', '.join(gpu.zones)})"
    # The instance a stack deploys with the GPU (the shapes table's deployedSize): what the matrix prices too.
    billing = deployed_cloud_run_shape(shape.accelerator, where)
    return Offer(shape, "cloud-run", where, "on-demand", billing, scales_to_zero=True, max_replicas=1000)


# Why a TPU VM is not offered on demand: the policy pack's mandatory `tpu-queued-resource-bounded` refuses a queued
# resource that is neither spot nor flex-start with a maxRunDuration (policy/tpu.py), so a written stack would not
# pass `make preview`. GKE's ct6e node pools are offered on demand instead.
TPU_VM_ON_DEMAND = (
    "a TPU VM stack must be spot or flex-start with a maxRunDuration (the policy pack's tpu-queued-resource-bounded "
    "refuses an unbounded on-demand node); allow --provisioning spot or flex-start, or see GKE's ct6e node pools"
)


def _tpu(shape: Shape, region: str | None, provisioning: str) -> Offer | str:
    if provisioning == "on-demand":
        return TPU_VM_ON_DEMAND
    where = region or DEFAULT_TPU_REGION
    zones = tier_zones(shape.accelerator, provisioning)
    zone = next((z for z in zones if region_of(z) == where), None)
    if zone is None:
        generation = shape.accelerator.removeprefix("tpu-")  # the shapes table's key names the generation
        return f"no {provisioning} TPU {generation} zone in {where} (zones: {', '.join(zones)})"
    tier = TPU_TIERS[provisioning]
    billing = TpuShape(
        accelerator_type=shape.name,
        chips=shape.chips,
        provisioning_model=tier,  # type: ignore[arg-type]  # TPU_TIERS maps onto TpuShape's tiers
        region=where,
    )
    return Offer(shape, "tpu", where, provisioning, billing, scales_to_zero=False, max_replicas=1, zone=zone)


def _gke(shape: Shape, region: str | None, provisioning: str) -> Offer | str:
    """One node of the machine type in a new cluster (the fee and one system node, as `--write` deploys it)."""
    family = machine_family(table_shape(shape.name))
    tpu = accelerator_facts(shape.accelerator).family == "tpu"
    where = region or (DEFAULT_TPU_REGION if tpu else DEFAULT_GKE_GPU_REGION)
    if provisioning not in family.provisioning:
        note = f" ({family.provisioning_note.value})" if family.provisioning_note is not None else ""
        return f"GKE offers {shape.name} {' or '.join(family.provisioning)} only{note}"
    zone = next((z for z in family.where.value if region_of(z) == where), None)
    if zone is None:
        return f"no zone of {where} offers {shape.name} (zones: {', '.join(family.where.value)})"
    billing = GkeShape(
        machine_type=shape.name,
        accelerator=shape.accelerator,
        accelerators_per_node=shape.chips,
        provisioning_model=provisioning,  # type: ignore[arg-type]  # one of PROVISIONING, GkeShape's own three
        region=where,
        min_nodes=1,
        max_nodes=1,
        cluster_created=True,
        system_machine_type=ClusterSettings.model_fields["system_machine_type"].default,
        system_nodes=1,
    )
    return Offer(
        shape, "gke", where, provisioning, billing, scales_to_zero=False, max_replicas=GKE_MAX_NODES, zone=zone
    )
