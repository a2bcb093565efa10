"""The latency model's estimate for one model variant on one accelerator at one load, with its basis.

Why one function for three readers: `gemma-verify advise` ranks deployments by it, `make matrix` and
`verify compare` print it beside a measured cell, and a reviewer must see the same estimate (the same
replica: model arithmetic, hardware from the shapes table, fitted efficiencies, vLLM's default token budget
per step, the batch cap) wherever it appears, with the same words for where it comes from. It lives beside
`stacks/fit.py` because vLLM's defaults per accelerator are the stack schema's (stacks/capacity.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from serving.catalog import CatalogModel
from serving.latency import AtLoad, Replica, Requests, at_rate, model_cost, with_users
from serving.planner import KvLayout
from serving.shapes import accelerator_facts
from serving.speed_facts import fitted_efficiency, hardware_for
from stacks.capacity import (
    LARGE_GPU_BATCHED_TOKENS,
    LARGE_GPU_MIN_GIB,
    SMALL_GPU_BATCHED_TOKENS,
    TPU_V6E_BATCHED_TOKENS,
)

# vLLM 0.32's --max-num-seqs default: the batch cap when the KV cache holds more.
DEFAULT_MAX_NUM_SEQS = 256


def batched_tokens(accelerator: str) -> int:
    """vLLM 0.32's default --max-num-batched-tokens for the accelerator (stacks/capacity.py)."""
    facts = accelerator_facts(accelerator)
    if facts.family == "tpu":
        return TPU_V6E_BATCHED_TOKENS
    return LARGE_GPU_BATCHED_TOKENS if facts.memory_gib >= LARGE_GPU_MIN_GIB else SMALL_GPU_BATCHED_TOKENS


def replica_of(
    model: CatalogModel,
    variant: str,
    accelerator: str,
    chips: int,
    *,
    batch_cap: int,
    kv_cache_dtype: str = "fp8",
    client: bool = True,
) -> Replica:
    """One vLLM server of ``variant`` over ``chips`` of ``accelerator`` (tensor parallel), at most ``batch_cap``
    sequences (capped at vLLM's default --max-num-seqs), at the fitted efficiencies; ``client`` False leaves out
    the time outside the engine."""
    hardware = hardware_for(accelerator, chips)
    layout = KvLayout.TPU if accelerator_facts(accelerator).family == "tpu" else KvLayout.VLLM_HYBRID
    cost = model_cost(model, variant, kv_cache_dtype=kv_cache_dtype, tensor_parallel=chips, layout=layout)
    return Replica(
        cost,
        hardware,
        fitted_efficiency().efficiency(hardware, client=client),
        batch_cap=max(1, min(batch_cap, DEFAULT_MAX_NUM_SEQS)),
        batched_tokens=batched_tokens(accelerator),
    )


def basis_of(replica: Replica) -> str:
    """Where an estimate comes from: the formulas, the hardware facts and the fitted factors, in one line."""
    hardware, efficiency = replica.hardware, replica.efficiency
    return (
        f"latency model, docs/advisor.md ({hardware.name}: {hardware.peak_flops / hardware.chips / 1e12:,.0f} "
        f"TFLOP/s bf16 and {hardware.bandwidth / hardware.chips / 1e9:,.0f} GB/s a chip; compute "
        f"x{efficiency.compute:.3f}, bandwidth x{efficiency.bandwidth:.3f}, client {efficiency.client_s * 1000:.0f} "
        f"ms (serving/data/latency-efficiency.json, fitted {fitted_efficiency().fitted}); batch cap "
        f"{replica.batch_cap}, {replica.batched_tokens} tokens a step)"
    )


@dataclass(frozen=True)
class Estimate:
    """The model's answer at one load, where it comes from, and how far it strayed from measured figures."""

    at: AtLoad
    basis: str
    error: str

    def describe(self) -> str:
        """``TTFT mean 1,100 / p95 1,234 ms, TPOT 21.0 ms, 3.20 req/s, 512 out tok/s`` (or why there is none)."""
        if self.at.saturated:
            return f"saturated ({self.at.why})"
        return (
            f"TTFT mean {self.at.ttft_mean_s * 1000:,.0f} / p95 {self.at.ttft_p95_s * 1000:,.0f} ms, "
            f"TPOT {self.at.tpot_s * 1000:,.1f} ms, {self.at.request_rate:,.2f} req/s, "
            f"{self.at.output_tokens_per_s:,.0f} out tok/s"
        )


def estimate(
    replica: Replica,
    *,
    prompt_tokens: int,
    output_tokens: int,
    users: float | None = None,
    rate: float | None = None,
) -> Estimate:
    """The replica at ``users`` concurrent users (closed loop) or ``rate`` requests/s (Poisson)."""
    requests = Requests(max(prompt_tokens, 1), max(output_tokens, 1))
    if users is not None:
        at = with_users(replica, requests, users)
    elif rate is not None:
        at = at_rate(replica, requests, rate)
    else:
        raise ValueError("estimate needs users or rate")
    return Estimate(at, basis_of(replica), fitted_efficiency().stated_error())
