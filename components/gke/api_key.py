"""The fleet's vLLM API key: generated once, kept in Secret Manager, readable by the serving account only.

Why a component: the key must never be a Kubernetes Secret written by Pulumi (its value would sit in a
manifest and in every `kubectl get -o yaml`); the pods read the Secret Manager version through the GKE
Secret Manager add-on as the serving account. Owns: the random key, its ManagedSecret and the one grant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_random as random

from components.managed_secret import ACCESSOR_ROLE, ManagedSecret, ManagedSecretArgs
from components.wire import gcp
from serving.naming import TypeToken


@dataclass(frozen=True)
class FleetApiKeyArgs:
    project: str
    secret_id: str
    location: str
    reader: pulumi.Input[str]
    labels: Mapping[str, str] = field(default_factory=dict)


class FleetApiKey(pulumi.ComponentResource):
    # `projects/<p>/secrets/<id>` (what verify reads the key from) and the pinned version the pods mount.
    secret: pulumi.Output[str]
    version: pulumi.Output[str]

    def __init__(self, name: str, args: FleetApiKeyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.GKE_API_KEY, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        value = random.RandomPassword(f"{name}-value", length=48, special=False, opts=child)
        secret = ManagedSecret(
            f"{name}-secret",
            ManagedSecretArgs(secret_id=args.secret_id, value=value.result, location=args.location, labels=args.labels),
            child,
        )
        gcp.SecretIamMember(
            f"{name}-reader",
            project=args.project,
            secret_id=secret.secret_id,
            role=ACCESSOR_ROLE,
            member=args.reader,
            opts=child,
        )
        self.secret = pulumi.Output.from_input(f"projects/{args.project}/secrets/{args.secret_id}")
        self.version = secret.version.apply(
            lambda number: f"projects/{args.project}/secrets/{args.secret_id}/versions/{number}"
        )
        self.register_outputs({"secret": self.secret, "version": self.version})
