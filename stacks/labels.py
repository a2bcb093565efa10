"""The labels every resource of a stack carries, so costs, ownership and `verify status` find it.

Why in `stacks/`: the program sets them (deploy.py) and `verify status` looks resources up by them
(Pulumi auto-names the Cloud Run service); one definition keeps both sides in step.
"""

from __future__ import annotations

MANAGED_BY = "gemma-serving"


def label_value(value: str) -> str:
    """A Google label value: lowercase letters, digits, '-' and '_', at most 63 characters."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in value.lower())[:63]


def stack_labels(stack: str) -> dict[str, str]:
    return {"managed-by": MANAGED_BY, "stack": label_value(stack)}
