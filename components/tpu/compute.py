"""The three Compute Engine resources a TPU node's network edge needs, without importing `pulumi_gcp.compute`.

Why: `pulumi_gcp.compute` is the largest module of the provider SDK (about 290 files, every Compute
Engine type); the first use of any class in it loads all of it, about one second on a quiet machine
and three on a busy one, which made the TPU stack's plan (and every `pulumi preview`/`up` of it) take
twice a GPU stack's. These classes register exactly what `gcp.compute.Firewall`, `Router` and
`RouterNat` register: the same type tokens, the same camelCase wire properties, the same provider
version (pulumi-gcp's own resource defaults), so the engine, the provider and the policy pack cannot
tell them apart. Only the inputs the node uses are offered; `benchmarks/preview_time.py` measures the
difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pulumi
from pulumi_gcp import _utilities as gcp_sdk


class _ComputeResource(pulumi.CustomResource):
    """A pulumi-gcp resource registered by type token with wire-form (camelCase) properties."""

    TYPE: ClassVar[str]

    def __init__(self, resource_name: str, props: dict[str, Any], opts: pulumi.ResourceOptions | None) -> None:
        # What every generated pulumi-gcp class does first: pin the provider plugin to the SDK's version.
        merged = pulumi.ResourceOptions.merge(gcp_sdk.get_resource_opts_defaults(), opts)
        super().__init__(self.TYPE, resource_name, props, merged)


class Firewall(_ComputeResource):
    """`gcp.compute.Firewall` (ingress, TCP allow rules only)."""

    TYPE = "gcp:compute/firewall:Firewall"
    name: pulumi.Output[str]
    self_link: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        project: pulumi.Input[str],
        network: pulumi.Input[str],
        description: str,
        tcp_ports: Sequence[str],
        source_ranges: Sequence[str],
        target_tags: Sequence[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "project": project,
            "network": network,
            "direction": "INGRESS",
            "description": description,
            "allows": [{"protocol": "tcp", "ports": list(tcp_ports)}],
            "sourceRanges": list(source_ranges),
            "targetTags": list(target_tags),
            "name": None,
            "selfLink": None,
        }
        super().__init__(resource_name, props, opts)


class Router(_ComputeResource):
    """`gcp.compute.Router` (a Cloud Router that only carries a NAT)."""

    TYPE = "gcp:compute/router:Router"
    name: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        project: pulumi.Input[str],
        region: str,
        network: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {"project": project, "region": region, "network": network, "name": None}
        super().__init__(resource_name, props, opts)


class RouterNat(_ComputeResource):
    """`gcp.compute.RouterNat` for every subnetwork range, automatic addresses, errors logged."""

    TYPE = "gcp:compute/routerNat:RouterNat"
    name: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        project: pulumi.Input[str],
        region: str,
        router: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props: dict[str, Any] = {
            "project": project,
            "region": region,
            "router": router,
            "natIpAllocateOption": "AUTO_ONLY",
            "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
            "logConfig": {"enable": True, "filter": "ERRORS_ONLY"},
            "name": None,
        }
        super().__init__(resource_name, props, opts)
