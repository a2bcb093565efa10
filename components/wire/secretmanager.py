"""Typed wire builders for Secret Manager blocks: pulumi-gcp's `secretmanager` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
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
