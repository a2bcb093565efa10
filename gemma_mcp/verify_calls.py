"""How a tool calls a verify command that reads an endpoint: the target it names, and the run it reports.

Why one module: the health, bench, query, metrics and adapters tools all point verify at a stack or a vetted
URL and read back what it printed with `--json`; each tool module used to borrow these helpers from
`tools_verify` by their private names, so a change there broke tools nobody was editing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from gemma_mcp.context import ServerContext
from gemma_mcp.results import CommandRun
from gemma_mcp.runner import Completed
from gemma_mcp.stack_files import require_stack, stack_names
from gemma_mcp.urls import check_url

EXIT_USAGE = 2
# What a tool that reads a serving endpoint is: read-only, and open-world (it reaches a server).
TALKS_TO_ENDPOINT = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)


async def target_args(ctx: ServerContext, stack: str | None, url: str | None, model: str | None) -> list[str]:
    """The arguments that point a verify command at a stack (`--stack NAME`) or at a vetted URL; exactly one."""
    if (stack is None) == (url is None):
        raise ToolError("give exactly one of stack (a deployed stack's name) or url (an endpoint's base URL)")
    if stack is not None:
        return ["--stack", require_stack(ctx.root, stack), *(["--model", model] if model else [])]
    assert url is not None
    checked = await asyncio.to_thread(
        check_url, url, stack_endpoints=lambda: stack_endpoints(ctx), allow_any=ctx.allow_any_url
    )
    # Vetted above (loopback, a stack's endpoint, or --allow-any-url): verify's own guard need not re-refuse a
    # private stack endpoint; it still refuses the metadata server whatever the flag.
    return ["--url", checked, "--allow-private-url", *(["--model", model] if model else [])]


def stack_endpoints(ctx: ServerContext) -> list[str]:
    """The URLs this project's deployed stacks export (endpoint, candidateUrl); stacks not readable are skipped."""
    found: list[str] = []
    for name in stack_names(ctx.root):
        try:
            outputs = ctx.pulumi.outputs(name).outputs
        except (ToolError, KeyError):
            continue
        # The outputs whose values are URLs of the stack's server (serving/outputs.py).
        found += [url for url in (outputs.endpoint, outputs.candidate_url) if url]
    return found


_Run = TypeVar("_Run", bound=CommandRun)


def command_run(
    ctx: ServerContext,
    command: list[str],
    completed: Completed,
    run: type[_Run],
    read: Callable[[str], object],
    *,
    into: str = "report",
    **fields: object,
) -> _Run:
    """The run as ``run`` (each tool's own type, with its other ``fields``), its report read by ``read`` from
    the JSON `--json` printed (the command's own report model) into the field ``into``; none when it printed
    none or not that shape."""
    try:
        document = read(completed.stdout) if completed.stdout.strip() else None
    except ValueError:  # not JSON, or not the report's shape (pydantic.ValidationError is a ValueError)
        document = None
    if document is None and not completed.timed_out and completed.exit_code == EXIT_USAGE:
        # A usage error: the CLI's own one-line message is the answer.
        raise ToolError(completed.stderr_tail(ctx.redactor) or "verify refused the arguments")
    tail = completed.stderr_tail(ctx.redactor)
    return run.model_validate(
        {
            "command": command,
            "exit_code": completed.exit_code,
            "passed": completed.exit_code == 0 and not completed.timed_out,
            "timed_out": completed.timed_out,
            into: document,
            "message": tail.splitlines()[-1] if tail else None,
            **fields,
        }
    )
