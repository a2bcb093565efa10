"""The MCP server's `plan` tool as an agent calls it after `make venv` alone: `gemma-mcp` over stdio, one call.

Why: the tool runs the offline preview as a child of the server, so a preview that needs a development-only
package fails for every agent whose user ran only `make venv` (issue 46). .ci/run runs this with the runtime
environment's Python, before anything else is installed; exit 0 when the plan came back, 1 with the reason.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def plan(stack: str) -> str | None:
    """The problem with the tool's answer, or None when it returned the stack's plan."""
    server = Path(sys.executable).with_name("gemma-mcp")
    async with Client(StdioServerParameters(command=str(server), args=[])) as client:
        result = await client.call_tool("plan", {"stack": stack})
    if result.is_error or not result.structured_content:
        return f"the plan tool failed: {result.content}"
    if result.structured_content.get("stack") != stack:
        return f"the plan tool answered for another stack: {result.structured_content.get('stack')!r}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", default="l4", help="the stack to plan (default l4)")
    problem = asyncio.run(plan(parser.parse_args(argv).stack))
    if problem:
        print(problem, file=sys.stderr)
        return 1
    print("the MCP plan tool answered with the plan")
    return 0


if __name__ == "__main__":
    sys.exit(main())
