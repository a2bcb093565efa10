"""Which resource in a stack's state re-runs a checkpoint's weight import (for `pulumi up --replace`).

The server talks to Pulumi only through verify/pulumi_gateway.py (`AutomationGateway`); this module reads
the URNs that gateway returns.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp.server.mcpserver.exceptions import ToolError

from serving.naming import StackNames

# The weight import of a checkpoint re-runs by replacing the pulumi-command resource that executes the job.


def import_run_urn(urns: Sequence[str], stack: str, role: str) -> str:
    """The URN of the command that runs a checkpoint's import job (serving/naming.py, `import_run`)."""
    names = StackNames(stack)
    matches = [urn for urn in urns if urn.endswith(f"::{names.import_run(role)}")]
    if not matches:
        roles = sorted(
            {found for urn in urns if (found := names.import_role_of_run(urn.rsplit("::", 1)[-1])) is not None}
        )
        raise ToolError(
            f"stack {stack!r} has no weight import {role!r} in its state; imports it has: {', '.join(roles) or 'none'}"
        )
    return matches[0]
