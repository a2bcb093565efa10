"""The server as an agent CLI starts it: a child process speaking MCP over stdio, one real handshake."""

from __future__ import annotations

import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.gemma_mcp.conftest import ROOT


async def test_stdio_server_handshakes_lists_tools_and_answers() -> None:
    """`python -m gemma_mcp` must start, complete the MCP handshake and answer a tool call over stdio."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "gemma_mcp"], cwd=str(ROOT))
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("stacks", {})
    assert {"stacks", "plan", "fit", "health", "bench", "compare", "outputs"} <= names
    assert not names & {"deploy", "destroy", "run_weight_import"}
    assert {entry["name"] for entry in result.structured_content["stacks"]} == {
        "l4",
        "rtx6000",
        "tpu-v6e",
        "gke-l4x4",
        "gke-tpu-v6e",
    }
