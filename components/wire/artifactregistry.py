"""Typed wire builders for Artifact Registry blocks: pulumi-gcp's own input types, at no import cost.

Why: a wired resource's top-level inputs are typed (components/wire/gcp_inputs.py), and each nested block is
typed as pulumi-gcp's `*ArgsDict` for it; a block built with the untyped `wire` is a `dict[str, Any]` that mypy
refuses there. Each builder here takes the keyword arguments of that `*ArgsDict` (imported for the type checker
only, so no plan loads `pulumi_gcp.artifactregistry`) and returns the block in wire form
exactly as `wire` does (camelCase, None fields left out), typed as the `*ArgsDict` its fields were checked
against: in wire form, to be read by the provider, not by code (see components/wire/cloud_run.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack, cast

from components.wire import wire

if TYPE_CHECKING:
    from pulumi_gcp.artifactregistry import _inputs as artifactregistry


def remote_repository_config(
    **fields: Unpack[artifactregistry.RepositoryRemoteRepositoryConfigArgsDict],
) -> artifactregistry.RepositoryRemoteRepositoryConfigArgsDict:
    """`remoteRepositoryConfig`: the upstream a remote repository caches."""
    return cast("artifactregistry.RepositoryRemoteRepositoryConfigArgsDict", wire(**fields))


def docker_repository(
    **fields: Unpack[artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgsDict],
) -> artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgsDict:
    """`remoteRepositoryConfig.dockerRepository`: a Docker upstream."""
    return cast("artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgsDict", wire(**fields))


def cleanup_policy(
    **fields: Unpack[artifactregistry.RepositoryCleanupPolicyArgsDict],
) -> artifactregistry.RepositoryCleanupPolicyArgsDict:
    """`cleanupPolicies[]`: one rule deleting or keeping images."""
    return cast("artifactregistry.RepositoryCleanupPolicyArgsDict", wire(**fields))


def cleanup_condition(
    **fields: Unpack[artifactregistry.RepositoryCleanupPolicyConditionArgsDict],
) -> artifactregistry.RepositoryCleanupPolicyConditionArgsDict:
    """`cleanupPolicies[].condition`: which images the rule acts on."""
    return cast("artifactregistry.RepositoryCleanupPolicyConditionArgsDict", wire(**fields))


def docker_config(
    **fields: Unpack[artifactregistry.RepositoryDockerConfigArgsDict],
) -> artifactregistry.RepositoryDockerConfigArgsDict:
    """`dockerConfig`: a standard Docker repository's settings (immutable tags)."""
    return cast("artifactregistry.RepositoryDockerConfigArgsDict", wire(**fields))
