"""Typed wire builders for Artifact Registry blocks: pulumi-gcp's `artifactregistry` `*ArgsDict`s, at no import cost.

Why a builder per block, and what it returns: `components.wire`.
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
