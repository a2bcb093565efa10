"""The plan's cost section: what the stack keeps running and each instance at full scale, in USD.

Why from the `billing` output: it is the shape deploy.py exports for verify bench, built from the same
settings as the service or node, so the plan and the benchmark price exactly the same thing
(serving/pricing.py). A TPU stack with tpu.placements bills the dearest of them there (the worst case,
stacks/placement_cost.py); the section then prices every placement beside it.
"""

from __future__ import annotations

from typing import Any

from preview.capture import Capture
from preview.render import clean
from preview.tpu_plan import QUEUED_RESOURCE
from serving.gcp_names import region_of
from serving.pricing import StackCost, TpuBilling, parse_billing, stack_cost, usd


def capture_cost(capture: Capture) -> StackCost | None:
    """The stack's cost, or None when the program exported no billed shape."""
    billing = clean(capture.outputs).get("billing")
    if not isinstance(billing, dict):
        return None
    return stack_cost(parse_billing(billing))


def placement_costs(capture: Capture, cost: StackCost) -> list[tuple[str, StackCost]]:
    """Each placement of a TPU request and what the node bills there (empty without tpu.placements)."""
    if not isinstance(cost.billing, TpuBilling):
        return []
    priced: list[tuple[str, StackCost]] = []
    for resource in capture.of_type(QUEUED_RESOURCE):
        for placement in clean(resource.inputs).get("placements") or []:
            zone, model = str(placement.get("zone")), placement.get("provisioningModel")
            run = ((placement.get("tier") or {}).get("runDuration") or {}).get("maxRunDuration")
            billing = cost.billing.model_copy(
                update={
                    "provisioning_model": model,
                    "region": region_of(zone),
                    "max_run_seconds": int(str(run).removesuffix("s")) if run else None,
                }
            )
            priced.append((f"{zone} {model}", stack_cost(billing)))
    return priced


def _placement_lines(priced: list[tuple[str, StackCost]]) -> list[str]:
    if not priced:
        return []
    each = "; ".join(
        f"{index + 1}. {label} "
        + (usd(cost.unit.usd_per_hour) + "/h" if cost.unit.usd_per_hour is not None else "no recorded rate")
        for index, (label, cost) in enumerate(priced)
    )
    return [f"  placements:    {each}; priced above: the worst case (the node lands in whichever Google grants)"]


def cost_section(capture: Capture) -> list[str]:
    cost = capture_cost(capture)
    if cost is None:
        return []
    return [*cost.lines(), *_placement_lines(placement_costs(capture, cost))]


def cost_document(capture: Capture) -> dict[str, Any] | None:
    cost = capture_cost(capture)
    if cost is None:
        return None
    document = cost.as_dict()
    priced = placement_costs(capture, cost)
    if priced:
        document["placements"] = [{"placement": label, **each.as_dict()} for label, each in priced]
    return document
