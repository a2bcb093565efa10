"""The Google account GKE nodes run as, with only what nodes need (logs, metrics), never Editor.

Why: a node pool without a service account runs as the Compute Engine default account, which many
projects still give roles/editor; every pod on the node could then act as it through the metadata server
(Workload Identity's GKE_METADATA mode hides it from pods, and this keeps the nodes' own rights small).
Owns: the account and its project-level grants.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.gke.node_pool import NODE_ROLES
from components.serving_identity import ServingIdentity, ServingIdentityArgs
from components.wire import gcp
from serving.naming import TypeToken

# What an auditor reads in the console: the nodes' account writes logs and metrics; pods act as their own
# Workload Identity accounts, so it is not the account that serves the model or reads its bucket.
NODE_ACCOUNT_DESCRIPTION = (
    "Runs the GKE nodes of a gemma-serving fleet: writes logs and metrics only. The vLLM pods act as their own "
    "Workload Identity account."
)


@dataclass(frozen=True)
class NodeIdentityArgs:
    project: str
    account_id: str
    display_name: str


class NodeIdentity(pulumi.ComponentResource):
    email: pulumi.Output[str]
    member: pulumi.Output[str]

    def __init__(self, name: str, args: NodeIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.GKE_NODE_IDENTITY, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account = ServingIdentity(
            f"{name}-account",
            ServingIdentityArgs(
                account_id=args.account_id, display_name=args.display_name, description=NODE_ACCOUNT_DESCRIPTION
            ),
            child,
        )
        for role in NODE_ROLES:
            gcp.ProjectIamMember(
                f"{name}-{role.removeprefix('roles/').replace('.', '-').lower()}",
                project=args.project,
                role=role,
                member=account.member,
                opts=child,
            )
        self.email = account.email
        self.member = account.member
        self.register_outputs({"email": self.email, "member": self.member})
