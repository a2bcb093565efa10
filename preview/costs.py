"""The plan's cost section: what the stack keeps running and each instance at full scale, in USD.

Why from the `billing` output: it is the shape deploy.py exports for verify bench, built from the same
settings as the service or node, so the plan and the benchmark price exactly the same thing
(serving/pricing.py).
"""

from __future__ import annotations

from typing import Any

from preview.capture import Capture
from preview.render import clean
from serving.pricing import StackCost, parse_billing, stack_cost


def capture_cost(capture: Capture) -> StackCost | None:
    """The stack's cost, or None when the program exported no billed shape."""
    billing = clean(capture.outputs).get("billing")
    if not isinstance(billing, dict):
        return None
    return stack_cost(parse_billing(billing))


def cost_section(capture: Capture) -> list[str]:
    cost = capture_cost(capture)
    return cost.lines() if cost is not None else []


def cost_document(capture: Capture) -> dict[str, Any] | None:
    cost = capture_cost(capture)
    return cost.as_dict() if cost is not None else None
