"""Typed wire builders for Compute Engine blocks: pulumi-gcp's `compute` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.compute import _inputs as compute


def firewall_allow(**fields: Unpack[compute.FirewallAllowArgsDict]) -> compute.FirewallAllowArgsDict:
    """`allows[]`: a protocol and ports a firewall rule lets through."""
    return cast("compute.FirewallAllowArgsDict", wire(**fields))


def router_nat_log_config(**fields: Unpack[compute.RouterNatLogConfigArgsDict]) -> compute.RouterNatLogConfigArgsDict:
    """`logConfig`: what a Cloud NAT gateway logs."""
    return cast("compute.RouterNatLogConfigArgsDict", wire(**fields))
