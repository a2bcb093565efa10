"""The project's APIs, enabled before anything else, and the Google provider that waits for them.

Why: an empty project needs no hand step. Each API is one `gcp.projects.Service` (never disabled on
destroy); every component of the stack gets options whose explicit provider depends on them.
"""

from __future__ import annotations

import pulumi

from components.project_apis import ProjectApis, ProjectApisArgs
from deploy.context import StackContext


def google_cloud(context: StackContext, apis: tuple[str, ...]) -> pulumi.ResourceOptions:
    """Enable `apis` and return component options whose Google provider waits for them.

    The provider is explicit, so it does not read the stack's other `gcp:*` keys by itself; it takes
    `gcp:project` from the settings and passes on `gcp:impersonateServiceAccount` when set. Credentials
    come from the environment as usual (`gcloud auth application-default login`, GOOGLE_CREDENTIALS).
    """
    project_apis = ProjectApis(
        context.names.project_apis,
        ProjectApisArgs(
            project=context.project,
            apis=apis,
            impersonate_service_account=pulumi.Config("gcp").get("impersonateServiceAccount"),
        ),
    )
    return project_apis.options()
