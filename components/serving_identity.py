"""A dedicated service account for one vLLM deployment.

Why its own component: the identity must exist before the bucket grants it read access and before the
service runs as it, and it must not be the project's default compute account (which holds Editor).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from serving.gcp_names import SERVICE_ACCOUNT_ID
from serving.naming import TypeToken


@dataclass(frozen=True)
class ServingIdentityArgs:
    """Who the serving containers run as."""

    account_id: str
    display_name: str

    def __post_init__(self) -> None:
        if not SERVICE_ACCOUNT_ID.match(self.account_id):
            raise ValueError(
                f"ServingIdentityArgs.account_id {self.account_id!r}: 6-30 characters, lowercase letters, digits "
                "and '-', starting with a letter and not ending with '-'"
            )


class ServingIdentity(pulumi.ComponentResource):
    """A service account that serving containers run as. Owns: the account. Grants: none by itself."""

    email: pulumi.Output[str]
    member: pulumi.Output[str]
    # Known before the account exists (a queued-resource request names the email up front).
    account_id: str

    def __init__(self, name: str, args: ServingIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.SERVING_IDENTITY, name, None, opts)
        self.account_id = args.account_id
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            account_id=args.account_id,
            display_name=args.display_name,
            description="Runs gemma-serving's vLLM containers; reads the model bucket only.",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.email = account.email
        self.member = account.email.apply(lambda email: f"serviceAccount:{email}")
        self.register_outputs({"email": self.email, "member": self.member})

    def planned_email(self, project: str) -> str:
        """The account's email as plain text, before the account exists (Google's fixed format)."""
        return f"{self.account_id}@{project}.iam.gserviceaccount.com"
