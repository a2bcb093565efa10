"""A results file as one run, priced from the project's price table: what `compare` over N runs judges.

Why not the recorded price alone: a results file is data anyone can write, and a run whose recorded price
was $0.01/h was crowned the cheapest stack. The recorded price is now checked against the price table
(serving/pricing.py, serving/data/pricing.json): the table gives the least the run's accelerator can cost
an hour on its platform (Cloud Run's smallest instance with that GPU; a TPU's smallest slice at the cheapest
tier and region). A recorded price at or above that floor is consistent (a larger shape, more instances, another
region) and is used; one below it contradicts the table: the run is priced at the table's floor, the
recorded figure is shown beside it, and the run is never crowned. A GPU run on GKE has no floor in the table
(machine types and tiers vary), so its recorded price is used and said to be unchecked.

One accelerator per run: a file whose cells name two accelerators (or platforms) is two runs, not one, and
is refused. Scale-to-zero costs only where the platform scales to zero: Cloud Run with a GPU, never a TPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from serving.pricing import TpuBilling, hourly_price, minimum_billing, usd
from serving.shapes import Accelerator, resolved_shapes
from verify import UsageError
from verify.bench.judgement import cost
from verify.bench.results import CellRecord

# A recorded price this far below the table's floor is a contradiction (the records round to 4 decimals).
TOLERANCE = 0.995
TPU_TIERS: tuple[Literal["flex-start", "spot", "guaranteed"], ...] = ("spot", "flex-start", "guaranteed")


def table_floor(accelerator: str | None, platform: str | None) -> float | None:
    """The least one billed unit of ``accelerator`` costs an hour on ``platform`` at list prices; None when
    the table has no floor for it (an unknown accelerator, a GPU on GKE)."""
    try:
        kind = Accelerator(accelerator or "")
    except ValueError:
        return None
    smallest = minimum_billing(kind)
    if isinstance(smallest, TpuBilling):  # its smallest slice, at each tier (the table's, not a spelled name)
        prices = [
            hourly_price(smallest.model_copy(update={"provisioning_model": tier, "region": None})).usd_per_hour
            for tier in TPU_TIERS
        ]
        known = [price for price in prices if price is not None]
        return min(known) if known else None
    if platform == "gke":
        return None
    return hourly_price(minimum_billing(kind)).usd_per_hour


def scales_to_zero(accelerator: str | None, platform: str | None) -> bool:
    """Cloud Run bills a GPU instance only while it runs; a TPU node (or a GKE node) bills while it exists."""
    try:
        kind = Accelerator(accelerator or "")
    except ValueError:
        return False
    return platform == "cloud-run" and bool(resolved_shapes(platform="cloud-run", accelerator=kind))


def one_value(path: Path, records: Sequence[CellRecord], field: str) -> str | None:
    """The one value every cell of the file gives ``field`` (None when none gives one); a file whose cells
    give two is refused (compare would take two stacks for one run)."""
    values = sorted({str(value) for record in records if (value := getattr(record, field)) is not None})
    if len(values) > 1:
        raise UsageError(
            f"{path}: its cells name more than one {field.replace('_', ' ')} ({', '.join(values)}); a results file "
            "is one run of one stack: split it (one file per stack) before comparing"
        )
    return values[0] if values else None


def price_problem(
    recorded: float | None, floor: float | None, accelerator: str | None, platform: str | None
) -> str | None:
    """Why the recorded price cannot be believed (None when it can, or there is nothing to check it with)."""
    if recorded is not None and floor is not None and recorded < floor * TOLERANCE:
        return (
            f"its recorded price {usd(recorded)}/h is below the least a {accelerator} costs on "
            f"{platform or 'its platform'} in the price table ({usd(floor)}/h): priced at the table's, not crowned"
        )
    if accelerator is not None and platform == "cloud-run" and not scales_to_zero(accelerator, platform):
        return f"it says Cloud Run but serves on {accelerator}, which Cloud Run does not offer: not crowned"
    return None


def repriced(records: Sequence[CellRecord], price: float | None) -> tuple[CellRecord, ...]:
    """The cells with ``price`` and the costs it gives at their measured throughput (the recorded costs are
    the recorded price's)."""
    out = []
    for record in records:
        spend = cost(price, record.request_throughput or 0.0, record.output_throughput or 0.0)
        out.append(
            record.model_copy(
                update={
                    "price_per_hour_usd": price,
                    "cost_per_1m_requests_usd": spend.per_1m_requests_usd if record.measured else None,
                    "cost_per_1m_output_tokens_usd": spend.per_1m_output_tokens_usd if record.measured else None,
                }
            )
        )
    return tuple(out)
