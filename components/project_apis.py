"""The Google APIs a stack uses, enabled by the stack itself, and a provider that waits for them.

Why: on an empty project the first `pulumi up` failed until someone clicked "Enable API" a handful of
times. Enabling them here removes that hand step; giving every other resource a provider that depends
on the enablement orders the whole stack after it (children inherit their parent's provider, so one
option on each component is enough). APIs are never disabled on destroy: other stacks and workloads of
the project use them too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.wire import gcp
from serving.naming import TypeToken

_API = re.compile(r"^[a-z][a-z0-9-]*\.googleapis\.com$")


@dataclass(frozen=True)
class ProjectApisArgs:
    project: str
    apis: Sequence[str]
    # Passed on to the provider (the stack's gcp:impersonateServiceAccount), since an explicit provider
    # does not read the stack's gcp:* config by itself.
    impersonate_service_account: str | None = None

    def __post_init__(self) -> None:
        if not self.project:
            raise ValueError("ProjectApisArgs.project is required")
        bad = [api for api in self.apis if not _API.match(api)]
        if bad:
            raise ValueError(f"ProjectApisArgs.apis {bad}: service names such as run.googleapis.com")


class ProjectApis(pulumi.ComponentResource):
    """Owns: one `gcp.projects.Service` per API and the Google provider the stack's components use."""

    provider: gcp.GcpProvider

    def __init__(self, name: str, args: ProjectApisArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TypeToken.PROJECT_APIS, name, None, opts)
        services = [
            gcp.ProjectService(
                f"{name}-{api.split('.', 1)[0]}",
                project=args.project,
                service=api,
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in sorted(set(args.apis))
        ]
        self.provider = gcp.GcpProvider(
            f"{name}-google",
            project=args.project,
            impersonate_service_account=args.impersonate_service_account,
            opts=pulumi.ResourceOptions(parent=self, depends_on=services),
        )
        self.register_outputs({})

    def options(self) -> pulumi.ResourceOptions:
        """Options for the stack's components: their Google resources wait for the APIs."""
        return pulumi.ResourceOptions(provider=self.provider)
