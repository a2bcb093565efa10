"""The memory tool: vLLM's start-up memory lines beside the plan (verify/memory), read in process like status."""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from gemma_mcp.context import ServerContext
from gemma_mcp.results import MemoryReport
from gemma_mcp.stack_files import require_stack
from gemma_mcp.tools_ops import READS_THE_PROJECT
from gemma_mcp.tools_stacks import reply
from remote.google_errors import CannotCheckError, GoogleApiError
from verify import UsageError
from verify.memory.layout import MemoryLayout, memory_layout
from verify.ops.logs import parse_since
from verify.ops.stack import load_ops_stack
from verify.stack_settings import load_stack_file


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="memory",
        annotations=READS_THE_PROJECT,
        description=(
            "The memory layout of a deployed stack as vLLM measured it at start-up (weights loaded, available KV "
            "cache memory, KV cache size in tokens, maximum concurrency at the max length), read from Cloud "
            "Logging for the newest start-up, beside the planner's prediction with the error. since: how far back "
            "to look (30m, 12h, 7d; default 7d). Read-only; saving a calibration record is the CLI's "
            "`gemma-verify memory --save` (it writes a file in the project)."
        ),
    )
    async def memory(
        stack: str, project: str | None = None, since: str = "7d"
    ) -> Annotated[CallToolResult, MemoryReport]:
        name = require_stack(ctx.root, stack)
        try:
            since_s = parse_since(since)
            ops = load_ops_stack(name, root=ctx.root, project=project)
            loaded = load_stack_file(name, ctx.root)
        except (ValueError, UsageError) as error:
            raise ToolError(str(error)) from None

        def read() -> MemoryLayout:
            with ctx.google() as apis:
                return memory_layout(apis, ops, loaded, since_s=since_s)

        try:
            layout = await asyncio.to_thread(read)
        except (CannotCheckError, GoogleApiError) as error:
            found = MemoryReport(stack=name, exit_code=2, passed=False, report=None, message=str(error))
            return reply(ctx, f"memory {name}: cannot read the logs: {error}", found)
        found = MemoryReport(stack=name, exit_code=layout.exit_code, passed=layout.exit_code == 0, report=layout)
        lines = [
            f"memory {name} ({layout.accelerator}, {layout.checkpoint}) from {layout.source or 'no start-up found'}"
        ]
        lines += [
            f"  {row.quantity}: planned {row.planned}, measured {row.measured} {row.unit}"
            + (f" (error {row.error:+.1%})" if row.error is not None else "")
            for row in layout.rows
        ]
        return reply(ctx, "\n".join(lines), found)
