"""A dedicated service account for one workload of a stack: the vLLM containers, an import or bench job.

Why its own component: the identity must exist before the bucket grants it read access and before the
service runs as it, and it must not be the project's default compute account (which holds Editor). The
weight-import and load-generator jobs run as one each too, with their own description and grants.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.wire import gcp
from serving.gcp_names import SERVICE_ACCOUNT_ID
from serving.naming import TypeToken

# What the serving containers' account is for, as the console shows it.
SERVING_DESCRIPTION = "Runs gemma-serving's vLLM containers; reads the model bucket only."


@dataclass(frozen=True)
class ServingIdentityArgs:
    """Who a workload runs as (by default the serving containers)."""

    account_id: str
    display_name: str
    # What the account is for and may do, as the console shows it.
    description: str = SERVING_DESCRIPTION
    # The component that created the account itself before it moved under this one: an alias to its old
    # place (same name, that parent), so a deployed stack moves the account in state instead of replacing it.
    former_parent: pulumi.Resource | None = None

    def __post_init__(self) -> None:
        if not SERVICE_ACCOUNT_ID.match(self.account_id):
            raise ValueError(
                f"ServingIdentityArgs.account_id {self.account_id!r}: 6-30 characters, lowercase letters, digits "
                "and '-', starting with a letter and not ending with '-'"
            )


class ServingIdentity(pulumi.ComponentResource):
    """A service account a workload runs as. Owns: the account. Grants: none by itself."""

    email: pulumi.Output[str]
    member: pulumi.Output[str]
    # Known before the account exists (a queued-resource request names the email up front).
    account_id: str

    def __init__(self, name: str, args: ServingIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.SERVING_IDENTITY, name, None, opts)
        self.account_id = args.account_id
        account = gcp.ServiceAccount(
            f"{name}-sa",
            account_id=args.account_id,
            display_name=args.display_name,
            description=args.description,
            opts=pulumi.ResourceOptions(
                parent=self,
                aliases=[pulumi.Alias(name=f"{name}-sa", parent=args.former_parent)] if args.former_parent else None,
            ),
        )
        self.email = account.email
        self.member = account.email.apply(lambda email: f"serviceAccount:{email}")
        self.register_outputs({"email": self.email, "member": self.member})

    def planned_email(self, project: str) -> str:
        """The account's email as plain text, before the account exists (Google's fixed format)."""
        return f"{self.account_id}@{project}.iam.gserviceaccount.com"
