"""Will catalog model X, variant Y fit accelerator shape Z, and what would it cost? Without a stack file.

Why through the stack loader: the answer must be the one a stack would get. Each combination is written as
the smallest stack that serves it (the accelerator's Cloud Run instance, one TPU node of the slice, or one
GKE node of the machine type with the smallest tensor-parallel size that fits) and loaded by
`stacks.loading.load_stack`, so every refusal a stack would meet (precision, chips, memory, with numbers) is
the matrix's "why not", and every fit is the capacity planner's plan. On top of the plan it
adds the physical ceilings, by the latency model's formulas at every peak reached (serving/latency.py):
compute-bound prefill and bandwidth-bound decode (each step reads the weights a token multiplies once, the
touched experts of a MoE and every resident sequence's KV cache), and the price per hour of the shape. They
are CEILINGS, not measurements: `verify bench` measures.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Literal

from serving.catalog import CatalogModel, catalog
from serving.gcp_names import region_of
from serving.latency import decode_ceiling_tokens_per_s, model_cost, prefill_ceiling_tokens_per_s
from serving.planner import KvLayout
from serving.pricing import Billing, GkeBilling, TpuBilling, deployed_cloud_run_billing
from serving.shapes import ResolvedShape, resolved_shapes
from serving.speed_facts import MissingPeakError, hardware_for
from serving.units import GIB
from stacks.capacity import TEXT_ONLY_FLAG, StackCapacity
from stacks.loading import StackConfigError, load_stack
from stacks.settings import StackSettings

# A commit id for the synthetic stacks: the plan does not depend on which commit is served. Commit-shaped and
# pinned by no catalog repo (an all-zero one is refused as a placeholder: stacks/revisions.py).
_ANY_COMMIT = "5e1f0c2d9a7b4e83c6d0f1a2b9e8c7d6a5f4e3b2"
# vLLM's own cap on the running batch when a stack sets none (--max-num-seqs default, vLLM 0.32).
DECODE_BATCH_CAP = 256


def _matrix_shapes() -> tuple[ResolvedShape, ...]:
    """Every shape of the table, less repeats: a GKE TPU machine type with a TPU VM slice of the same chips is
    that slice over again (one sold through GKE only is kept), and of the GKE machine types with the same GPUs
    only one is compared: the smallest whose pod memory can stage any checkpoint those GPUs hold (the rest differ
    in host CPU and memory, which the plan checks but the matrix does not rank)."""
    chosen: dict[tuple[str, int], ResolvedShape] = {}
    slices = {(shape.accelerator, shape.chips) for shape in resolved_shapes(platform="tpu-vm")}
    for shape in resolved_shapes(platform="gke"):
        key = (shape.accelerator, shape.chips)
        if shape.is_tpu:
            if key not in slices:  # a TPU sold through GKE only: its machine type is the one way to rent it
                chosen[key] = shape
            continue
        if key not in chosen or (_holds(shape) and not _holds(chosen[key])):
            chosen[key] = shape
    kept = set(chosen.values())
    return tuple(shape for shape in resolved_shapes() if shape.platform != "gke" or shape in kept)


def _holds(machine: ResolvedShape) -> bool:
    """Whether the machine's pod memory (80% of allocatable) can stage its GPUs' worth of weights."""
    pod_gib = int(machine.allocatable_memory_gib * 0.8)  # what stacks/gke.py gives the pod by default
    return pod_gib >= machine.chips * machine.memory_gib


SHAPES: tuple[ResolvedShape, ...] = _matrix_shapes()


def shape_named(name: str) -> ResolvedShape:
    for shape in SHAPES:
        if shape.name == name:
            return shape
    raise KeyError(f"{name!r} is not a shape; allowed: {', '.join(s.name for s in SHAPES)}")


@dataclass(frozen=True)
class Workload:
    """What the comparison is for: request context (prompt) and output tokens, how many of each prompt's tokens
    another request already sent (the prefix cache can serve them: 0 for unknown traffic), and the engine
    settings."""

    context_tokens: int = 8192
    output_tokens: int = 1024
    kv_cache_dtype: str = "fp8"
    gpu_memory_utilization: float = 0.90
    text_only: bool = False
    reused_tokens: int = 0
    distinct_prefixes: int = 1
    # LoRA adapters the deployment serves, by rank (empty: none). Each is declared in the synthetic stack, so the
    # loader's refusals (a platform that serves none, a rank vLLM is not started for) and the capacity plan's LoRA
    # reservation are the answer's, as they would be a stack's (docs/adapters.md).
    adapter_ranks: tuple[int, ...] = ()

    @property
    def sequence_tokens(self) -> int:
        return self.context_tokens + self.output_tokens

    def describe(self) -> str:
        text = " text-only (--language-model-only)," if self.text_only else ""
        reuse = (
            f" {self.reused_tokens:,} of each prompt's tokens reused ({self.distinct_prefixes} distinct prefixes),"
            if self.reused_tokens
            else ""
        )
        ranks = ", ".join(map(str, sorted(set(self.adapter_ranks))))
        adapters = f" {len(self.adapter_ranks)} LoRA adapter(s) of rank {ranks}," if self.adapter_ranks else ""
        return (
            f"requests of {self.context_tokens:,} context + {self.output_tokens:,} output tokens,{reuse}{text}"
            f"{adapters} kv-cache {self.kv_cache_dtype}, gpu-memory-utilization {self.gpu_memory_utilization}"
        )


@dataclass(frozen=True)
class Fit:
    """One combination's answer: fits or why not, the plan's figures, price and ceilings."""

    model: str
    variant: str
    shape: str
    fits: bool
    why_not: str | None
    weight_bytes: int | None
    kv_tokens: int | None
    sequences: int | None
    usd_per_hour: float | None
    price_basis: str
    prefill_ceiling_tokens_per_s: float | None
    decode_ceiling_tokens_per_s: float | None
    decode_batch: int | None
    usd_per_million_output_tokens_at_ceiling: float | None
    warnings: tuple[str, ...]
    vllm_args: tuple[str, ...]
    # GKE machine types: the tensor-parallel size chosen (the smallest that fits) and the replicas a node holds.
    tensor_parallel: int = 1
    replicas_per_node: int = 1

    def as_dict(self) -> dict[str, object]:
        def rounded(value: float | None, digits: int = 1) -> float | None:
            return None if value is None else round(value, digits)

        return {
            "model": self.model,
            "variant": self.variant,
            "shape": self.shape,
            "fits": self.fits,
            "whyNot": self.why_not,
            "weightBytes": self.weight_bytes,
            "kvTokens": self.kv_tokens,
            "sequences": self.sequences,
            "usdPerHour": rounded(self.usd_per_hour, 3),
            "priceBasis": self.price_basis,
            "ceilings": {
                "note": "physical ceilings from peak FLOP/s and memory bandwidth, not measurements",
                "prefillTokensPerS": rounded(self.prefill_ceiling_tokens_per_s),
                "decodeTokensPerS": rounded(self.decode_ceiling_tokens_per_s),
                "decodeBatch": self.decode_batch,
                "usdPerMillionOutputTokens": rounded(self.usd_per_million_output_tokens_at_ceiling, 3),
            },
            "tensorParallel": self.tensor_parallel,
            "replicasPerNode": self.replicas_per_node,
            "warnings": list(self.warnings),
            "vllmArgs": list(self.vllm_args),
        }


def stack_config(
    model: str, variant: str, shape: ResolvedShape, workload: Workload, *, tensor_parallel: int | None = None
) -> dict[str, str]:
    """The smallest stack serving this combination, as the flat Pulumi config a stack file would give."""
    vllm: dict[str, object] = {
        "maxModelLen": workload.sequence_tokens,
        "maxNumSeqs": 1,
        "kvCacheDtype": workload.kv_cache_dtype,
        "gpuMemoryUtilization": workload.gpu_memory_utilization,
    }
    if workload.text_only:
        vllm["extraArgs"] = [TEXT_ONLY_FLAG]
    config: dict[str, object] = {
        "accelerator": str(shape.accelerator),
        "model": {"id": model, "variant": variant, "revision": _ANY_COMMIT},
        "vllm": vllm,
    }
    if workload.adapter_ranks:
        config["adapters"] = _synthetic_adapters(model, workload.adapter_ranks)
    billed = _billing(shape)
    if isinstance(billed, TpuBilling):
        config["region"] = billed.region
        config["tpu"] = {"zone": _TPU_ZONE, "acceleratorType": shape.name, "provisioning": {"model": "spot"}}
    elif isinstance(billed, GkeBilling):
        vllm["tensorParallelSize"] = tensor_parallel or shape.chips
        config["region"] = billed.region
        config["gke"] = {
            "nodePool": {
                "machineType": shape.name,
                "zones": [_gke_zone(shape)],
                "provisioning": billed.provisioning_model,
                "maxNodes": 1,
            },
            "replicas": {"min": 1, "max": 1},
        }
    else:
        config["region"] = billed.region
        config["cloudRun"] = {"cpu": billed.cpu, "memoryGib": billed.memory_gib}
        # The smallest instance the GPU allows, all of it vLLM's: the metrics sidecar (a stack's choice, not the
        # model's) would need a larger one (serving/cloud_run_containers.py).
        config["monitoring"] = {"enabled": False}
    return {
        f"gemma-serving:{key}": value if isinstance(value, str) else json.dumps(value) for key, value in config.items()
    }


# Where the synthetic stacks' adapters come from: a name only the loader reads (nothing is imported).
_ADAPTER_BUCKET = "gs://fit-adapters"


def _synthetic_adapters(model: str, ranks: tuple[int, ...]) -> list[dict[str, object]]:
    """The `adapters:` a stack serving adapters of these ranks on this model declares: trained on the model,
    adapting every linear layer (what vLLM reserves slots for anyway, serving/lora.py), one version each."""
    return [
        {
            "name": f"adapter-{index}",
            "source": {"gcs": f"{_ADAPTER_BUCKET}/adapter-{index}"},
            "base": model,
            "rank": rank,
        }
        for index, rank in enumerate(ranks, 1)
    ]


def _tensor_parallel_sizes(
    model: CatalogModel, variant: str, shape: ResolvedShape, workload: Workload
) -> list[int | None]:
    """What to try on a GKE machine type, smallest first (the most replicas per node): the divisors of its GPUs
    whose share of memory could hold the weights at all. Other shapes: their own (None)."""
    if shape.platform != "gke":
        return [None]
    weights = sum(part.bytes for part in model.variant(variant).weights.parts)
    if workload.text_only and model.towers is not None:
        weights -= model.towers.weight_bytes
    per_gpu = shape.memory_gib * GIB * workload.gpu_memory_utilization
    divisors = [size for size in range(1, shape.chips + 1) if shape.chips % size == 0]
    return [*(size for size in divisors if weights < size * per_gpu)] or [shape.chips]


def fit(model: CatalogModel, variant: str, shape: ResolvedShape, workload: Workload) -> Fit:
    """The answer for one combination (a refusal is an answer: fits False, why_not the loader's message). On a
    GKE machine type the smallest tensor-parallel size that fits is chosen (node GPUs / TP replicas per node)."""
    reason = ""
    for tensor_parallel in _tensor_parallel_sizes(model, variant, shape, workload):
        values = stack_config(model.id, variant, shape, workload, tensor_parallel=tensor_parallel)
        try:
            stack = load_stack(values)
        except StackConfigError as error:
            reason = "; ".join(problem.removeprefix("gemma-serving:") for problem in error.problems)
            continue
        return _fitted(model, variant, shape, workload, stack.settings, stack.capacity)
    return _refused(model, variant, shape, reason)


def _fitted(  # noqa: PLR0917 - the combination, its workload and the loaded stack
    model: CatalogModel,
    variant: str,
    shape: ResolvedShape,
    workload: Workload,
    settings: StackSettings,
    capacity: StackCapacity,
) -> Fit:
    plan = capacity.plan
    assert plan is not None  # a catalog checkpoint always has a profile
    price = settings.billing().hourly_price()
    usd_per_hour = price.usd_per_hour
    sequences = math.floor(plan.max_concurrency)
    tensor_parallel = settings.vllm.tensor_parallel_size if shape.platform == "gke" else shape.chips
    per_node = shape.chips // tensor_parallel
    prefill, decode, batch = ceilings(model, variant, shape, workload, sequences, chips=tensor_parallel)
    if prefill is not None and decode is not None:  # the node's replicas side by side
        prefill, decode = prefill * per_node, decode * per_node
    cost = None
    if usd_per_hour is not None and decode:
        cost = usd_per_hour / (decode * 3600) * 1e6
    return Fit(
        model=model.id,
        variant=variant,
        shape=shape.name,
        fits=True,
        why_not=None,
        weight_bytes=plan.weight_bytes,
        kv_tokens=plan.capacity_tokens,
        sequences=sequences,
        usd_per_hour=usd_per_hour,
        price_basis=price.basis,
        prefill_ceiling_tokens_per_s=prefill,
        decode_ceiling_tokens_per_s=decode,
        decode_batch=batch,
        usd_per_million_output_tokens_at_ceiling=cost,
        warnings=tuple(capacity.warnings),
        vllm_args=tuple(settings.serve_args()[1:]),
        tensor_parallel=tensor_parallel,
        replicas_per_node=per_node,
    )


def _refused(model: CatalogModel, variant: str, shape: ResolvedShape, reason: str) -> Fit:
    return Fit(
        model=model.id,
        variant=variant,
        shape=shape.name,
        fits=False,
        why_not=reason,
        weight_bytes=None,
        kv_tokens=None,
        sequences=None,
        usd_per_hour=_price(shape),
        price_basis=_price_basis(shape),
        prefill_ceiling_tokens_per_s=None,
        decode_ceiling_tokens_per_s=None,
        decode_batch=None,
        usd_per_million_output_tokens_at_ceiling=None,
        warnings=(),
        vllm_args=(),
        tensor_parallel=shape.chips,
    )


# Where the matrix prices shapes: TPU slices at spot rates in us-east5 (a v6e zone with a recorded spot rate),
# GPUs in us-central1, where every GPU of the table is offered.
_TPU_ZONE = "us-east5-a"
_GPU_REGION = "us-central1"


def _gke_zone(shape: ResolvedShape) -> str:
    zones = shape.zones
    return next((zone for zone in zones if region_of(zone) == _GPU_REGION), zones[0])


@functools.cache
def _billing(shape: ResolvedShape) -> Billing:
    """What the shape bills: a TPU slice at spot rates in us-east5, the Cloud Run instance a stack deploys with
    that GPU (the shapes table's deployedSize, the shipped stacks' size) in us-central1 (the price `make
    preview` prints for such a stack, and `gemma-verify advise` uses), or one GKE node of the machine type
    there, on demand where its series offers it (else the first provisioning model it does)."""
    if shape.platform == "tpu-vm":
        return TpuBilling(
            accelerator_type=shape.name, chips=shape.chips, provisioning_model="spot", region=region_of(_TPU_ZONE)
        )
    if shape.platform == "gke":
        offered = shape.provisioning
        return GkeBilling(
            machine_type=shape.name,
            accelerator=shape.accelerator,
            accelerators_per_node=shape.chips,
            provisioning_model="on-demand" if "on-demand" in offered else offered[0],  # type: ignore[arg-type]
            region=region_of(_gke_zone(shape)),
            min_nodes=1,
            max_nodes=1,
            cluster_created=False,
        )
    return deployed_cloud_run_billing(shape.accelerator, _GPU_REGION)


def _price(shape: ResolvedShape) -> float | None:
    return _billing(shape).hourly_price().usd_per_hour


def _price_basis(shape: ResolvedShape) -> str:
    return _billing(shape).hourly_price().basis


def ceilings(
    model: CatalogModel,
    variant: str,
    shape: ResolvedShape,
    workload: Workload,
    sequences: int,
    *,
    chips: int | None = None,
) -> tuple[float | None, float | None, int | None]:
    """(prefill tokens/s, decode tokens/s, decode batch): what peak FLOP/s and memory bandwidth allow at most, by
    the latency model's own formulas at every peak reached (serving/latency.py, docs/advisor.md): prefill the
    prompt's FLOPs less what the prefix cache serves at best (attention within each window included), decode a
    step of B sequences reading the weights a token multiplies once (a MoE the experts its B tokens touch) and each
    sequence's KV."""
    if sequences < 1:
        return None, None, None
    chips = chips or shape.chips  # one replica's accelerators
    try:
        hardware = hardware_for(shape.accelerator, chips)
    except MissingPeakError:
        return None, None, None
    layout = KvLayout.TPU if shape.family == "tpu" else KvLayout.VLLM_HYBRID
    cost = model_cost(model, variant, kv_cache_dtype=workload.kv_cache_dtype, tensor_parallel=chips, layout=layout)
    batch = min(sequences, DECODE_BATCH_CAP)
    # At best the prefix cache serves every reused token it can (whole hit blocks, never the last token).
    reused = min(workload.reused_tokens, workload.context_tokens - 1)
    cached = max(reused, 0) // cost.hit_block * cost.hit_block
    prefill = prefill_ceiling_tokens_per_s(cost, hardware, workload.context_tokens, cached)
    decode = decode_ceiling_tokens_per_s(cost, hardware, batch, workload.context_tokens + workload.output_tokens / 2)
    return prefill, decode, batch


def fit_matrix(workload: Workload, *, models: list[str] | None = None, shapes: list[str] | None = None) -> list[Fit]:
    """Every catalog model x variant x shape (or the ones named), one Fit each."""
    rows = []
    for model in catalog().values():
        if models and model.id not in models:
            continue
        for variant in model.variants:
            for shape in SHAPES:
                if shapes and shape.name not in shapes:
                    continue
                rows.append(fit(model, variant, shape, workload))
    return rows


Verdict = Literal["fits", "refused"]
