"""Will catalog model X, variant Y fit accelerator shape Z, and what would it cost? Without a stack file.

Why through the stack loader: the answer must be the one a stack would get. Each combination is written as
the smallest stack that serves it (the accelerator's minimum Cloud Run instance, or one TPU node of the
slice) and loaded by `stacks.loading.load_stack`, so every refusal a stack would meet (precision, chips, memory,
with numbers) is the matrix's "why not", and every fit is the capacity planner's plan. On top of the plan it
adds the physical ceilings, by the latency model's formulas at every peak reached (serving/latency.py):
compute-bound prefill and bandwidth-bound decode (each step reads the weights a token multiplies once, the
touched experts of a MoE and every resident sequence's KV cache), and the price per hour of the shape. They
are CEILINGS, not measurements: `verify bench` measures.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

from serving.accelerators import Accelerator
from serving.catalog import CatalogModel, catalog
from serving.cloud_run_limits import DEPLOYED_SIZE
from serving.latency import decode_ceiling_tokens_per_s, model_cost, prefill_ceiling_tokens_per_s
from serving.planner import KvLayout
from serving.pricing import CloudRunShape, GkeShape, TpuShape, minimum_shape
from serving.speed_facts import MissingPeakError, hardware_for
from serving.tpu_offers import V6E_CHIPS
from stacks.capacity import TEXT_ONLY_FLAG
from stacks.loading import StackConfigError, load_stack

# A commit id for the synthetic stacks: the plan does not depend on which commit is served. Commit-shaped and
# pinned by no catalog repo (an all-zero one is refused as a placeholder: stacks/revisions.py).
_ANY_COMMIT = "5e1f0c2d9a7b4e83c6d0f1a2b9e8c7d6a5f4e3b2"
# vLLM's own cap on the running batch when a stack sets none (--max-num-seqs default, vLLM 0.32).
DECODE_BATCH_CAP = 256


@dataclass(frozen=True)
class Shape:
    """An accelerator shape the matrix compares: one Cloud Run GPU, or one TPU v6e slice."""

    name: str
    accelerator: Accelerator

    @property
    def chips(self) -> int:
        return V6E_CHIPS.get(self.name, 1)


SHAPES: tuple[Shape, ...] = (
    Shape("l4", Accelerator.NVIDIA_L4),
    Shape("rtx-pro-6000", Accelerator.NVIDIA_RTX_PRO_6000),
    Shape("v6e-1", Accelerator.TPU_V6E),
    Shape("v6e-4", Accelerator.TPU_V6E),
    Shape("v6e-8", Accelerator.TPU_V6E),
)


def shape_named(name: str) -> Shape:
    for shape in SHAPES:
        if shape.name == name:
            return shape
    raise KeyError(f"{name!r} is not a shape; allowed: {', '.join(s.name for s in SHAPES)}")


@dataclass(frozen=True)
class Workload:
    """What the comparison is for: request context (prompt) and output tokens, and the engine settings."""

    context_tokens: int = 8192
    output_tokens: int = 1024
    kv_cache_dtype: str = "fp8"
    gpu_memory_utilization: float = 0.90
    text_only: bool = False

    @property
    def sequence_tokens(self) -> int:
        return self.context_tokens + self.output_tokens

    def describe(self) -> str:
        text = " text-only (--language-model-only)," if self.text_only else ""
        return (
            f"requests of {self.context_tokens:,} context + {self.output_tokens:,} output tokens,{text} "
            f"kv-cache {self.kv_cache_dtype}, gpu-memory-utilization {self.gpu_memory_utilization}"
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
            "warnings": list(self.warnings),
            "vllmArgs": list(self.vllm_args),
        }


def stack_config(model: str, variant: str, shape: Shape, workload: Workload) -> dict[str, str]:
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
    if shape.accelerator is Accelerator.TPU_V6E:
        config["region"] = "us-east5"
        config["tpu"] = {"zone": "us-east5-a", "acceleratorType": shape.name, "provisioning": {"model": "spot"}}
    else:
        instance = _billing(shape)
        assert isinstance(instance, CloudRunShape)
        config["region"] = instance.region
        config["cloudRun"] = {"cpu": instance.cpu, "memoryGib": instance.memory_gib}
        # The smallest instance the GPU allows, all of it vLLM's: the metrics sidecar (a stack's choice, not the
        # model's) would need a larger one (serving/cloud_run_containers.py).
        config["monitoring"] = {"enabled": False}
    return {
        f"gemma-serving:{key}": value if isinstance(value, str) else json.dumps(value) for key, value in config.items()
    }


def fit(model: CatalogModel, variant: str, shape: Shape, workload: Workload) -> Fit:
    """The answer for one combination (a refusal is an answer: fits False, why_not the loader's message)."""
    values = stack_config(model.id, variant, shape, workload)
    try:
        stack = load_stack(values)
    except StackConfigError as error:
        reason = "; ".join(problem.removeprefix("gemma-serving:") for problem in error.problems)
        return _refused(model, variant, shape, reason)
    settings, capacity = stack.settings, stack.capacity
    plan = capacity.plan
    assert plan is not None  # a catalog checkpoint always has a profile
    price = settings.billing_shape().hourly_price()
    usd_per_hour = price.usd_per_hour
    sequences = math.floor(plan.max_concurrency)
    prefill, decode, batch = ceilings(model, variant, shape, workload, sequences)
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
    )


def _refused(model: CatalogModel, variant: str, shape: Shape, reason: str) -> Fit:
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
    )


def _billing(shape: Shape) -> CloudRunShape | TpuShape | GkeShape:
    """What the shape bills: a v6e slice at spot rates in us-east5, or the Cloud Run instance a stack deploys
    with that GPU (serving.cloud_run_limits.DEPLOYED_SIZE, the shipped stacks' size) in us-central1, where both
    GPUs are offered: the price `make preview` prints for such a stack, and `gemma-verify advise` uses."""
    if shape.accelerator is Accelerator.TPU_V6E:
        return TpuShape(accelerator_type=shape.name, chips=shape.chips, provisioning_model="spot", region="us-east5")
    cpu, memory = DEPLOYED_SIZE[shape.accelerator]
    return minimum_shape(shape.accelerator).model_copy(
        update={"region": "us-central1", "cpu": cpu, "memory_gib": memory}
    )


def _price(shape: Shape) -> float | None:
    return _billing(shape).hourly_price().usd_per_hour


def _price_basis(shape: Shape) -> str:
    return _billing(shape).hourly_price().basis


def ceilings(
    model: CatalogModel, variant: str, shape: Shape, workload: Workload, sequences: int
) -> tuple[float | None, float | None, int | None]:
    """(prefill tokens/s, decode tokens/s, decode batch): what peak FLOP/s and memory bandwidth allow at most, by
    the latency model's own formulas at every peak reached (serving/latency.py, docs/advisor.md): prefill the
    prompt's FLOPs (attention within each window included), decode a step of B sequences reading the weights a
    token multiplies once (a MoE the experts its B tokens touch) and each sequence's KV."""
    if sequences < 1:
        return None, None, None
    try:
        hardware = hardware_for(shape.accelerator, shape.chips)
    except MissingPeakError:
        return None, None, None
    layout = KvLayout.TPU if shape.accelerator is Accelerator.TPU_V6E else KvLayout.VLLM_HYBRID
    cost = model_cost(
        model, variant, kv_cache_dtype=workload.kv_cache_dtype, tensor_parallel=shape.chips, layout=layout
    )
    batch = min(sequences, DECODE_BATCH_CAP)
    prefill = prefill_ceiling_tokens_per_s(cost, hardware, workload.context_tokens)
    decode = decode_ceiling_tokens_per_s(cost, hardware, batch, workload.context_tokens + workload.output_tokens / 2)
    return prefill, decode, batch


def matrix(workload: Workload, *, models: list[str] | None = None, shapes: list[str] | None = None) -> list[Fit]:
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
