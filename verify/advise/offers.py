"""What `advise` can deploy: each accelerator shape on its platform, priced as the stack would deploy it.

Why one module: the shapes (today `preview.fit.SHAPES`, the accelerator shapes table once it lands), the
instance size a stack deploys on each, and where a shape's price comes from are read here and nowhere else
in `advise`; switching to the shapes table is an edit of this file.
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.accelerators import CLOUD_RUN_GPUS, Accelerator
from serving.cloud_run_limits import DEPLOYED_SIZE
from serving.latency import Hardware
from serving.pricing import CloudRunShape, HourlyPrice, TpuShape
from serving.speed_facts import hardware_for
from serving.tpu_offers import FLEX_START_V6E_ZONES, V6E_ZONES
from stacks.fit import SHAPES, Shape

# The Cloud Run instance a stack deploys with each GPU: what the matrix prices too (one basis per shape).
CLOUD_RUN_SIZE = DEPLOYED_SIZE
DEFAULT_CLOUD_RUN_REGION = "us-central1"
DEFAULT_TPU_REGION = "us-east5"
# The price book's tier names for each provisioning model a user may allow.
TPU_TIERS = {"on-demand": "guaranteed", "spot": "spot", "flex-start": "flex-start"}


@dataclass(frozen=True)
class Offer:
    """One shape on one platform in one region, on one provisioning model, as a stack would deploy it."""

    shape: Shape
    platform: str
    region: str
    provisioning: str
    billing: CloudRunShape | TpuShape
    # Cloud Run scales to zero and out to many instances; a TPU stack is one node that bills while it exists.
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

    def hardware(self) -> Hardware:
        return hardware_for(self.shape.accelerator, self.shape.chips)

    def price(self) -> HourlyPrice:
        return self.billing.hourly_price()


def _platform(shape: Shape) -> str:
    return "tpu" if shape.platform == "tpu-vm" else shape.platform


def offers(
    *, platforms: tuple[str, ...], region: str | None, provisioning: tuple[str, ...]
) -> tuple[list[Offer], list[tuple[str, str]]]:
    """Every shape the constraints allow, and (shape, why not) for those they rule out."""
    found: list[Offer] = []
    ruled_out: list[tuple[str, str]] = []
    for shape in SHAPES:
        if shape.platform == "gke":  # GKE node offers are not priced here yet (one replica per node, HPA bounds)
            continue
        platform = _platform(shape)
        if platforms and platform not in platforms:
            ruled_out.append((shape.name, f"platform {platform} not in --platform {', '.join(platforms)}"))
            continue
        if platform == "cloud-run":
            offer = _cloud_run(shape, region)
            if isinstance(offer, str):
                ruled_out.append((shape.name, offer))
            else:
                found.append(offer)
            continue
        for model in provisioning:
            tpu = _tpu(shape, region, model)
            if isinstance(tpu, str):
                ruled_out.append((f"{shape.name} {model}", tpu))
            else:
                found.append(tpu)
    return found, ruled_out


def _cloud_run(shape: Shape, region: str | None) -> Offer | str:
    gpu = CLOUD_RUN_GPUS[shape.accelerator]
    where = region or DEFAULT_CLOUD_RUN_REGION
    if where not in gpu.regions:
        return f"Cloud Run offers no {gpu.display_name} in {where} (offered in {', '.join(gpu.regions)})"
    cpu, memory = CLOUD_RUN_SIZE[shape.accelerator]
    billing = CloudRunShape(
        accelerator=shape.accelerator, region=where, cpu=cpu, memory_gib=memory, gpu_zonal_redundancy=False
    )
    return Offer(shape, "cloud-run", where, "on-demand", billing, scales_to_zero=True, max_replicas=1000)


def _tpu(shape: Shape, region: str | None, provisioning: str) -> Offer | str:
    where = region or DEFAULT_TPU_REGION
    zones = FLEX_START_V6E_ZONES if provisioning == "flex-start" else V6E_ZONES
    zone = next((z for z in zones if z.rsplit("-", 1)[0] == where), None)
    if zone is None:
        generation = shape.accelerator.value.removeprefix("tpu-")  # the shapes table's key names the generation
        return f"no {provisioning} TPU {generation} zone in {where} (zones: {', '.join(zones)})"
    tier = TPU_TIERS[provisioning]
    billing = TpuShape(
        accelerator_type=shape.name,
        chips=shape.chips,
        provisioning_model=tier,  # type: ignore[arg-type]  # TPU_TIERS maps onto TpuShape's tiers
        region=where,
    )
    return Offer(shape, "tpu", where, provisioning, billing, scales_to_zero=False, max_replicas=1, zone=zone)
