"""The TPU queued resource as a Pulumi resource, with typed inputs and outputs.

Why its inputs are the finished request body: the plan (and the offline preview) then shows exactly the
JSON that will be POSTed to Google, the diff compares exactly that, and nothing is assembled later inside
the provider where no reviewer sees it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi.dynamic

from components.tpu.provider import QueuedResourceProvider
from components.tpu.request_body import (
    Placement,
    QueuedResourceSpec,
    build_request_body,
    tier_fields,
    tier_name,
)


@dataclass(frozen=True)
class QueuedResourceArgs(QueuedResourceSpec):
    """The request (every field of the body, validated as the spec is) plus how long `pulumi up` waits for it.

    Only the instance metadata (the startup script, `metadata` values) may be Pulumi outputs, so that the
    plan shows the rest of the body as it is built.
    """

    # How long `pulumi up` waits for ACTIVE in each placement before withdrawing the request there.
    active_deadline_seconds: int = 2 * 3600
    # Where to ask next, in order, when this zone and tier refuse, fail or time out (docs/tpu.md).
    fallbacks: Sequence[Placement] = ()

    def placements(self) -> list[dict[str, Any]]:
        """Every placement in order, the spec's own first, as the provider reads them (the plan shows them)."""
        ordered = [Placement(self.zone, self.provisioning), *self.fallbacks]
        return [
            {
                "zone": placement.zone,
                "provisioningModel": tier_name(placement.provisioning),
                "tier": tier_fields(placement.provisioning, self.project, placement.zone),
            }
            for placement in ordered
        ]


class QueuedResource(pulumi.dynamic.Resource, module="tpu", name="QueuedResource"):
    """One TPU queued resource (and the node it brings up), managed through the v2alpha1 REST API."""

    def __init__(self, name: str, args: QueuedResourceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # Built now (the args were validated when made): the plan shows the whole body.
        body = build_request_body(args)
        props: dict[str, Any] = {
            "project": args.project,
            "zone": args.zone,
            "queuedResourceId": args.queued_resource_id,
            "nodeId": args.node_id,
            "requestBody": body,
            "activeDeadlineSeconds": args.active_deadline_seconds,
            # Only with fallbacks, so a single-zone stack's request (and plan) reads as it always has.
            **({"placements": args.placements()} if args.fallbacks else {}),
            # Outputs the provider reads back from Google.
            "queuedResourceName": None,
            "state": None,
            "nodeName": None,
            "internalIp": None,
            "externalIp": None,
            "placementZone": None,
            "placementModel": None,
            "attempts": None,
        }
        super().__init__(QueuedResourceProvider(), name, props, opts)

    def _output(self, key: str) -> pulumi.Output[str]:
        # The SDK sets one attribute per output key (camelCase, as the provider returns them).
        return cast("pulumi.Output[str]", getattr(self, key))

    @property
    def queued_resource_name(self) -> pulumi.Output[str]:
        """projects/<p>/locations/<zone>/queuedResources/<id>."""
        return self._output("queuedResourceName")

    @property
    def request_state(self) -> pulumi.Output[str]:
        """The request's state when last read (ACTIVE after a successful create)."""
        return self._output("state")

    @property
    def node_name(self) -> pulumi.Output[str]:
        return self._output("nodeName")

    @property
    def internal_ip(self) -> pulumi.Output[str]:
        return self._output("internalIp")

    @property
    def external_ip(self) -> pulumi.Output[str]:
        """Empty unless the node was given an external IP."""
        return self._output("externalIp")

    @property
    def placement_zone(self) -> pulumi.Output[str]:
        """The zone of the placement Google granted (the first one that turned ACTIVE)."""
        return self._output("placementZone")

    @property
    def placement_model(self) -> pulumi.Output[str]:
        """The tier of the placement Google granted: flex-start, spot or guaranteed."""
        return self._output("placementModel")

    @property
    def request_body(self) -> pulumi.Output[dict[str, Any]]:
        return cast("pulumi.Output[dict[str, Any]]", self._output("requestBody"))
