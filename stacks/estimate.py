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
from serving.latency import AtLoad, Replica, Requests, at_rate, with_users
from serving.model_cost import model_cost
from serving.planner import KvLayout
from serving.shapes import accelerator_facts
from serving.shapes import shape as table_shape
from serving.speculation import Counters, speculation_for
from serving.speed_facts import fitted_efficiency, hardware_for

# vLLM 0.32's --max-num-seqs default: the batch cap when the KV cache holds more.
DEFAULT_MAX_NUM_SEQS = 256
# Prompts from this length on are "long prompts" in the stated errors (benchmarks/writeup_figures.py KINDS).
LONG_PROMPT = 1024


def host_vcpus_of(shape_name: str) -> int | None:
    """The host vCPUs a replica on this shape has (which tokenise its prompts): the Cloud Run instance a stack
    deploys, a GKE machine type's or a TPU VM's host (serving/data/shapes.json); None when the table has none."""
    entry = table_shape(shape_name)
    if entry.deployed_size is not None:
        return entry.deployed_size.vcpu
    return entry.host_vcpu


def batched_tokens(accelerator: str) -> int:
    """vLLM 0.32's default --max-num-batched-tokens for the accelerator (serving/shapes.py)."""
    return accelerator_facts(accelerator).default_batched_tokens


def replica_of(
    model: CatalogModel,
    variant: str,
    accelerator: str,
    chips: int,
    *,
    batch_cap: int,
    kv_cache_dtype: str = "fp8",
    client: bool = True,
    speculative_tokens: int = 0,
    counters: Counters | None = None,
    host_vcpus: int | None = None,
    kv_sequences: float | None = None,
) -> Replica:
    """One vLLM server of ``variant`` over ``chips`` of ``accelerator`` (tensor parallel), at most ``batch_cap``
    sequences (capped at vLLM's default --max-num-seqs), at the fitted efficiencies; ``client`` False leaves out
    the time outside the server; ``speculative_tokens`` > 0 drafts that many tokens a step with the MTP drafter
    the catalog pairs with the variant (at the acceptance ``counters`` measured, else the default for the target,
    serving/data/mtp-acceptance.json);
    ``host_vcpus`` the shape's host CPUs; ``kv_sequences`` how many requests of the workload's size the KV cache
    holds (what the prefix cache's working set competes for; None: ``batch_cap``)."""
    hardware = hardware_for(accelerator, chips, host_vcpus=host_vcpus)
    layout = KvLayout.TPU if accelerator_facts(accelerator).family == "tpu" else KvLayout.VLLM_HYBRID
    cost = model_cost(model, variant, kv_cache_dtype=kv_cache_dtype, tensor_parallel=chips, layout=layout)
    speculation = (
        speculation_for(
            model,
            variant,
            speculative_tokens,
            kv_cache_dtype=kv_cache_dtype,
            tensor_parallel=chips,
            counters=counters,
        )
        if speculative_tokens
        else None
    )
    return Replica(
        cost,
        hardware,
        fitted_efficiency().efficiency(hardware, client=client),
        batch_cap=max(1, min(batch_cap, DEFAULT_MAX_NUM_SEQS)),
        batched_tokens=batched_tokens(accelerator),
        speculation=speculation,
        kv_sequences=kv_sequences,
    )


def basis_of(replica: Replica) -> str:
    """Where an estimate comes from: the formulas, the hardware facts and the fitted factors, in one line."""
    hardware, efficiency = replica.hardware, replica.efficiency
    link = hardware.interconnect
    over = "" if hardware.chips == 1 or link is None else f", all-reduces over {link.kind}"
    speculation = replica.speculation
    mtp = (
        ""
        if speculation is None
        else f"; MTP-{speculation.draft_tokens} at {speculation.acceptance:.2f} acceptance a position "
        f"({speculation.tokens_per_step():.2f} tokens a step; {speculation.source[:80]})"
    )
    # Hardware's peaks are per chip already (the model multiplies them by the chips).
    flops, bandwidth = hardware.peak_flops / 1e12, hardware.bandwidth / 1e9
    chip = f"{flops:,.0f} TFLOP/s bf16 and {bandwidth:,.0f}"
    factors = (
        f"{hardware.family.upper()} compute x{efficiency.compute:.3f}, bandwidth x{efficiency.bandwidth:.3f}, "
        f"{efficiency.step_s * 1000:.2f} ms a forward pass, host {efficiency.host_s_per_token * 1e6:.1f} us a prompt "
        f"token, client {efficiency.client_s * 1000:.0f} ms"
    )
    return (
        f"latency model, docs/advisor.md ({hardware.name}: {chip} GB/s a chip{over}; {factors} "
        f"(serving/data/latency-efficiency.json, fitted {fitted_efficiency().fitted}); "
        f"batch cap {replica.batch_cap}, {replica.batched_tokens} tokens a step{mtp})"
    )


def kind_of_workload(prompt_tokens: int) -> str:
    """The kind of workload an estimate's stated error is measured on (benchmarks/writeup_figures.py's kinds)."""
    return "long prompts" if prompt_tokens >= LONG_PROMPT else "short prompts"


def stated_error(replica: Replica, prompt_tokens: int) -> str:
    """The error that applies to this estimate: the fit's on this family and kind of workload."""
    return fitted_efficiency().stated_error(replica.hardware.family, kind_of_workload(prompt_tokens))


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
    reused_tokens: int = 0,
    distinct_prefixes: int = 1,
) -> Estimate:
    """The replica at ``users`` concurrent users (closed loop) or ``rate`` requests/s (Poisson), each prompt's first
    ``reused_tokens`` a prefix another request sent (``distinct_prefixes`` of them in play)."""
    prompt = max(prompt_tokens, 1)
    requests = Requests(prompt, max(output_tokens, 1), min(max(reused_tokens, 0), prompt), max(distinct_prefixes, 1))
    if users is not None:
        at = with_users(replica, requests, users)
    elif rate is not None:
        at = at_rate(replica, requests, rate)
    else:
        raise ValueError("estimate needs users or rate")
    return Estimate(at, basis_of(replica), stated_error(replica, prompt))
