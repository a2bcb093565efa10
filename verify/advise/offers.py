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
from serving.pricing import Billing, GkeBilling, HourlyPrice, TpuBilling, deployed_cloud_run_billing
from serving.shapes import ResolvedShape, resolved_shapes, the_cloud_run_shape, tier_zones
from stacks.fit import SHAPES
from stacks.gke import ClusterSettings

DEFAULT_CLOUD_RUN_REGION = "us-central1"
# Without --region, a TPU or GKE shape goes to these regions where it is offered there (the answers advise gave
# before shapes offered elsewhere existed), else to the region of its own first zone (default_region).
DEFAULT_TPU_REGION = "us-east5"
DEFAULT_GKE_GPU_REGION = "us-central1"
# The price book's tier names for each provisioning model a user may allow.
TPU_TIERS = {"on-demand": "guaranteed", "spot": "spot", "flex-start": "flex-start"}
# A GKE node pool may grow to 1000 nodes (stacks/gke.py); the --max-replicas option bounds it further.
GKE_MAX_NODES = 1000


@dataclass(frozen=True)
class Offer:
    """One shape on one platform in one region, on one provisioning model, as a stack would deploy it."""

    shape: ResolvedShape
    platform: str
    region: str
    provisioning: str
    # One billed unit: a Cloud Run instance, a TPU node, or one GKE node of the machine type.
    billing: Billing
    # Cloud Run scales to zero and out to many instances; a TPU stack is one node that bills while it exists; a
    # GKE fleet keeps at least one replica (the HPA's floor on the pinned Kubernetes versions).
    scales_to_zero: bool
    max_replicas: int
    zone: str | None = None

    def price(self) -> HourlyPrice:
        """One billed unit for an hour (an instance, a TPU node, a GKE node)."""
        return self.billing.hourly_price()

    def fixed_price(self) -> HourlyPrice | None:
        """What bills whatever the load: a created GKE cluster's fee and its system node."""
        return self.billing.fixed_price()

    def units(self, replicas: int, replicas_per_unit: int = 1) -> int:
        """Billed units for ``replicas`` vLLM replicas (a GKE node holds node GPUs / tensor parallel of them)."""
        return math.ceil(replicas / replicas_per_unit)


def _platform(shape: ResolvedShape) -> str:
    return "tpu" if shape.platform == "tpu-vm" else shape.platform


def advised_shapes() -> tuple[ResolvedShape, ...]:
    """The matrix's shapes, and GKE's TPU node pools (its machine types with a TPU), which the matrix leaves
    out as the TPU slices over again but which deploy differently: a fleet of nodes with replicas, not one VM
    (a pool the matrix already ranks, having no slice, is not offered twice)."""
    tpu_pools = tuple(shape for shape in resolved_shapes(platform="gke") if shape.is_tpu and shape not in SHAPES)
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


def _cloud_run(shape: ResolvedShape, region: str | None) -> Offer | str:
    gpu = the_cloud_run_shape(shape.accelerator)
    where = region or DEFAULT_CLOUD_RUN_REGION
    if where not in gpu.zones:
        return f"Cloud Run offers no {gpu.display_name} in {where} (offered in {', '.join(gpu.zones)})"
    # The instance a stack deploys with the GPU (the shapes table's deployedSize): what the matrix prices too.
    billing = deployed_cloud_run_billing(shape.accelerator, where)
    return Offer(shape, "cloud-run", where, "on-demand", billing, scales_to_zero=True, max_replicas=1000)


# Why a TPU VM is not offered on demand: the policy pack's mandatory `tpu-queued-resource-bounded` refuses a queued
# resource that is neither spot nor flex-start with a maxRunDuration (policy/tpu.py), so a written stack would not
# pass `make preview`. GKE's TPU node pools are offered on demand instead.
TPU_VM_ON_DEMAND = (
    "a TPU VM stack must be spot or flex-start with a maxRunDuration (the policy pack's tpu-queued-resource-bounded "
    "refuses an unbounded on-demand node); allow --provisioning spot or flex-start, or see GKE's TPU node pools"
)


def default_region(zones: tuple[str, ...], preferred: str) -> str:
    """Where a shape is offered when the user names no region: ``preferred`` if one of its zones is there, else
    the region of its first zone. A fixed default hid every shape Google offers only elsewhere (TPU7x in
    us-central1 against the TPU default us-east5, the H200 in us-south1): advise ruled it out for a region the
    user never chose."""
    regions = [region_of(zone) for zone in zones]
    return preferred if preferred in regions or not regions else regions[0]


def _tpu(shape: ResolvedShape, region: str | None, provisioning: str) -> Offer | str:
    if provisioning == "on-demand":
        return TPU_VM_ON_DEMAND
    zones = tier_zones(shape.accelerator, provisioning)
    where = region or default_region(zones, DEFAULT_TPU_REGION)
    zone = next((z for z in zones if region_of(z) == where), None)
    if zone is None:
        return f"no {provisioning} {shape.short_name} zone in {where} (zones: {', '.join(zones)})"
    tier = TPU_TIERS[provisioning]
    billing = TpuBilling(
        accelerator_type=shape.name,
        chips=shape.chips,
        provisioning_model=tier,  # type: ignore[arg-type]  # TPU_TIERS maps onto TpuBilling's tiers
        region=where,
    )
    return Offer(shape, "tpu", where, provisioning, billing, scales_to_zero=False, max_replicas=1, zone=zone)


def _gke(shape: ResolvedShape, region: str | None, provisioning: str) -> Offer | str:
    """One node of the machine type in a new cluster (the fee and one system node, as `--write` deploys it)."""
    where = region or default_region(shape.zones, DEFAULT_TPU_REGION if shape.is_tpu else DEFAULT_GKE_GPU_REGION)
    if provisioning not in shape.provisioning:
        note = f" ({shape.provisioning_note})" if shape.provisioning_note is not None else ""
        return f"GKE offers {shape.name} {' or '.join(shape.provisioning)} only{note}"
    zone = next((z for z in shape.zones if region_of(z) == where), None)
    if zone is None:
        return f"no zone of {where} offers {shape.name} (zones: {', '.join(shape.zones)})"
    billing = GkeBilling(
        machine_type=shape.name,
        accelerator=shape.accelerator,
        accelerators_per_node=shape.chips,
        provisioning_model=provisioning,  # type: ignore[arg-type]  # one of PROVISIONING, GkeBilling's own three
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
