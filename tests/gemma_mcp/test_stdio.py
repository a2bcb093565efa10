"""The server as an agent CLI starts it: a child process speaking MCP over stdio, one real handshake."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from preview.stack_file import available_stacks
from tests.gemma_mcp.conftest import ROOT


async def test_stdio_server_handshakes_lists_tools_and_answers() -> None:
    """`python -m gemma_mcp` must start, complete the MCP handshake and answer a tool call over stdio."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "gemma_mcp"], cwd=str(ROOT))
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("stacks", {})
    assert {"stacks", "plan", "fit", "health", "bench", "compare", "outputs"} <= names
    assert not names & {"deploy", "destroy", "run_weight_import"}
    assert {entry["name"] for entry in result.structured_content["stacks"]} == set(available_stacks(ROOT))


async def test_the_console_script_works_for_a_client_that_passes_no_cwd(tmp_path: Path) -> None:
    """A client that starts `gemma-mcp` from its own folder, with no cwd and no PYTHONPATH, must still find
    the project's stacks and judge them valid (it used to die with `No module named gemma_mcp`, or call
    every stack invalid by resolving paths against its own working directory)."""
    script = Path(sys.executable).with_name("gemma-mcp")
    environment = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "GEMMA_SERVING_ROOT"}}
    params = StdioServerParameters(command=str(script), args=[], cwd=str(tmp_path), env=environment)
    async with Client(params) as client:
        result = await client.call_tool("stacks", {})
    stacks = {entry["name"]: entry for entry in result.structured_content["stacks"]}
    assert stacks["l4"]["valid"] is True
    assert stacks["tpu-v6e"]["valid"] is True
