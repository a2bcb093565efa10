"""Register one Kubernetes manifest (a plain dict) as the pulumi-kubernetes resource of its kind.

Why one helper: the fleet, the metrics adapter and the inference gateway all build their objects as plain
manifests (validated by the tests against the pinned schemas, checked by the policy pack), and each must
reach the engine as the typed resource of its kind, so the plan and the state name `kubernetes:apps/v1:
Deployment`, not a generic custom resource. `components.wire.kubernetes` registers them by type token
(the generated classes' subpackages cost a GKE plan over a second); kinds without a typed class (CRDs'
kinds) register as pulumi-kubernetes' `CustomResource` does.
"""

from __future__ import annotations

from typing import Any

import pulumi

from components.wire.kubernetes import KubernetesObject


def register(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> KubernetesObject:
    """The manifest as a resource named `name` (a Pulumi name, not the object's metadata.name)."""
    return KubernetesObject(name, manifest, opts)
