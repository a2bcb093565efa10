"""The server every tool is registered on: arguments checked by name before any tool runs.

Why a subclass of the SDK's server: the SDK validates an argument's type but drops a name it does not know,
so a misspelt `wait` silently waited the default; and an exception a tool did not turn into a ToolError
reached the agent as a bare "Error executing tool". Here an unknown name is refused with the names the tool
takes, and the input errors verify raises (UsageError, ValueError) reach the agent with their reason.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult

from verify import UsageError

# Exceptions that mean "the input was wrong", whose message is written for the user.
_INPUT_ERRORS = (UsageError, ValueError, OverflowError)


class GuardedServer(MCPServer):
    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Any = None,  # noqa: ANN401 - the SDK's Context, generic in its lifespan
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            allowed = sorted((tool.parameters.get("properties") or {}).keys())
            unknown = sorted(set(arguments) - set(allowed))
            if unknown:
                raise ToolError(
                    f"{name}: unknown argument(s) {', '.join(unknown)}; this tool takes: {', '.join(allowed) or 'none'}"
                )
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as error:
            cause = error.__cause__
            if isinstance(cause, _INPUT_ERRORS):
                raise ToolError(f"{name}: {cause}") from cause
            raise
