"""The shapes table: every accelerator and every shape that deploys it, as data (serving/data/shapes.json).

Why data with one reader: which chip, in which machine, where, on what terms and at what price key is
knowledge Google and NVIDIA publish as tables; kept as code it was spelled in ~15 modules (zone tuples,
price keys, a regex, `if ... v6e` branches), so a new shape touched ~17 files. Here it is one file, each
fact with its source, the day it was read and whether it was confirmed there; settings, components, the
planner, pricing, preflight, status and the matrix ask this module, and no module outside it spells a
shape's name (tests/serving/test_shape_names.py). Adding a shape: the note at the top of the data file.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError, core_schema

from serving.units import GIB

__all__ = [
    "Accelerator",
    "AcceleratorFacts",
    "DeployedSize",
    "Fact",
    "InstanceMaximum",
    "InterconnectFact",
    "MachineFamily",
    "Number",
    "PerPrecision",
    "Places",
    "Platform",
    "ResolvedShape",
    "Shape",
    "ShapesTable",
    "Text",
    "WeightFormat",
    "accelerator_facts",
    "deployed_size",
    "resolved",
    "resolved_shapes",
    "shape",
    "shapes",
    "shapes_table",
    "short_name",
    "the_cloud_run_shape",
    "tier_zones",
    "tpu_slices",
    "tpu_zones",
]

Platform = Literal["cloud-run", "tpu-vm", "gke"]
Family = Literal["gpu", "tpu"]
# How an accelerator serves a weight format: on its own tensor cores, dequantised to bf16 per matmul
# (weight-only: memory and bandwidth of the small format, compute of bf16), not at all, or unknown.
HowServed = Literal["native", "weight-only", "unsupported", "unconfirmed"]


# vLLM 0.32's device default --max-num-batched-tokens for the OpenAI server (vllm/engine/arg_utils.py): 8192 on a
# device with 70 GiB or more, 2048 below; a chip vLLM lists by name (its TPU table) states its own in the table.
VLLM_BATCHED_TOKENS = 2048
VLLM_LARGE_DEVICE_BATCHED_TOKENS = 8192
VLLM_LARGE_DEVICE_GIB = 70


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)


class _Cited(_Data):
    """Where a fact comes from, when it was read, and whether it was confirmed at that source."""

    source: str
    read: datetime.date
    # False: read from a copy, recalled or inferred; the plan never presents it as checked.
    confirmed: bool = True
    note: str = ""


# One class per kind of value (not a generic Fact[T]: each parametrisation is a class pydantic builds on import).
class Number(_Cited):
    value: float


class Text(_Cited):
    value: str


class Places(_Cited):
    """Zones or regions."""

    value: tuple[str, ...]


class PerPrecision(_Cited):
    """A figure per precision (bf16, fp8, fp4, int8)."""

    value: dict[str, float]


Fact = Number | Text | Places | PerPrecision


class WeightFormat(_Data):
    """How an accelerator serves one precision of weights (the catalog's `precision`)."""

    how: HowServed
    kernel: str = ""
    source: str
    read: datetime.date
    confirmed: bool = True
    note: str = ""

    @property
    def served(self) -> bool:
        return self.how in {"native", "weight-only"}


class InterconnectFact(_Cited):
    """How the chips of one machine or slice exchange activations in tensor parallel (PCIe, NVLink, ICI): the
    bandwidth a chip sends at in one direction, and the fixed time of one small all-reduce."""

    kind: str
    bandwidth_gb_per_s: float = Field(gt=0)
    latency_us: float = Field(ge=0)


class AcceleratorFacts(_Data):
    """One chip: memory, bandwidth, peak dense FLOP/s by precision, the weight formats it serves and how, and
    the interconnect its machines or slices link it to its neighbours with."""

    display_name: str
    family: Family
    memory_gb: Number
    # What vLLM can use where it differs from the datasheet (TPU HBM as vLLM's log reports it), GiB.
    usable_memory_gib: Number | None = None
    bandwidth_gb_per_s: Number
    peak_dense_tflops: PerPrecision
    compute_capability: Text | None = None
    driver: Text | None = None
    runtime_version: Text | None = None
    # vLLM's own default --max-num-batched-tokens for this chip, where vLLM lists one (its TPU table).
    vllm_batched_tokens: Number | None = None
    weight_formats: dict[str, WeightFormat]
    interconnect: InterconnectFact | None = None
    # Why an entry is here without a shape (room for the next chip: its facts first, its shapes later).
    note: str = ""

    @property
    def short_name(self) -> str:
        """How messages name the chip: its display name without the marketing name (`TPU v6e (Trillium)` ->
        `TPU v6e`)."""
        return self.display_name.split(" (", 1)[0]

    @property
    def memory_gib(self) -> float:
        """Memory per chip the planner counts, GiB."""
        if self.usable_memory_gib is not None:
            return self.usable_memory_gib.value
        return self.memory_gb.value * 10**9 / GIB

    @property
    def memory_bandwidth(self) -> float:
        """Bytes per second: what bounds decode, which reads every weight once per step."""
        return self.bandwidth_gb_per_s.value * 1e9

    @property
    def peak_dense_bf16_flops(self) -> float | None:
        tflops = self.peak_dense_tflops.value.get("bf16")
        return None if tflops is None else tflops * 1e12

    def weight_format(self, precision: str) -> WeightFormat | None:
        return self.weight_formats.get(precision)

    @property
    def default_batched_tokens(self) -> int:
        """vLLM 0.32's --max-num-batched-tokens for the OpenAI server when a stack leaves it unset: the chip's
        own value where vLLM lists one (TPU v6e), else the device default by memory (vllm/engine/arg_utils.py),
        which a TPU generation vLLM does not list (TPU7x) takes too."""
        if self.vllm_batched_tokens is not None:
            return int(self.vllm_batched_tokens.value)
        return VLLM_LARGE_DEVICE_BATCHED_TOKENS if self.memory_gib >= VLLM_LARGE_DEVICE_GIB else VLLM_BATCHED_TOKENS


class DeployedSize(_Cited):
    """The Cloud Run instance a stack deploys a GPU at: what the plan bills, so what `make matrix` and
    `gemma-verify advise` price and `advise --write` writes (one price per shape, whoever asks)."""

    vcpu: int = Field(ge=1)
    memory_gib: int = Field(ge=1)


class InstanceMaximum(_Cited):
    """The largest Cloud Run instance Google gives a service with this GPU: what a stack may ask for at most.
    ``basis`` is how a refusal words where the bound comes from."""

    vcpu: int = Field(ge=1)
    memory_gib: int = Field(ge=1)
    basis: str


class QuotaSelector(_Data):
    """Which Compute Engine quota a GKE node pool draws on, by the one name a source gives for it: its metric, its
    quota ID, or (where a page names no ID) the start of its display name; `dimensions` pins the custom dimension
    Google keys a shared quota by (`tpu_family` of `TPUS-PER-TPU-FAMILY`)."""

    metric: str | None = None
    quota_id: str | None = None
    display_name: str | None = None
    dimensions: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_name(self) -> Self:
        named = [name for name in (self.metric, self.quota_id, self.display_name) if name is not None]
        if len(named) != 1:
            raise ValueError("a quota selector names exactly one of metric, quotaId or displayName")
        return self

    @property
    def described(self) -> str:
        """How messages name the quota: its name and the dimension it is keyed by."""
        name = self.metric or self.quota_id or f"{self.display_name!r}"
        pinned = ", ".join(f"{key} {value}" for key, value in self.dimensions.items())
        return f"{name} ({pinned})" if pinned else name


class MachineFamily(_Data):
    """A GKE machine series (G2, G4, A3 High, ct6e): what its machine types share."""

    host_source: Text
    # The node label GKE sets (cloud.google.com/gke-accelerator or gke-tpu-accelerator).
    gke_accelerator: str
    where: Places
    # Provisioning models GKE node pools of this series can use (on-demand, spot, flex-start).
    provisioning: tuple[str, ...]
    provisioning_note: Text | None = None
    # The Compute Engine quotas a node pool draws on, per provisioning model: the first, then its fallbacks (a
    # flex-start node falls back to the on-demand quota where the preemptible one has no room).
    quota: dict[str, tuple[QuotaSelector, ...]]
    quota_source: Text
    price_key: str


class Shape(_Data):
    """One way to rent the accelerator: a Cloud Run GPU, a TPU slice, or a GKE machine type."""

    name: str = ""
    platform: Platform
    accelerator: str
    accelerators: int = Field(ge=1)
    host_vcpu: int | None = None
    host_memory_gib: float | None = None
    topology: str | None = None
    family: str | None = None
    limits: Text | None = None
    # Cloud Run: the instance size a stack deploys (at or above the limits' minimum).
    deployed_size: DeployedSize | None = None
    # Cloud Run: the largest instance a service with the GPU may have.
    instance_maximum: InstanceMaximum | None = None
    where: Places | None = None
    flex_start_zones: Places | None = None
    provisioning: tuple[str, ...] = ()
    quota: dict[str, str] = Field(default_factory=dict)
    quota_match: tuple[str, ...] = ()
    node_selector: dict[str, str] = Field(default_factory=dict)
    price_key: str | None = None


class ShapesTable(_Data):
    """The whole table, checked for references that lead nowhere."""

    about: str
    accelerators: dict[str, AcceleratorFacts]
    shapes: dict[str, Shape]
    machine_families: dict[str, MachineFamily]

    @model_validator(mode="after")
    def _references(self) -> Self:
        problems = []
        for name, entry in self.shapes.items():
            if entry.accelerator not in self.accelerators:
                problems.append(f"shapes.{name}.accelerator {entry.accelerator!r} is not under accelerators")
            if entry.platform == "gke" and entry.family not in self.machine_families:
                problems.append(f"shapes.{name}.family {entry.family!r} is not under machineFamilies")
            if entry.platform != "gke" and (entry.where is None or entry.price_key is None):
                problems.append(f"shapes.{name}: a {entry.platform} shape needs where and priceKey")
            if entry.platform == "cloud-run" and (entry.deployed_size is None or entry.instance_maximum is None):
                problems.append(
                    f"shapes.{name}: a cloud-run shape needs deployedSize (the instance a stack deploys) and "
                    "instanceMaximum (the largest it may ask for)"
                )
        # A TPU VM boots a runtime image (runtimeVersion); a GKE node pool does not, so a TPU Google sells through
        # GKE only has none to give.
        on_tpu_vm = {entry.accelerator for entry in self.shapes.values() if entry.platform == "tpu-vm"}
        problems.extend(
            f"accelerators.{key}: a TPU rented as a TPU VM needs runtimeVersion"
            for key in sorted(on_tpu_vm & set(self.accelerators))
            if self.accelerators[key].runtime_version is None
        )
        if problems:
            raise ValueError("; ".join(problems))
        return self


@cache
def shapes_table() -> ShapesTable:
    """The table, read and checked once; each shape carries its own name."""
    text = resources.files("serving").joinpath("data", "shapes.json").read_text(encoding="utf-8")
    table = ShapesTable.model_validate_json(text)
    named = {name: entry.model_copy(update={"name": name}) for name, entry in table.shapes.items()}
    return table.model_copy(update={"shapes": named})


def rentable_accelerators() -> tuple[str, ...]:
    """The accelerators some shape rents, in the table's order: the ones a stack can name."""
    rented = {entry.accelerator for entry in shapes_table().shapes.values()}
    return tuple(key for key in shapes_table().accelerators if key in rented)


def accelerator_facts(accelerator: str) -> AcceleratorFacts:
    """One accelerator's facts; the error lists those there are."""
    table = shapes_table().accelerators
    if accelerator not in table:
        raise KeyError(
            f"{accelerator!r} is not an accelerator in serving/data/shapes.json; allowed: {', '.join(table)}"
        )
    return table[accelerator]


def shape(name: str) -> Shape:
    """One shape by name (a Cloud Run GPU, a TPU slice, a GKE machine type); the error lists them."""
    table = shapes_table().shapes
    if name not in table:
        raise KeyError(f"{name!r} is not a shape in serving/data/shapes.json; allowed: {', '.join(table)}")
    return table[name]


def shapes(*, platform: Platform | None = None, accelerator: str | None = None) -> list[Shape]:
    """Every shape, or those of one platform and/or accelerator, in the table's order."""
    return [
        entry
        for entry in shapes_table().shapes.values()
        if (platform is None or entry.platform == platform)
        and (accelerator is None or entry.accelerator == accelerator)
    ]


def deployed_size(accelerator: str) -> DeployedSize:
    """The Cloud Run instance a stack deploys ``accelerator`` at; KeyError when Cloud Run does not offer it."""
    for entry in shapes(platform="cloud-run", accelerator=accelerator):
        assert entry.deployed_size is not None  # the table's validator requires it
        return entry.deployed_size
    raise KeyError(f"{accelerator!r}: no Cloud Run shape in serving/data/shapes.json offers it")


def machine_family(entry: Shape) -> MachineFamily:
    """The GKE machine series a machine type belongs to."""
    if entry.family is None or entry.platform != "gke":
        raise KeyError(f"{entry.name} is not a GKE machine type")
    return shapes_table().machine_families[entry.family]


def zones_of(entry: Shape) -> tuple[str, ...]:
    """Zones (TPU slices, GKE machine types) or regions (Cloud Run) where Google offers the shape."""
    if entry.platform == "gke":
        return machine_family(entry).where.value
    assert entry.where is not None  # the table's validator requires it
    return entry.where.value


def gke_zones(accelerator: str) -> tuple[str, ...]:
    """Zones where GKE can place the accelerator: the union over the machine series that carry it."""
    found: dict[str, None] = {}
    for entry in shapes(platform="gke", accelerator=accelerator):
        found.update(dict.fromkeys(zones_of(entry)))
    return tuple(found)


def tpu_slices(accelerator: str | None = None) -> dict[str, int]:
    """The single-host slices of a TPU generation a queued resource can ask for, with their chips (None: of every
    generation a TPU VM rents, for a check made before the stack's generation is known)."""
    return {entry.name: entry.accelerators for entry in shapes(platform="tpu-vm", accelerator=accelerator)}


def tpu_zones(accelerator: str | None = None) -> tuple[str, ...]:
    """Zones that offer a TPU generation on a TPU VM (the union over its slices; None: over every generation)."""
    found: dict[str, None] = {}
    for entry in shapes(platform="tpu-vm", accelerator=accelerator):
        found.update(dict.fromkeys(zones_of(entry)))
    return tuple(found)


def flex_start_zones(accelerator: str | None = None) -> tuple[str, ...]:
    """Zones where Google publishes flex-start for a TPU generation's slices (None: for any generation's)."""
    found: dict[str, None] = {}
    for entry in shapes(platform="tpu-vm", accelerator=accelerator):
        if entry.flex_start_zones is not None:
            found.update(dict.fromkeys(entry.flex_start_zones.value))
    return tuple(found)


def tier_zones(accelerator: str, tier: str) -> tuple[str, ...]:
    """Where a TPU VM of the generation can be asked for on a tier: flex-start only in its published zones,
    spot and guaranteed wherever the generation is offered."""
    return flex_start_zones(accelerator) if tier == "flex-start" else tpu_zones(accelerator)


def short_name(accelerator: str) -> str:
    """How messages name an accelerator (`TPU v6e`; see AcceleratorFacts.short_name)."""
    return accelerator_facts(accelerator).short_name


def quota_words(accelerator: str) -> tuple[str, ...]:
    """Words that name a TPU VM slice's Cloud TPU API quotas, which Google names per generation."""
    words: dict[str, None] = {}
    for entry in shapes(accelerator=accelerator):
        words.update(dict.fromkeys(entry.quota_match))
    return tuple(words)


def _choices(names: tuple[str, ...]) -> str:
    """Names as pydantic words a choice among literals: `'a', 'b' or 'c'`."""
    quoted = [f"'{name}'" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class Accelerator(str):
    """An accelerator a stack can name: a key of the shapes table that some shape rents, checked when made.

    Why a checked name, not an enum: the accelerators are data (a new chip is a table entry), and no code may
    branch on a named one; it reads the chip's or the shape's facts instead. One instance per name, so equal
    names are also the same object; a stack file's `accelerator` validates through here.
    """

    __slots__ = ()
    _made: ClassVar[dict[str, Accelerator]] = {}

    def __new__(cls, name: str) -> Accelerator:
        made = cls._made.get(name)
        if made is not None:
            return made
        allowed = rentable_accelerators()
        if name not in allowed:
            raise ValueError(f"{name!r} is not an accelerator a shape rents; allowed: {', '.join(allowed)}")
        made = cls._made[name] = super().__new__(cls, name)
        return made

    @classmethod
    def every(cls) -> tuple[Accelerator, ...]:
        """Every accelerator a stack can name, in the table's order."""
        return tuple(cls(name) for name in rentable_accelerators())

    @classmethod
    def choices(cls) -> str:
        """The names as a refusal lists them (`'a', 'b' or 'c'`)."""
        return _choices(rentable_accelerators())

    @classmethod
    def _validated(cls, value: str) -> Accelerator:
        if value not in rentable_accelerators():
            raise PydanticCustomError("enum", "Input should be {expected}", {"expected": cls.choices()})
        return cls(value)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:  # noqa: ANN401 - pydantic's hook signature
        """A stack file writes a plain string; it is checked against the table and serialised back as one."""
        return core_schema.no_info_after_validator_function(
            cls._validated, core_schema.str_schema(), serialization=core_schema.to_string_ser_schema()
        )


@dataclass(frozen=True)
class ResolvedShape:
    """One shape resolved once: the table's entry, its chip and (GKE) its machine series, read as one object.

    Why one object: a stack rents exactly one shape, and every layer (settings, rules, components, the planner,
    pricing, preflight, the advisor) asks the same few facts of it; each used to keep its own view of the table
    (a Cloud Run GPU, a TPU chip, a node shape, a matrix shape). Readers carry this and branch on its facts
    (family, interconnect, limits), never on a named accelerator.
    """

    entry: Shape
    chip: AcceleratorFacts
    series: MachineFamily | None = None

    # What it is.
    @property
    def name(self) -> str:
        """The shape's key: a Cloud Run GPU (`l4`), a TPU slice (`v6e-4`) or a GKE machine type."""
        return self.entry.name

    @property
    def platform(self) -> Platform:
        return self.entry.platform

    @property
    def accelerator(self) -> Accelerator:
        return Accelerator(self.entry.accelerator)

    @property
    def family(self) -> Family:
        """gpu or tpu: what the planner, the KV layout and the image follow."""
        return self.chip.family

    @property
    def is_tpu(self) -> bool:
        return self.chip.family == "tpu"

    @property
    def display_name(self) -> str:
        return self.chip.display_name

    @property
    def short_name(self) -> str:
        """How messages name the shape's chip (`TPU v6e`)."""
        return self.chip.short_name

    # The chips.
    @property
    def chips(self) -> int:
        """Accelerators per instance, node or slice."""
        return self.entry.accelerators

    @property
    def memory_gib(self) -> float:
        """Memory per chip the planner counts, GiB."""
        return self.chip.memory_gib

    @property
    def memory_bandwidth(self) -> float:
        """Bytes per second per chip."""
        return self.chip.memory_bandwidth

    @property
    def peak_dense_bf16_flops(self) -> float | None:
        return self.chip.peak_dense_bf16_flops

    @property
    def interconnect(self) -> InterconnectFact | None:
        return self.chip.interconnect

    # The host.
    @property
    def host_vcpu(self) -> int:
        """vCPU of the machine type, or Cloud Run's minimum for the GPU (the table states it for both)."""
        if self.entry.host_vcpu is None:
            raise KeyError(f"{self.name}: serving/data/shapes.json states no host vCPU for it")
        return self.entry.host_vcpu

    @property
    def host_memory_gib(self) -> float:
        """Memory of the machine type, or Cloud Run's minimum for the GPU, GiB."""
        if self.entry.host_memory_gib is None:
            raise KeyError(f"{self.name}: serving/data/shapes.json states no host memory for it")
        return self.entry.host_memory_gib

    @property
    def host_confirmed(self) -> bool:
        """False where a GKE series' host figures were not confirmed at Google's table."""
        return True if self.series is None else self.series.host_source.confirmed

    # Where and on what terms.
    @property
    def zones(self) -> tuple[str, ...]:
        """Zones (TPU slices, GKE machine types) or regions (Cloud Run) where Google offers the shape."""
        return zones_of(self.entry)

    @property
    def topology(self) -> str | None:
        """A TPU slice's topology (`2x2`); None for a GPU."""
        return self.entry.topology

    @property
    def runtime_version(self) -> str | None:
        """The TPU VM runtime image; None for a GPU or a TPU sold through GKE only."""
        return None if self.chip.runtime_version is None else self.chip.runtime_version.value

    @property
    def tpu_vm_runtime(self) -> str:
        """The runtime a TPU VM of this chip boots; a chip with none is refused here rather than sent to the
        queued-resource API without one."""
        if self.runtime_version is None:
            raise ValueError(f"{self.display_name} has no TPU VM runtime: it is served on GKE only")
        return self.runtime_version

    @property
    def provisioning(self) -> tuple[str, ...]:
        """Provisioning models the shape can be rented on (a GKE shape: its series')."""
        return self.series.provisioning if self.series is not None else self.entry.provisioning

    @property
    def price_key(self) -> str | None:
        return self.series.price_key if self.series is not None else self.entry.price_key

    # GKE: the labels its nodes carry.
    @property
    def gke_accelerator(self) -> str:
        """GKE's accelerator label value on the node (nvidia-l4, tpu-v6e-slice)."""
        if self.series is None:
            raise KeyError(f"{self.name} is not a GKE machine type")
        return self.series.gke_accelerator

    # Cloud Run: the instance.
    @property
    def cloud_run_selector(self) -> str:
        """Cloud Run's `template.node_selector.accelerator` value."""
        if "accelerator" not in self.entry.node_selector:
            raise KeyError(f"{self.name} is not a Cloud Run GPU")
        return self.entry.node_selector["accelerator"]

    @property
    def deployed_size(self) -> DeployedSize:
        """The Cloud Run instance a stack deploys the GPU at."""
        if self.entry.deployed_size is None:
            raise KeyError(f"{self.name} is not a Cloud Run GPU")
        return self.entry.deployed_size

    @property
    def instance_maximum(self) -> InstanceMaximum:
        """The largest Cloud Run instance a service with the GPU may have."""
        if self.entry.instance_maximum is None:
            raise KeyError(f"{self.name} is not a Cloud Run GPU")
        return self.entry.instance_maximum

    # GKE: what a pod may ask of a node, and the terms its series is rented on.
    @property
    def allocatable_memory_gib(self) -> float:
        """GKE: the memory of one node a pod can request. GKE keeps a share for the kubelet and system daemons
        (25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above 128 GiB;
        https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes) and 100 MiB for eviction."""
        if self.series is None:
            raise KeyError(f"{self.name} is not a GKE machine type")
        memory = total = self.host_memory_gib
        reserved = 0.0
        for size, share in ((4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06)):
            step = min(memory, size)
            reserved += step * share
            memory -= step
        reserved += max(memory, 0) * 0.02
        return total - reserved - 0.1

    @property
    def provisioning_note(self) -> str | None:
        """GKE: why the series is rented on only the provisioning models it is (a table note), if it says."""
        if self.series is None or self.series.provisioning_note is None:
            return None
        return self.series.provisioning_note.value

    def __hash__(self) -> int:
        """A shape is its name (``resolved`` makes one per name), so it keys caches and sets; the table's entries
        hold dicts and cannot be hashed field by field."""
        return hash(self.name)

    # TPU VM: where flex-start is published.
    @property
    def flex_start_zones(self) -> tuple[str, ...]:
        """Zones where Google publishes flex-start for a TPU VM slice; empty where it publishes none (a GPU, a
        GKE machine type: its series' provisioning says whether flex-start is sold)."""
        return () if self.entry.flex_start_zones is None else self.entry.flex_start_zones.value


@cache
def resolved(name: str) -> ResolvedShape:
    """One shape by name, resolved with its chip and machine series; the error lists the shapes there are."""
    entry = shape(name)
    series = machine_family(entry) if entry.platform == "gke" else None
    return ResolvedShape(entry=entry, chip=accelerator_facts(entry.accelerator), series=series)


def resolved_shapes(*, platform: Platform | None = None, accelerator: str | None = None) -> list[ResolvedShape]:
    """Every shape, or those of one platform and/or accelerator, resolved, in the table's order."""
    return [resolved(entry.name) for entry in shapes(platform=platform, accelerator=accelerator)]


def the_cloud_run_shape(accelerator: str) -> ResolvedShape:
    """The Cloud Run shape of a GPU (Cloud Run attaches one GPU of a kind: one shape per accelerator)."""
    found = resolved_shapes(platform="cloud-run", accelerator=accelerator)
    if not found:
        offered = ", ".join(entry.accelerator for entry in shapes(platform="cloud-run"))
        raise KeyError(
            f"{accelerator!r}: Cloud Run offers no shape of it in serving/data/shapes.json; allowed: {offered}"
        )
    return found[0]
