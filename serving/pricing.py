"""What a stack costs per hour, from its real shape and Google's list prices (serving/data/pricing.json).

Why one module: the offline plan (cost before `pulumi up`) and `verify bench` (cost per 1M requests and
tokens after it) must price the same thing the same way. Both read the stack's `billing` output, the
shape that is billed: a Cloud Run instance's GPU, CPU and memory (instance-based billing, with or without
GPU zonal redundancy), or a TPU node's chips and provisioning model. A rate the price book does not have
is reported as missing, never guessed.
"""

from __future__ import annotations

import datetime
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from serving.shapes import Accelerator, Platform, ResolvedShape, resolved, resolved_shapes, the_cloud_run_shape

PRICE_BOOK = Path(__file__).resolve().parent / "data" / "pricing.json"
SECONDS_PER_HOUR = 3600


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class Rate(_Model):
    """One published rate: where Google publishes it, when we read it, and through which copy."""

    usd: float | None
    source: str
    read: datetime.date
    via: str | None = None
    as_of: str | None = None
    note: str = ""

    def cite(self) -> str:
        via = f"; via {self.via}" + (f" ({self.as_of})" if self.as_of else "") if self.via else ""
        return f"{self.source}, read {self.read.isoformat()}{via}"


class RegionalRate(_Model):
    """A rate that differs by region (TPU chip-hours, GKE machine-hours)."""

    source: str
    read: datetime.date
    via: str | None = None
    as_of: str | None = None
    note: str = ""
    # True where the figure could not be re-read from the page: the plan labels it so.
    unconfirmed: bool = False
    by_region: dict[str, float]

    def in_region(self, region: str) -> Rate:
        usd = self.by_region.get(region)
        return Rate(usd=usd, source=self.source, read=self.read, via=self.via, as_of=self.as_of, note=self.note)


class RegionList(_Model):
    regions: tuple[str, ...]
    source: str
    read: datetime.date
    note: str = ""


class GpuRates(_Model):
    no_zonal_redundancy: Rate
    zonal_redundancy: Rate


class CloudRunRates(_Model):
    tier1_regions: RegionList
    cpu_per_vcpu_second: Rate
    memory_per_gib_second: Rate
    gpu_per_second: dict[Accelerator, GpuRates]


class TpuRates(_Model):
    guaranteed: RegionalRate
    spot: RegionalRate
    flex_start: RegionalRate = Field(alias="flex-start")


class GkeRates(_Model):
    cluster_fee_per_hour: Rate
    # Per machine type, per provisioning model (on-demand, spot, flex-start).
    machines_per_hour: dict[str, dict[str, RegionalRate]]
    tpu_note: str


class PriceBook(_Model):
    about: str
    currency: Literal["USD"]
    cloud_run: CloudRunRates
    # Per TPU generation (the shapes table's accelerator key; its shapes' priceKey says tpuPerChipHour.<key>).
    tpu_per_chip_hour: dict[str, TpuRates]
    gke: GkeRates


@functools.cache
def price_book() -> PriceBook:
    """The repository's price book, parsed once."""
    return PriceBook.model_validate(json.loads(PRICE_BOOK.read_text()))


# --- the bill of a stack (its `billing` output) ----------------------------------------------------
# Each bill names the shape it bills (`shape`, resolved from the shapes table) beside its own terms (region,
# instances or nodes, provisioning model). The facts it repeats from the table (accelerator, chips) stay in its
# serialised form, the stack's `billing` output, which readers of a deployed stack parse; so each is checked
# against the table when the bill is made, and pricing reads the table's facts through `shape`.


def _in_table(bill: str, field: str, name: str, platform: Platform) -> ResolvedShape:
    """The shape a bill's ``field`` names, on the bill's platform; ValueError naming the field otherwise."""
    try:
        shape = resolved(name)
    except KeyError as error:
        raise ValueError(f"{bill}.{field} {name!r}: {error.args[0]}") from None
    if shape.platform != platform:
        raise ValueError(f"{bill}.{field} {name!r} is a {shape.platform} shape, not a {platform} one")
    return shape


def _agrees(bill: str, field: str, value: object, shape: ResolvedShape, fact: object) -> None:
    """A repeated fact of the bill equals the table's, or the bill prices a shape that is not rented."""
    if value != fact:
        raise ValueError(
            f"{bill}.{field} {value!r} disagrees with serving/data/shapes.json, where {shape.name} has {fact!r}"
        )


class CloudRunBilling(_Model):
    """One Cloud Run instance as it is billed: GPU, CPU and memory for its whole life (instance-based)."""

    kind: Literal["cloud-run"] = "cloud-run"
    accelerator: Accelerator
    region: str | None
    cpu: float
    memory_gib: float
    gpu_zonal_redundancy: bool
    min_instances: int = 0
    max_instances: int = 1

    @model_validator(mode="after")
    def _named_shape(self) -> Self:
        try:
            the_cloud_run_shape(self.accelerator)
        except KeyError as error:
            raise ValueError(f"CloudRunBilling.accelerator {self.accelerator!r}: {error.args[0]}") from None
        return self

    @property
    def shape(self) -> ResolvedShape:
        """The Cloud Run GPU the instance attaches (one shape per GPU)."""
        return the_cloud_run_shape(self.accelerator)

    # Each bill answers for its own platform, so pricing and the bench's judgement never ask which it is.
    @property
    def chips_per_unit(self) -> int:
        """Accelerator chips in one billed unit: the GPUs Cloud Run attaches to an instance."""
        return self.shape.chips

    @property
    def kept_running_units(self) -> int:
        """Units billed with no traffic: the minimum instances."""
        return self.min_instances

    @property
    def full_scale_units(self) -> int:
        return self.max_instances

    @property
    def longest_run_seconds(self) -> int | None:
        """A Cloud Run instance has no run limit (it bills until it scales down)."""
        return None

    def hourly_price(self) -> HourlyPrice:
        return _cloud_run_instance(self)

    def fixed_price(self) -> HourlyPrice | None:
        """Nothing bills besides the instances."""
        return None

    def cost_lines(self, cost: StackCost) -> list[str]:
        return _cloud_run_cost_lines(self, cost)


class TpuBilling(_Model):
    """One TPU node as it is billed: chips x the chip-hour rate of its provisioning model and region."""

    kind: Literal["tpu"] = "tpu"
    accelerator_type: str
    chips: int
    provisioning_model: Literal["flex-start", "spot", "guaranteed"]
    region: str | None
    max_run_seconds: int | None = None

    @model_validator(mode="after")
    def _named_shape(self) -> Self:
        shape = _in_table("TpuBilling", "accelerator_type", self.accelerator_type, "tpu-vm")
        _agrees("TpuBilling", "chips", self.chips, shape, shape.chips)
        return self

    @property
    def shape(self) -> ResolvedShape:
        """The TPU slice the node is."""
        return resolved(self.accelerator_type)

    @property
    def chips_per_unit(self) -> int:
        """Accelerator chips in one billed unit: the node's chips."""
        return self.shape.chips

    @property
    def kept_running_units(self) -> int:
        """The one node bills whenever it exists, traffic or not."""
        return 1

    @property
    def full_scale_units(self) -> int:
        return 1

    @property
    def longest_run_seconds(self) -> int | None:
        """A flex-start node is deleted after maxRunDuration; None when it has none."""
        return self.max_run_seconds

    def hourly_price(self) -> HourlyPrice:
        return _tpu_node(self)

    def fixed_price(self) -> HourlyPrice | None:
        """Nothing bills besides the node."""
        return None

    def cost_lines(self, cost: StackCost) -> list[str]:
        return _tpu_cost_lines(self, cost)


class GkeBilling(_Model):
    """A GKE fleet as it is billed: nodes of one machine type (min..max), plus what the cluster costs."""

    kind: Literal["gke"] = "gke"
    machine_type: str
    accelerator: Accelerator
    accelerators_per_node: int
    provisioning_model: Literal["on-demand", "spot", "flex-start"]
    region: str | None
    min_nodes: int
    max_nodes: int
    # The stack created the cluster (its management fee and system node are the stack's), or uses one.
    cluster_created: bool
    system_machine_type: str | None = None
    # The system pool has one node per zone of the accelerator pool (the cluster's node locations).
    system_nodes: int = 1

    @model_validator(mode="after")
    def _named_shape(self) -> Self:
        shape = _in_table("GkeBilling", "machine_type", self.machine_type, "gke")
        _agrees("GkeBilling", "accelerator", self.accelerator, shape, shape.accelerator)
        _agrees("GkeBilling", "accelerators_per_node", self.accelerators_per_node, shape, shape.chips)
        return self

    @property
    def shape(self) -> ResolvedShape:
        """The machine type of the fleet's accelerator nodes."""
        return resolved(self.machine_type)

    @property
    def chips_per_unit(self) -> int:
        """Accelerators in one billed unit: a node's."""
        return self.shape.chips

    @property
    def kept_running_units(self) -> int:
        """Accelerator nodes billed with no traffic: the fleet's floor."""
        return self.min_nodes

    @property
    def full_scale_units(self) -> int:
        return self.max_nodes

    @property
    def longest_run_seconds(self) -> int | None:
        """Nodes come and go with the autoscaler: no run limit to price."""
        return None

    def hourly_price(self) -> HourlyPrice:
        return _gke_node(self)

    def fixed_price(self) -> HourlyPrice | None:
        """A created cluster's fee and system node, billed whatever the fleet does."""
        return gke_fixed_price(self)

    def cost_lines(self, cost: StackCost) -> list[str]:
        return _gke_cost_lines(self, cost)


# A stack's bill, whichever its platform (`kind` says which, in the `billing` output).
Billing = Annotated[CloudRunBilling | TpuBilling | GkeBilling, Field(discriminator="kind")]


class _Parsed(BaseModel):
    bill: Billing


def parse_billing(value: object) -> Billing:
    """A stack's `billing` output (camelCase JSON) as a bill; ValueError when it is not one, or when the facts it
    repeats from the shapes table disagree with the table."""
    return _Parsed.model_validate({"bill": value}).bill


def minimum_billing(accelerator: Accelerator) -> Billing:
    """What `verify bench --url ... --accelerator X` prices without a stack: the smallest instance
    Cloud Run allows with that GPU (no zonal redundancy), else the smallest TPU slice or GKE machine carrying it."""
    return _MINIMUM_BILLS[accelerator]


def deployed_cloud_run_billing(accelerator: Accelerator, region: str | None) -> CloudRunBilling:
    """A Cloud Run instance with ``accelerator`` at the size a stack deploys it (the shapes table's deployedSize,
    no zonal redundancy): the one price `make matrix`, `gemma-verify advise` and the shipped stacks' plans share."""
    size = the_cloud_run_shape(accelerator).deployed_size
    return CloudRunBilling(
        accelerator=accelerator,
        region=region,
        cpu=size.vcpu,
        memory_gib=size.memory_gib,
        gpu_zonal_redundancy=False,
    )


def _smallest_billing(accelerator: Accelerator) -> Billing:
    """The smallest way to rent one accelerator, from the shapes table: a Cloud Run instance, else the
    smallest TPU slice (on-demand), else the smallest GKE machine type carrying it (on-demand where its
    series offers it, else the first provisioning model it does)."""
    cloud_run = resolved_shapes(platform="cloud-run", accelerator=accelerator)
    if cloud_run:  # Cloud Run attaches one GPU of a kind: one shape at most
        gpu = cloud_run[0]
        return CloudRunBilling(
            accelerator=accelerator,
            region=None,
            cpu=gpu.host_vcpu,
            memory_gib=int(gpu.host_memory_gib),
            gpu_zonal_redundancy=False,
        )
    for platform in ("tpu-vm", "gke"):
        found = sorted(resolved_shapes(platform=platform, accelerator=accelerator), key=lambda shape: shape.chips)
        if found and platform == "tpu-vm":
            return TpuBilling(
                accelerator_type=found[0].name,
                chips=found[0].chips,
                provisioning_model="guaranteed",
                region=None,
            )
        if found:
            offered = found[0].provisioning  # a3-highgpu-1g, for one, is spot/flex-start only
            return GkeBilling(
                machine_type=found[0].name,
                accelerator=accelerator,
                accelerators_per_node=found[0].chips,
                provisioning_model="on-demand" if "on-demand" in offered else offered[0],  # type: ignore[arg-type]
                region=None,
                min_nodes=1,
                max_nodes=1,
                cluster_created=False,
            )
    raise KeyError(f"{accelerator}: no shape in serving/data/shapes.json rents it")


# One entry per accelerator (a test checks every Accelerator has one), so a new one cannot fall into
# another platform's shape.
_MINIMUM_BILLS: dict[Accelerator, Billing] = {
    accelerator: _smallest_billing(accelerator) for accelerator in Accelerator.every()
}


def idle_chips_problem(billing: TpuBilling, used: int) -> str:
    """Why a TPU node whose vLLM uses `used` of its chips is refused: one vLLM server shards over
    --tensor-parallel-size chips and leaves the others idle, billed all the same (priced here)."""
    idle = billing.chips - used
    price = billing.hourly_price().usd_per_hour
    billed = f" billing {usd(price * idle / billing.chips)}/h for nothing" if price is not None else ""
    return (
        f"vllm.tensorParallelSize {used} uses {used} of the {billing.chips} chips of tpu.acceleratorType "
        f"{billing.accelerator_type}: the other {idle} sit idle{billed}; set it to {billing.chips} (the default) or "
        f"use a slice of {used} chip(s)"
    )


# --- prices ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PricePart:
    label: str
    usd_per_hour: float


@dataclass(frozen=True)
class HourlyPrice:
    """What one instance (or node) costs per hour, its parts, and where each rate comes from.

    ``usd_per_hour`` is None when a rate is missing; ``missing`` then says which.
    """

    usd_per_hour: float | None
    parts: tuple[PricePart, ...]
    sources: tuple[str, ...]
    basis: str
    missing: str | None = None

    def describe(self) -> str:
        """`$1.42/h (NVIDIA L4 $0.672 + 8 vCPU $0.518 + 32 GiB $0.230)`, or why there is no price."""
        if self.usd_per_hour is None:
            return f"no price: {self.missing}"
        if len(self.parts) == 1:
            return f"{usd(self.usd_per_hour)}/h ({self.parts[0].label})"
        parts = " + ".join(f"{part.label} {usd(part.usd_per_hour)}" for part in self.parts)
        return f"{usd(self.usd_per_hour)}/h ({parts})"

    def citation(self) -> str:
        """The pages the rates are published on and the days they were read, once each (the copy each
        rate was read through is in serving/data/pricing.json and in `sources`)."""
        pages = sorted({source.split(",", 1)[0] for source in self.sources})
        read = sorted({source.split("read ", 1)[1][:10] for source in self.sources if "read " in source})
        return f"{', '.join(pages)}, read {', '.join(read)}" if pages else "no source"

    def second_hand(self) -> list[str]:
        """The copies (and their dates) the rates not read on Google's own page were read through."""
        return sorted({source.split("; via ", 1)[1] for source in self.sources if "; via " in source})

    def as_dict(self) -> dict[str, object]:
        return {
            "usdPerHour": _rounded(self.usd_per_hour),
            "parts": [{"what": part.label, "usdPerHour": _rounded(part.usd_per_hour)} for part in self.parts],
            "basis": self.basis,
            "missing": self.missing,
            "sources": list(self.sources),
        }


def usd(value: float) -> str:
    """Dollars a person reads at a glance: $0, $0.672, $1.42, $32.40."""
    if value == 0:
        return "$0"
    return f"${value:,.3f}" if value < 1 else f"${value:,.2f}"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def hourly_price(billing: Billing) -> HourlyPrice:
    """One instance or node of ``billing`` for one hour, at list price."""
    return billing.hourly_price()


def _cloud_run_instance(billing: CloudRunBilling) -> HourlyPrice:
    rates = price_book().cloud_run
    redundancy = "with" if billing.gpu_zonal_redundancy else "without"
    where = billing.region or "a Tier 1 region (no region given)"
    basis = (
        f"Cloud Run instance-based billing in {where}: 1 GPU ({redundancy} zonal redundancy), "
        f"{billing.cpu:g} vCPU, {billing.memory_gib:g} GiB"
    )
    if billing.region is not None and billing.region not in rates.tier1_regions.regions:
        return HourlyPrice(
            None,
            (),
            (rates.tier1_regions.source,),
            basis,
            missing=f"no Cloud Run rates recorded for {billing.region} (only Tier 1 GPU regions: "
            f"{', '.join(rates.tier1_regions.regions)}); see serving/data/pricing.json",
        )
    gpu_rates = rates.gpu_per_second.get(billing.accelerator)
    gpu_rate = None
    if gpu_rates is not None:
        gpu_rate = gpu_rates.zonal_redundancy if billing.gpu_zonal_redundancy else gpu_rates.no_zonal_redundancy
    if gpu_rate is None or gpu_rate.usd is None:
        return HourlyPrice(
            None,
            (),
            (),
            basis,
            missing=f"no Cloud Run GPU rate recorded for {billing.accelerator} {redundancy} zonal redundancy",
        )
    cpu, memory = rates.cpu_per_vcpu_second, rates.memory_per_gib_second
    # The price book has both (tests/serving/test_pricing.py checks it).
    assert cpu.usd is not None
    assert memory.usd is not None
    gpus = resolved_shapes(platform="cloud-run", accelerator=billing.accelerator)
    display = gpus[0].display_name if gpus else "GPU"
    parts = (
        PricePart(display, gpu_rate.usd * SECONDS_PER_HOUR),
        PricePart(f"{billing.cpu:g} vCPU", cpu.usd * billing.cpu * SECONDS_PER_HOUR),
        PricePart(f"{billing.memory_gib:g} GiB", memory.usd * billing.memory_gib * SECONDS_PER_HOUR),
    )
    sources = tuple(dict.fromkeys(rate.cite() for rate in (gpu_rate, cpu, memory)))
    return HourlyPrice(sum(part.usd_per_hour for part in parts), parts, sources, basis)


def _tpu_node(bill: TpuBilling) -> HourlyPrice:
    generation = bill.shape.accelerator  # the slice names its TPU generation in the shapes table
    label = bill.shape.short_name  # `TPU v6e`, as messages name the generation
    rates = price_book().tpu_per_chip_hour.get(generation)
    if rates is None:
        return HourlyPrice(
            None,
            (),
            (),
            f"TPU {bill.accelerator_type} ({bill.chips} chip(s)), {bill.provisioning_model}",
            missing=f"no chip-hour rates recorded for {label} (serving/data/pricing.json tpuPerChipHour)",
        )
    regional = {"flex-start": rates.flex_start, "spot": rates.spot, "guaranteed": rates.guaranteed}[
        bill.provisioning_model
    ]
    region = bill.region
    if region is None:  # no stack: the cheapest recorded region, said so in the basis
        region = min(regional.by_region, key=lambda name: regional.by_region[name])
    basis = f"TPU {bill.accelerator_type} ({bill.chips} chip(s)), {bill.provisioning_model}, {region}"
    rate = regional.in_region(region)
    if rate.usd is None:
        recorded = ", ".join(sorted(regional.by_region)) or "none"
        return HourlyPrice(
            None,
            (),
            (rate.cite(),),
            basis,
            missing=f"no {bill.provisioning_model} {label} rate recorded for {region} (recorded: {recorded}); "
            "see serving/data/pricing.json",
        )
    part = PricePart(f"{bill.chips} chip x {usd(rate.usd)}/chip-hour", rate.usd * bill.chips)
    return HourlyPrice(part.usd_per_hour, (part,), (rate.cite(),), basis)


@dataclass(frozen=True)
class StackCost:
    """What a stack costs per hour: what it keeps running, one instance, and everything at full scale."""

    billing: Billing
    unit: HourlyPrice

    def _times(self, instances: int) -> float | None:
        """``instances`` billed units (Cloud Run instances, the one TPU node, a fleet's nodes), plus what the
        bill charges whatever it runs (a GKE cluster's fee and system node)."""
        fixed = self.billing.fixed_price()
        if self.unit.usd_per_hour is None or (fixed is not None and fixed.usd_per_hour is None):
            return None
        extra = fixed.usd_per_hour if fixed is not None and fixed.usd_per_hour is not None else 0.0
        return self.unit.usd_per_hour * instances + extra

    @property
    def kept_running_usd_per_hour(self) -> float | None:
        """Billed with no traffic at all: the minimum instances, or the TPU node while it exists."""
        return self._times(self.billing.kept_running_units)

    @property
    def full_scale_usd_per_hour(self) -> float | None:
        return self._times(self.billing.full_scale_units)

    @property
    def per_run_usd(self) -> float | None:
        """A flex-start node's most expensive run: it is deleted after maxRunDuration."""
        longest = self.billing.longest_run_seconds
        if longest is None or self.unit.usd_per_hour is None:
            return None
        return self.unit.usd_per_hour * longest / SECONDS_PER_HOUR

    def lines(self) -> list[str]:
        """The text plan's section."""
        lines = ["Cost (list prices in USD; taxes, discounts, storage, network and logging not included):"]
        unit = self.unit
        lines += self.billing.cost_lines(self)
        lines.append(f"  basis:         {unit.basis}")
        if unit.sources:
            lines.append(
                f"  rates:         {unit.citation()} (serving/data/pricing.json names the copy each rate was read "
                "from; FORMAT=json lists them under cost)"
            )
        second_hand = unit.second_hand()
        if second_hand:
            lines.append(
                f"  second-hand:   {len(second_hand)} of {len(unit.sources)} rate(s) read through a copy of the page, "
                f"not the page itself ({'; '.join(second_hand)}): re-read them before relying on the figure"
            )
        return [*lines, ""]

    def as_dict(self) -> dict[str, object]:
        """The `cost` key of the JSON plan."""
        return {
            "currency": "USD",
            "shape": self.billing.model_dump(by_alias=True, mode="json"),
            "perUnit": self.unit.as_dict(),
            "keptRunningUsdPerHour": _rounded(self.kept_running_usd_per_hour),
            "fullScaleUsdPerHour": _rounded(self.full_scale_usd_per_hour),
            "perRunUsd": _rounded(self.per_run_usd),
            **({"fixed": fixed.as_dict()} if (fixed := self.billing.fixed_price()) is not None else {}),
        }


def stack_cost(billing: Billing) -> StackCost:
    return StackCost(billing=billing, unit=hourly_price(billing))


def _cloud_run_cost_lines(billing: CloudRunBilling, cost: StackCost) -> list[str]:
    unit, kept, full = cost.unit, cost.kept_running_usd_per_hour, cost.full_scale_usd_per_hour
    lines = [f"  per instance:  {unit.describe()}"]
    if kept is not None and full is not None:
        idle = (
            "scales to zero, nothing bills without traffic; an instance bills from start to stop, "
            "idle time before scale-down included"
            if billing.min_instances == 0
            else f"{billing.min_instances} instance(s) billed around the clock, traffic or not"
        )
        lines.append(f"  kept running:  {usd(kept)}/h (minInstances {billing.min_instances}: {idle})")
        each = usd(unit.usd_per_hour or 0)
        lines.append(f"  at full scale: {usd(full)}/h (maxInstances {billing.max_instances} x {each}/h)")
    return lines


def _tpu_cost_lines(billing: TpuBilling, cost: StackCost) -> list[str]:
    kept = cost.kept_running_usd_per_hour
    lines = [f"  per node:      {cost.unit.describe()}"]
    if kept is not None:
        lines.append(
            f"  kept running:  {usd(kept)}/h while the node exists ({billing.provisioning_model}; "
            "it bills from ACTIVE until it is deleted)"
        )
    per_run = cost.per_run_usd
    if per_run is not None and billing.max_run_seconds is not None:
        hours = billing.max_run_seconds / SECONDS_PER_HOUR
        lines.append(f"  per run:       at most {usd(per_run)} (Google deletes the node after {hours:g} h)")
    return lines


# --- GKE fleets ------------------------------------------------------------------------------------------

_GKE_TPU_TIERS = {"on-demand": "guaranteed", "spot": "spot", "flex-start": "flex-start"}


def _gke_node(bill: GkeBilling) -> HourlyPrice:
    """One accelerator node: a TPU node at its generation's chip-hour rates (the host is included), another
    machine at its recorded rate; which one is the shapes table's price key, not the machine's name."""
    region = bill.region or "us-central1"
    tier = _GKE_TPU_TIERS[bill.provisioning_model]
    machine = bill.shape
    slices = [
        shape.name
        for shape in resolved_shapes(platform="tpu-vm", accelerator=machine.accelerator)
        if shape.chips == machine.chips
    ]
    if machine.is_tpu and slices:
        chips = TpuBilling(
            accelerator_type=slices[0],
            chips=machine.chips,
            provisioning_model=tier,  # type: ignore[arg-type]  # the three tiers map onto TpuBilling's
            region=region,
        )
        price = _tpu_node(chips)
        basis = f"GKE node {bill.machine_type} ({price.basis}); {price_book().gke.tpu_note}"
        return HourlyPrice(price.usd_per_hour, price.parts, price.sources, basis, price.missing)
    return _machine(bill.machine_type, bill.provisioning_model, region)


def _machine(machine_type: str, provisioning_model: str, region: str) -> HourlyPrice:
    basis = f"GKE node {machine_type}, {provisioning_model}, {region}"
    rates = price_book().gke.machines_per_hour.get(machine_type, {}).get(provisioning_model)
    rate = rates.in_region(region) if rates is not None else None
    if rates is None or rate is None or rate.usd is None:
        return HourlyPrice(
            None,
            (),
            (rate.cite(),) if rate is not None else (),
            basis,
            missing=f"no {provisioning_model} rate recorded for {machine_type} in {region} (serving/data/pricing.json)",
        )
    label = machine_type + (" (UNCONFIRMED rate: see serving/data/pricing.json)" if rates.unconfirmed else "")
    return HourlyPrice(rate.usd, (PricePart(label, rate.usd),), (rate.cite(),), basis)


def gke_fixed_price(billing: GkeBilling) -> HourlyPrice | None:
    """What a created cluster costs whatever the fleet does: its management fee and its system nodes."""
    if not billing.cluster_created:
        return None
    fee = price_book().gke.cluster_fee_per_hour
    assert fee.usd is not None  # the price book has it (tests/serving/test_gke_price_book.py)
    parts = [PricePart("cluster management fee", fee.usd)]
    sources = [fee.cite()]
    missing = None
    if billing.system_machine_type is not None:
        system = _machine(billing.system_machine_type, "on-demand", billing.region or "us-central1")
        if system.usd_per_hour is None:
            missing = system.missing
        else:
            count = billing.system_nodes
            parts.append(PricePart(f"{count} system node(s) {system.parts[0].label}", system.usd_per_hour * count))
            sources += system.sources
    total = None if missing else sum(part.usd_per_hour for part in parts)
    return HourlyPrice(total, tuple(parts), tuple(dict.fromkeys(sources)), "the cluster itself", missing)


def _gke_cost_lines(billing: GkeBilling, cost: StackCost) -> list[str]:
    lines = [f"  per node:      {cost.unit.describe()}"]
    fixed = gke_fixed_price(billing)
    if fixed is not None:
        lines.append(f"  cluster:       {fixed.describe()}")
    kept, full = cost.kept_running_usd_per_hour, cost.full_scale_usd_per_hour
    if kept is not None and full is not None:
        plus = " + the cluster" if fixed is not None else ""
        floor = (
            "no accelerator node without traffic (the fleet is parked or scales to 0)"
            if billing.min_nodes == 0
            else f"{billing.min_nodes} node(s) around the clock"
        )
        lines.append(f"  at min:        {usd(kept)}/h ({floor}{plus})")
        each = usd(cost.unit.usd_per_hour or 0)
        lines.append(f"  at max:        {usd(full)}/h ({billing.max_nodes} node(s) x {each}/h{plus})")
    return lines
