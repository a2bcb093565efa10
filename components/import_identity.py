"""One identity that writes one folder of the model bucket, shared by several import jobs (a stack's adapters).

Why shared: an identity per adapter made 150 adapters 150 service accounts, above a project's default quota
of 100; the adapters of a stack are one team's, written to one folder (`adapters/`), so one account with
`roles/storage.objectUser` on that managed folder is the same boundary with one account. It cannot write the
model's weights, the compile cache, or the route table at the bucket's root (serving/adapter_versions.py),
so an import can add a version but never move traffic to it.

Owns: the account, the managed folder and its writer grant, and the token grant when a Hugging Face source
needs the token. The jobs (components/model_import.py) run as it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.managed_secret import ManagedSecret
from components.model_import import ImportWriter, folder_writer_grants
from components.serving_identity import ServingIdentity, ServingIdentityArgs
from serving.gcp_names import bucket_path_problem
from serving.naming import TypeToken


@dataclass(frozen=True)
class ImportIdentityArgs:
    """Who writes `<bucket>/<folder>/` for every import that shares it."""

    project: str
    bucket_name: pulumi.Input[str]
    folder: str
    account_id: str
    display_name: str
    description: str
    # Set when one of the imports reads a Hugging Face repo with the stack's token.
    hf_token: ManagedSecret | None = None

    def __post_init__(self) -> None:
        if bucket_path_problem(self.folder):
            raise ValueError(f"ImportIdentityArgs.folder {self.folder!r}: a relative path inside the bucket")
        if not self.project:
            raise ValueError("ImportIdentityArgs.project is required")


class ImportIdentity(pulumi.ComponentResource):
    """Owns: the shared import account, its folder and the grants; `writer` is what each job runs as."""

    writer: ImportWriter

    def __init__(self, name: str, args: ImportIdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.IMPORT_IDENTITY, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        identity = ServingIdentity(
            name,
            ServingIdentityArgs(
                account_id=args.account_id, display_name=args.display_name, description=args.description
            ),
            child,
        )
        grants = folder_writer_grants(
            name,
            bucket_name=args.bucket_name,
            folder=args.folder,
            member=identity.member,
            hf_token=args.hf_token,
            project=args.project,
            child=child,
        )
        self.writer = ImportWriter(email=identity.email, grants=tuple(grants), reads_token=args.hf_token is not None)
        self.register_outputs({"email": identity.email})
