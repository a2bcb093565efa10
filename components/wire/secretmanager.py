"""Typed wire builders for Secret Manager blocks: pulumi-gcp's own input types, at no import cost.

Why: a wired resource's top-level inputs are typed (components/wire/gcp_inputs.py), and each nested block is
typed as pulumi-gcp's `*ArgsDict` for it; a block built with the untyped `wire` is a `dict[str, Any]` that mypy
refuses there. Each builder here takes the keyword arguments of that `*ArgsDict` (imported for the type checker
only, so no plan loads `pulumi_gcp.secretmanager`) and returns the block in wire form
exactly as `wire` does (camelCase, None fields left out), typed as the `*ArgsDict` its fields were checked
against: in wire form, to be read by the provider, not by code (see components/wire/cloud_run.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.secretmanager import _inputs as secretmanager


def replication(**fields: Unpack[secretmanager.SecretReplicationArgsDict]) -> secretmanager.SecretReplicationArgsDict:
    """`replication`: where a secret's payload is stored."""
    return cast("secretmanager.SecretReplicationArgsDict", wire(**fields))


def user_managed(
    **fields: Unpack[secretmanager.SecretReplicationUserManagedArgsDict],
) -> secretmanager.SecretReplicationUserManagedArgsDict:
    """`replication.userManaged`: the regions the project chose."""
    return cast("secretmanager.SecretReplicationUserManagedArgsDict", wire(**fields))


def replica(
    **fields: Unpack[secretmanager.SecretReplicationUserManagedReplicaArgsDict],
) -> secretmanager.SecretReplicationUserManagedReplicaArgsDict:
    """`userManaged.replicas[]`: one region holding the payload."""
    return cast("secretmanager.SecretReplicationUserManagedReplicaArgsDict", wire(**fields))
