"""The placements a queued resource tries in order, and the record of each attempt.

Why apart from the provider: the provider's job is one request's lifecycle (POST, wait, withdraw); which
zone and tier come next, what a refusal was, and how the attempts so far are written onto the node (so
`verify status` reads them from Google while `pulumi up` still waits) are plain data rules, tested alone.

A placement's request is the first placement's body with the node's parent moved to its zone and the tier
fields replaced (components/tpu/request_body.py `placement_body`). The attempts so far ride on each new
request as the node metadata value `gemma-placement` (JSON), which the fingerprint ignores, so a retried
`pulumi up` still recognises its own request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.tpu.request_body import PLACEMENT_METADATA_KEY, placement_body


@dataclass(frozen=True)
class PlacementTry:
    """One zone and tier, and the exact request that asks there."""

    zone: str
    model: str  # flex-start, spot or guaranteed
    body: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.zone} {self.model}"


@dataclass(frozen=True)
class Attempt:
    """What came of one placement: its outcome (quota, refused, failed, deadline, ended) and Google's reason."""

    zone: str
    model: str
    outcome: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"zone": self.zone, "provisioningModel": self.model, "outcome": self.outcome, "reason": self.reason}

    def line(self) -> str:
        return f"{self.zone} {self.model}: {self.outcome}: {self.reason}"


class PlacementRefusedError(Exception):
    """One placement will not bring a node (refused, failed, timed out); the next may."""

    def __init__(self, message: str, *, outcome: str, reason: str) -> None:
        super().__init__(message)
        self.outcome = "quota" if outcome in {"refused", "failed"} and _about_quota(reason) else outcome
        self.reason = reason


def _about_quota(reason: str) -> bool:
    """Google says quota in RESOURCE_EXHAUSTED answers and in FAILED requests' messages ("Quota limit ...")."""
    lowered = reason.lower()
    return "quota" in lowered or "resource_exhausted" in lowered


def model_of(body: Mapping[str, Any]) -> str:
    """The tier a request body asks for, in the stack file's words."""
    if body.get("provisioningModel") == "FLEX_START":
        return "flex-start"
    return "spot" if "spot" in body else "guaranteed"


def placements_of(props: Mapping[str, Any]) -> list[PlacementTry]:
    """Every placement of a resource's inputs, in order; without `placements`, its one zone and body."""
    first: dict[str, Any] = dict(props["requestBody"])
    listed: Sequence[Mapping[str, Any]] = props.get("placements") or []
    if not listed:
        return [PlacementTry(str(props["zone"]), model_of(first), first)]
    tries = [PlacementTry(str(listed[0]["zone"]), str(listed[0]["provisioningModel"]), first)]
    for placement in listed[1:]:
        zone = str(placement["zone"])
        body = placement_body(first, str(props["project"]), zone, placement.get("tier") or {})
        tries.append(PlacementTry(zone, str(placement["provisioningModel"]), body))
    return tries


def with_history(body: Mapping[str, Any], index: int, count: int, attempts: Sequence[Attempt]) -> dict[str, Any]:
    """A copy of ``body`` whose node says which placement it is and what came of the ones before it."""
    record = {"placement": index + 1, "of": count, "attempts": [attempt.as_dict() for attempt in attempts]}
    marked: dict[str, Any] = json.loads(json.dumps(body))
    for node_spec in marked.get("tpu", {}).get("nodeSpec", []):
        node_spec.setdefault("node", {}).setdefault("metadata", {})[PLACEMENT_METADATA_KEY] = json.dumps(record)
    return marked


def all_failed_message(attempts: Sequence[Attempt], deadline_seconds: float) -> str:
    """One error for `pulumi up` when no placement brought a node: each placement and why."""
    each = "; ".join(f"{index + 1}. {attempt.line()}" for index, attempt in enumerate(attempts))
    return (
        f"no placement brought a TPU node ({len(attempts)} tried in order, each request withdrawn): {each}. "
        "Run `gemma-verify preflight --stack <stack>` to see which zones and tiers have quota now, then add "
        f"or reorder tpu.placements (or lengthen tpu.activeDeadline, {deadline_seconds:.0f} s per placement) and "
        "run `pulumi up` again (docs/tpu.md)."
    )
