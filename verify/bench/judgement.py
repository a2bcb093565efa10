"""What a cell's numbers mean: cost, the physical ceiling, and whether failures were the platform's.

Why these three: the hand-made sweeps reported a 16K-context throughput about 25 times what the
hardware can compute and blamed the model for Cloud Run's own 429s. A number that cannot be true
must be flagged where it is printed, and a failure must be attributed to what caused it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from serving.pricing import deployed_cloud_run_billing, hourly_price, minimum_billing, parse_billing
from serving.shapes import Accelerator, resolved_shapes
from verify.streaming import FailureKind

SECONDS_PER_HOUR = 3600.0
PER_MILLION = 1_000_000.0
# Failures Cloud Run answers itself when every admitted slot is taken.
ADMISSION_FAILURES = frozenset({FailureKind.HTTP_429.value, FailureKind.HTTP_503.value})

_PARAMS_IN_NAME = re.compile(r"(?<![a-z0-9])e?(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE)
# Mixture-of-experts names say the active parameters per token as `-A4B`; compute follows those.
_ACTIVE_PARAMS_IN_NAME = re.compile(r"(?<![a-z0-9])a(\d+(?:\.\d+)?)b(?![a-z])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class AcceleratorFacts:
    """Peak FLOP/s and hourly price of what serves the endpoint (either may be unknown), and what the
    price is of (``price_basis``: the shape, provisioning model and the rates' source)."""

    name: str | None
    peak_flops: float | None
    price_per_hour_usd: float | None
    price_basis: str | None = None
    # Accelerators serving one replica (a Cloud Run instance's GPU, a TPU node's chips); None when unknown.
    chips: int | None = None


def accelerator_facts(
    accelerator: str | None,
    *,
    count: int = 1,
    price_override: float | None = None,
    billing: object = None,
) -> AcceleratorFacts:
    """What serves the endpoint, for cost and the physical ceiling.

    ``billing`` is the stack's `billing` output: the instance or node as it is billed (GPU, CPU, memory,
    zonal redundancy; TPU chips and provisioning model), priced with serving/pricing.py exactly as the
    plan prices it. Without it (``--url``), ``accelerator`` is priced at its smallest shape and the basis
    says so. ``count`` instances or nodes serve the endpoint; ``price_override`` (``--price-per-hour``)
    replaces the price.
    """
    kind: Accelerator | None = None
    if accelerator is not None:
        try:
            kind = Accelerator(accelerator)
        except ValueError:
            allowed = ", ".join(a for a in Accelerator.every())
            raise ValueError(f"--accelerator {accelerator!r} is not one of: {allowed}") from None
    bill = None
    if billing is not None:
        try:
            bill = parse_billing(billing)
        except ValueError as exc:
            raise ValueError(f"the stack's billing output is not a billed shape: {exc}") from None
    elif kind is not None:
        # As a stack deploys it (one price per shape: the plan's, `make matrix`'s and advise's), not the
        # platform's minimum: an L4 instance below the shipped size costs less than any stack runs it at.
        rents = resolved_shapes(platform="cloud-run", accelerator=kind)
        bill = deployed_cloud_run_billing(kind, None) if rents else minimum_billing(kind)
    peak: float | None = None
    chips: int | None = None
    if kind is not None:
        # Every shape of an accelerator carries the same chip: its peak is the chip's, per chip.
        chip_peak = resolved_shapes(accelerator=kind)[0].peak_dense_bf16_flops
        chips = bill.chips_per_unit if bill is not None else 1
        if chip_peak is not None:
            peak = chip_peak * chips * count
    if price_override is not None:
        return AcceleratorFacts(accelerator, peak, price_override, "--price-per-hour", chips)
    if bill is None:
        return AcceleratorFacts(accelerator, peak, None, None, chips)
    price = hourly_price(bill)
    copies = f"{count} x " if count > 1 else ""
    where = (
        ""
        if billing is not None
        else " (no stack: as the shipped stacks deploy it; pass --stack or --price-per-hour for yours)"
    )
    if price.usd_per_hour is None:
        return AcceleratorFacts(accelerator, peak, None, f"{copies}{price.basis}{where}: {price.missing}", chips)
    basis = f"{copies}{price.basis}{where}: {price.describe()}; rates: {price.citation()} (serving/data/pricing.json)"
    return AcceleratorFacts(accelerator, peak, price.usd_per_hour * count, basis, chips)


def params_from_model_name(name: str) -> float | None:
    """Parameters computed per token, read from a served name: ``gemma-4-12b-it`` (12e9),
    ``gemma-4-E4B`` (4e9 effective), ``gemma-4-26B-A4B`` (4e9 active); None when the name does not say."""
    match = _ACTIVE_PARAMS_IN_NAME.search(name) or _PARAMS_IN_NAME.search(name)
    return float(match.group(1)) * 1e9 if match else None


def parse_params(text: str) -> float:
    """``--model-params``: ``12e9``, ``12000000000`` or ``12B``."""
    cleaned = text.strip()
    try:
        value = float(cleaned[:-1]) * 1e9 if cleaned[-1:].lower() == "b" else float(cleaned)
    except ValueError:
        raise ValueError(f"--model-params takes a parameter count like 12B or 12e9, got {text!r}") from None
    if not value > 0:
        raise ValueError(f"--model-params must be positive, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Cost:
    per_1m_requests_usd: float | None
    per_1m_output_tokens_usd: float | None


def cost(price_per_hour_usd: float | None, request_throughput: float, output_throughput: float) -> Cost:
    """What a million requests (or output tokens) cost at the measured rate, if the hardware ran at it
    for the whole hour. One instance is assumed: with several Cloud Run instances multiply by them."""
    if price_per_hour_usd is None:
        return Cost(None, None)
    per_second = price_per_hour_usd / SECONDS_PER_HOUR
    return Cost(
        per_1m_requests_usd=per_second / request_throughput * PER_MILLION if request_throughput > 0 else None,
        per_1m_output_tokens_usd=per_second / output_throughput * PER_MILLION if output_throughput > 0 else None,
    )


def ceiling_request_throughput(
    peak_flops: float | None, params: float | None, tokens_per_request: float
) -> float | None:
    """Requests/s the hardware could at most compute: peak FLOP/s / (2 x params x tokens per request).

    A forward pass costs about 2 FLOPs per parameter per token (prompt and output alike), so no
    serving trick (batching, caching aside) can exceed this; a measured rate above it means the
    measurement is wrong (e.g. prompts served from the prefix cache) or the facts are.
    """
    if peak_flops is None or params is None or tokens_per_request <= 0:
        return None
    return peak_flops / (2.0 * params * tokens_per_request)


@dataclass(frozen=True, slots=True)
class PlatformVerdict:
    admission_limit: int | None
    over_limit: bool
    limited_failures: int


def platform_verdict(concurrency: int, admission_limit: int | None, errors: dict[str, int]) -> PlatformVerdict:
    """Failures at a concurrency above what Cloud Run admits (concurrency x max instances) that Cloud
    Run itself answers (429, and 503 when no instance can start) are the platform's, not the model's."""
    over = admission_limit is not None and concurrency > admission_limit
    limited = sum(count for kind, count in errors.items() if kind in ADMISSION_FAILURES) if over else 0
    return PlatformVerdict(admission_limit, over, limited)
