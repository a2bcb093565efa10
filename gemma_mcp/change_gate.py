"""The gate in front of every MCP action that changes a stack's cloud resources outside `tools_changes`.

Why one function: promoting an adapter and starting a stack's load-generator job must refuse in the same three
ways (the server was not started with --allow-changes; no stack, or a url instead of one; `confirm` does not
repeat the stack's name), and two copies of a safety check drift apart.
"""

from __future__ import annotations

from mcp.server.mcpserver.exceptions import ToolError

from gemma_mcp.context import ServerContext
from gemma_mcp.stack_files import require_stack


def confirmed_stack_change(
    ctx: ServerContext,
    stack: str | None,
    url: str | None,
    confirm: str | None,
    *,
    action: str,
    what_it_changes: str,
    why_a_stack: str,
    refusal: str,
) -> str:
    """The stack's name once every gate passed; `refusal` may name the stack as `{name}`."""
    if not ctx.allow_changes:
        raise ToolError(
            f"{action} {what_it_changes}: it is offered only when the server was started with --allow-changes"
        )
    if stack is None or url is not None:
        raise ToolError(f"{action} needs stack ({why_a_stack}), not url")
    name = require_stack(ctx.root, stack)
    if confirm != name:
        raise ToolError(
            f"refused: {refusal.format(name=repr(name))}; call again with confirm={name!r} once the user has agreed"
        )
    return name
