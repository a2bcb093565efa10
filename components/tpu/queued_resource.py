"""The TPU queued resource as a Pulumi resource, with typed inputs and outputs.

Why its inputs are the finished request body: the plan (and the offline preview) then shows exactly the
JSON that will be POSTed to Google, the diff compares exactly that, and nothing is assembled later inside
the provider where no reviewer sees it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pulumi
import pulumi.dynamic

from components.tpu.provider import QueuedResourceProvider
from components.tpu.request_body import Provisioning, QueuedResourceSpec, build_request_body


@dataclass(frozen=True)
class QueuedResourceArgs:
    """What to request. Only the instance metadata (the startup script, `metadata` values) may be Pulumi
    outputs, so that the plan shows the rest of the body as it is built."""

    project: str
    zone: str
    queued_resource_id: str
    node_id: str
    accelerator_type: str
    runtime_version: str
    service_account_email: str
    # An output when rendered from resolved values (e.g. an image reference through the mirror).
    startup_script: pulumi.Input[str]
    provisioning: Provisioning
    network: str = "default"
    subnetwork: str | None = None
    enable_external_ips: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    # Instance metadata beside the startup script, e.g. the model bucket's name (known after creation).
    metadata: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    network_tags: Sequence[str] = ()
    valid_until_seconds: int | None = None
    # How long `pulumi up` waits for ACTIVE before withdrawing the request and failing.
    active_deadline_seconds: int = 2 * 3600

    def spec(self) -> QueuedResourceSpec:
        return QueuedResourceSpec(
            project=self.project,
            zone=self.zone,
            queued_resource_id=self.queued_resource_id,
            node_id=self.node_id,
            accelerator_type=self.accelerator_type,
            runtime_version=self.runtime_version,
            service_account_email=self.service_account_email,
            startup_script=self.startup_script,
            provisioning=self.provisioning,
            network=self.network,
            subnetwork=self.subnetwork,
            enable_external_ips=self.enable_external_ips,
            labels=self.labels,
            metadata=self.metadata,
            network_tags=self.network_tags,
            valid_until_seconds=self.valid_until_seconds,
        )


class QueuedResource(pulumi.dynamic.Resource, module="tpu", name="QueuedResource"):
    """One TPU queued resource (and the node it brings up), managed through the v2alpha1 REST API."""

    def __init__(
        self,
        name: str,
        args: QueuedResourceArgs,
        opts: pulumi.ResourceOptions | None = None,
        provider: QueuedResourceProvider | None = None,
    ) -> None:
        # Built (and validated) now: a bad id fails the preview, and the plan shows the whole body.
        body = build_request_body(args.spec())
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
        super().__init__(provider or QueuedResourceProvider(), name, props, opts)

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
