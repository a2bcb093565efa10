"""The TPU queued resource as a Pulumi resource, with typed inputs and outputs.

Why its inputs are the finished request body: the plan (and the offline preview) then shows exactly the
JSON that will be POSTed to Google, the diff compares exactly that, and nothing is assembled later inside
the provider where no reviewer sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi.dynamic

from components.tpu.provider import QueuedResourceProvider
from components.tpu.request_body import QueuedResourceSpec, build_request_body


@dataclass(frozen=True)
class QueuedResourceArgs(QueuedResourceSpec):
    """The request (every field of the body, validated as the spec is) plus how long `pulumi up` waits for it.

    Only the instance metadata (the startup script, `metadata` values) may be Pulumi outputs, so that the
    plan shows the rest of the body as it is built.
    """

    # How long `pulumi up` waits for ACTIVE before withdrawing the request and failing.
    active_deadline_seconds: int = 2 * 3600


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
            # Outputs the provider reads back from Google.
            "queuedResourceName": None,
            "state": None,
            "nodeName": None,
            "internalIp": None,
            "externalIp": None,
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
    def request_body(self) -> pulumi.Output[dict[str, Any]]:
        return cast("pulumi.Output[dict[str, Any]]", self._output("requestBody"))
