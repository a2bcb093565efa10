"""The `adapters` tool: the LoRA adapters a server has loaded, or whether one answers as itself (read-only).

Like query, it runs `python -m verify adapters ... --json` as a child process, so the agent gets what the CLI
prints, with the same target resolution, credential and bounds; it can neither load nor unload an adapter.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from gemma_mcp.context import ServerContext
from gemma_mcp.results import AdaptersRun, report_reader
from gemma_mcp.tools_stacks import reply
from gemma_mcp.tools_verify import TALKS_TO_ENDPOINT, _report, _target_args
from verify.adapters.run import AdapterCheckReport, AdapterListing

MAX_PROBES = 8
MAX_PROBE_CHARS = 4000
MAX_PROBE_TOKENS = 512
TIMEOUT_S = 300.0


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="adapters",
        annotations=TALKS_TO_ENDPOINT,
        description=(
            "LoRA adapters on a serving endpoint. action='list': the base models and adapters it has loaded, "
            "which run now, and the stack's declared adapters not loaded yet (they load on first request). "
            "action='check' with name: sends the adapter's probes (the stack file's, or prompts) under its name "
            "and under the base at temperature 0; passed=true when it answers under its name, differs from the "
            f"base and contains each expected text. Bounds: <= {MAX_PROBES} prompts of <= {MAX_PROBE_CHARS} "
            f"characters, max_tokens <= {MAX_PROBE_TOKENS}. Cost: two short requests per probe. Read-only: it "
            "cannot load or unload adapters (the server refuses those routes)."
        ),
    )
    async def adapters(
        action: str,
        *,
        name: str | None = None,
        stack: str | None = None,
        url: str | None = None,
        model: str | None = None,
        prompts: list[str] | None = None,
        expect: str | None = None,
        max_tokens: int = 64,
    ) -> Annotated[CallToolResult, AdaptersRun]:
        if action not in {"list", "check"}:
            raise ToolError(f"action: {action!r} is not one of 'list', 'check'")
        if (action == "check") != (name is not None):
            raise ToolError("name: give it with action='check' only")
        if name is not None and (not name or name.startswith("-")):
            raise ToolError(f"name: {name!r} is not an adapter name (it must not be empty or start with '-')")
        given = prompts or []
        if len(given) > MAX_PROBES or any(not p.strip() or len(p) > MAX_PROBE_CHARS for p in given):
            raise ToolError(f"prompts: at most {MAX_PROBES}, each 1..{MAX_PROBE_CHARS} characters")
        if not 1 <= max_tokens <= MAX_PROBE_TOKENS:
            raise ToolError(f"max_tokens: {max_tokens} is outside 1..{MAX_PROBE_TOKENS}")
        args = [
            "adapters",
            action,
            *([name] if name is not None else []),
            *await _target_args(ctx, stack, url, model),
            "--max-tokens",
            str(max_tokens),
            *[part for prompt in given for part in ("--prompt", prompt)],
            *(["--expect", expect] if expect else []),
            "--json",
        ]
        completed = await ctx.run_module("verify", args, timeout_s=TIMEOUT_S)
        command = ["python", "-m", "verify", *args]
        if action == "list":
            listed = _report(
                ctx, command, completed, AdaptersRun, report_reader(AdapterListing), into="listing", action=action
            )
            loaded = ", ".join(a.name for a in listed.listing.loaded) if listed.listing else "unknown"
            return reply(ctx, f"adapters: loaded {loaded or 'none'}", listed)
        checked = _report(
            ctx, command, completed, AdaptersRun, report_reader(AdapterCheckReport), into="check", action=action
        )
        verdict = "PASS" if checked.passed else f"FAIL (exit {checked.exit_code})"
        problems = "; ".join(checked.check.problems) if checked.check else (checked.message or "")
        return reply(ctx, f"adapters check {name}: {verdict} {problems}".rstrip(), checked)
