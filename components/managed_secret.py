"""A Secret Manager secret whose value comes from Pulumi secret config, readable by named identities only.

Why a component: the value must travel from `pulumi config set --secret` to Secret Manager without ever
being plain text (it stays a Pulumi secret, so Pulumi encrypts it in state and masks it in every plan),
and the readers must be granted on this one secret, never project-wide. Each reader is granted by the
component that needs the value (a ModelImport grants its own account), next to the reason for the grant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from components.wire import gcp, secretmanager
from serving.gcp_names import SECRET_ID
from serving.naming import TypeToken

# The role whoever reads the secret is granted, on this secret only (e.g. by each ModelImport that needs it).
ACCESSOR_ROLE = "roles/secretmanager.secretAccessor"


@dataclass(frozen=True)
class FormerNames:
    """Where the secret and its version lived before this component owned them (so they are not replaced)."""

    secret: str
    version: str
    parent: pulumi.Resource


@dataclass(frozen=True)
class ManagedSecretArgs:
    """The secret's id, where its data lives and its value. Readers are granted next to what reads it."""

    secret_id: str
    value: pulumi.Input[str]
    # The replica location: the secret's data stays in the stack's region.
    location: str
    labels: Mapping[str, str] = field(default_factory=dict)
    former_names: FormerNames | None = None

    def __post_init__(self) -> None:
        if not SECRET_ID.match(self.secret_id):
            raise ValueError(f"ManagedSecretArgs.secret_id {self.secret_id!r}: 1-255 letters, digits, '-' or '_'")
        if not self.location:
            raise ValueError("ManagedSecretArgs.location is required (a region such as us-east4)")


class ManagedSecret(pulumi.ComponentResource):
    """Owns: the secret and its one version. Never exports the value; grants nobody by itself."""

    secret_id: pulumi.Output[str]
    # The full resource name (projects/<p>/secrets/<id>) and the pinned version number.
    name: pulumi.Output[str]
    version: pulumi.Output[str]

    def __init__(self, name: str, args: ManagedSecretArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.MANAGED_SECRET, name, None, opts)
        former = args.former_names
        secret = gcp.Secret(
            f"{name}-secret",
            secret_id=args.secret_id,
            replication=secretmanager.replication(
                user_managed=secretmanager.user_managed(replicas=[secretmanager.replica(location=args.location)])
            ),
            labels=dict(args.labels),
            # The id is fixed, so a replacement (a new location) must delete the old secret first.
            opts=pulumi.ResourceOptions(
                parent=self,
                delete_before_replace=True,
                aliases=[pulumi.Alias(name=former.secret, parent=former.parent)] if former else None,
            ),
        )
        version = gcp.SecretVersion(
            f"{name}-version",
            secret=secret.id,
            # Always a Pulumi secret, even if a caller passed a plain Input by mistake.
            secret_data=pulumi.Output.secret(args.value),
            opts=pulumi.ResourceOptions(
                parent=self, aliases=[pulumi.Alias(name=former.version, parent=former.parent)] if former else None
            ),
        )
        self.secret_id = secret.secret_id
        self.name = secret.name
        self.version = version.version
        self.register_outputs({"secret_id": self.secret_id, "name": self.name, "version": self.version})
