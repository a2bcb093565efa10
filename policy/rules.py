"""Every guardrail of the pack, in one list that the pack, the tests and the offline plan all read.

Why a plain list: `pulumi_policy.PolicyPack` starts a gRPC server and blocks when constructed, so the
rules must be usable without it. Tests call `Guardrail.validate` (exactly what the pack calls) or
`Guardrail.violations` with crafted properties, and run every resource of each stack's offline plan
through every guardrail.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy, PolicyConfigSchema, ResourceValidationPolicy

from policy.access import BUCKET_NOT_PUBLIC, BUCKET_PRIVATE, CLOUD_RUN_NOT_PUBLIC
from policy.gateway import GATEWAY_GUARDRAILS
from policy.gke_cluster import GKE_PRIVATE_LEAST_PRIVILEGE
from policy.gpu_service import (
    GPU_CONCURRENCY_COVERS_BATCH,
    GPU_CPU_ALWAYS_ALLOCATED,
    GPU_MATCHES_ACCELERATOR,
    GPU_MODEL_MOUNT_OWNER,
)
from policy.guardrail import Guardrail
from policy.images import IMAGES_PINNED
from policy.kubernetes import KUBERNETES_GUARDRAILS
from policy.network import VLLM_PORT_NOT_PUBLIC
from policy.plaintext_secrets import NO_PLAINTEXT_SECRETS
from policy.route_guard import VLLM_BEHIND_ROUTE_GUARD
from policy.storage_writes import SERVING_WRITES_ONLY_THE_CACHE
from policy.tpu import TPU_QUEUED_RESOURCE_BOUNDED

PACK_NAME = "gemma-serving-guardrails"

GUARDRAILS: tuple[Guardrail, ...] = (
    CLOUD_RUN_NOT_PUBLIC,
    BUCKET_NOT_PUBLIC,
    BUCKET_PRIVATE,
    SERVING_WRITES_ONLY_THE_CACHE,
    GPU_CPU_ALWAYS_ALLOCATED,
    GPU_MATCHES_ACCELERATOR,
    GPU_CONCURRENCY_COVERS_BATCH,
    GPU_MODEL_MOUNT_OWNER,
    IMAGES_PINNED,
    VLLM_PORT_NOT_PUBLIC,
    VLLM_BEHIND_ROUTE_GUARD,
    TPU_QUEUED_RESOURCE_BOUNDED,
    NO_PLAINTEXT_SECRETS,
    *KUBERNETES_GUARDRAILS,
    *GATEWAY_GUARDRAILS,
    GKE_PRIVATE_LEAST_PRIVILEGE,
)


def as_policy(guardrail: Guardrail) -> ResourceValidationPolicy:
    """The guardrail as a mandatory pulumi-policy resource policy (constructing one starts nothing)."""
    schema = PolicyConfigSchema(properties=dict(guardrail.config_schema)) if guardrail.config_schema else None
    return ResourceValidationPolicy(
        name=guardrail.name,
        description=guardrail.description,
        validate=guardrail.validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema,
    )


def policies() -> list[Policy]:
    return [as_policy(guardrail) for guardrail in GUARDRAILS]
