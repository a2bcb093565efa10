"""Typed wire builders for Compute Engine blocks: pulumi-gcp's own input types, at no import cost.

Why: a wired resource's top-level inputs are typed (components/wire/gcp_inputs.py), and each nested block is
typed as pulumi-gcp's `*ArgsDict` for it; a block built with the untyped `wire` is a `dict[str, Any]` that mypy
refuses there. Each builder here takes the keyword arguments of that `*ArgsDict` (imported for the type checker
only, so no plan loads `pulumi_gcp.compute`) and returns the block in wire form
exactly as `wire` does (camelCase, None fields left out), typed as the `*ArgsDict` its fields were checked
against: in wire form, to be read by the provider, not by code (see components/wire/cloud_run.py).
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
