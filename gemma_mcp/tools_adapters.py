"""The `adapters` tool: the LoRA adapters a server has loaded, whether one answers as itself, and (with
--allow-changes) promoting a gated version.

Like query, it runs `python -m verify adapters ... --json` as a child process, so the agent gets what the CLI
prints, with the same target resolution, credential and bounds. list and check only read; neither can load
or unload an adapter (the server refuses those routes). promote writes the stack's route table after the
version's gate, so it is offered only when the server was started with --allow-changes, on a stack (its
route table is the stack's `adapterRoutes` output, never a path the caller names) and with confirm=<stack>.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations

from gemma_mcp.change_gate import confirmed_stack_change
from gemma_mcp.context import ServerContext
from gemma_mcp.results import AdaptersRun, report_reader
from gemma_mcp.tools_stacks import reply
from gemma_mcp.verify_calls import TALKS_TO_ENDPOINT, command_run, target_args
from serving.adapter_routes_runtime import ADAPTER_NAME, is_version_label, split_versioned
from verify.adapters.promote import PromotionsReport
from verify.adapters.run import AdapterCheckReport, AdapterListing

MAX_PROBES = 8
MAX_PROBE_CHARS = 4000
MAX_PROBE_TOKENS = 512
TIMEOUT_S = 300.0
# A promotion checks the version, writes the table, then waits the replicas' refresh before asking again.
PROMOTE_TIMEOUT_S = 600.0
ACTIONS = ("list", "check", "promote")

# list and check read; promote writes the route table (promoting the version that already serves changes
# nothing). Without --allow-changes promote is refused, so the tool is honestly read-only there.
PROMOTES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True)


def _checked_name(action: str, name: str | None) -> None:
    if (action == "list") != (name is None):
        raise ToolError("name: give it with action='check' or 'promote' only")
    if name is None:
        return
    versioned = split_versioned(name) is not None
    if name.startswith("-") or not (ADAPTER_NAME.match(name) or versioned):
        raise ToolError(f"name: {name!r} is not an adapter name (lowercase letters, digits, '-'; or NAME@VERSION)")
    if action == "promote" and versioned:
        raise ToolError("name: promote takes the adapter's public name; give the version as `version`")


def _promote_args(ctx: ServerContext, stack: str | None, url: str | None, confirm: str | None) -> list[str]:
    """The target of a promotion: a stack the caller confirmed, on a server that allows changes."""
    name = confirmed_stack_change(
        ctx,
        stack,
        url,
        confirm,
        action="action='promote'",
        what_it_changes="writes the stack's adapter route table (it moves users to another adapter version)",
        why_a_stack="the route table is the stack's",
        refusal="promote routes an adapter of stack {name} to a new version",
    )
    return ["--stack", name]


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="adapters",
        annotations=PROMOTES if ctx.allow_changes else TALKS_TO_ENDPOINT,
        description=(
            "LoRA adapters on a serving endpoint. action='list': the base models and adapter versions it has "
            "loaded, which run now, and the stack's declared adapters not loaded yet (they load on first "
            "request). action='check' with name (an adapter, or NAME@VERSION for one version): sends its probes "
            "(the stack file's, or prompts) under that name and under the base at temperature 0, and reads its "
            "config and tensors; passed=true when it answers as itself, differs from the base, contains each "
            "expected text and fits the model. action='promote' with name and stack (only when the server was "
            "started with --allow-changes, and with confirm=<stack name>): gates the declared version (or "
            "`version`) under NAME@VERSION on the running service and only if it passes routes NAME to it in "
            "the stack's route table; a failed gate changes nothing and says why; rollback=true routes NAME "
            "back to the version it replaced. Bounds: <= "
            f"{MAX_PROBES} prompts of <= {MAX_PROBE_CHARS} characters, max_tokens <= {MAX_PROBE_TOKENS}. Cost: "
            "two short requests per probe. list and check are read-only: they cannot load or unload adapters."
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
        version: str | None = None,
        rollback: bool = False,
        confirm: str | None = None,
    ) -> Annotated[CallToolResult, AdaptersRun]:
        if action not in ACTIONS:
            raise ToolError(f"action: {action!r} is not one of {', '.join(map(repr, ACTIONS))}")
        _checked_name(action, name)
        if (version is not None or rollback) and action != "promote":
            raise ToolError("version and rollback: give them with action='promote' only")
        if version is not None and (rollback or not is_version_label(version)):
            raise ToolError(f"version: {version!r} is not a version label (or give rollback=true instead)")
        given = prompts or []
        if len(given) > MAX_PROBES or any(not p.strip() or len(p) > MAX_PROBE_CHARS for p in given):
            raise ToolError(f"prompts: at most {MAX_PROBES}, each 1..{MAX_PROBE_CHARS} characters")
        if not 1 <= max_tokens <= MAX_PROBE_TOKENS:
            raise ToolError(f"max_tokens: {max_tokens} is outside 1..{MAX_PROBE_TOKENS}")
        if action == "promote":
            target = [*_promote_args(ctx, stack, url, confirm), *(["--model", model] if model else [])]
        else:
            target = await target_args(ctx, stack, url, model)
        args = [
            "adapters",
            action,
            *([name] if name is not None else []),
            *target,
            "--max-tokens",
            str(max_tokens),
            *[part for prompt in given for part in ("--prompt", prompt)],
            *(["--expect", expect] if expect else []),
            *(["--version", version] if version else []),
            *(["--rollback"] if rollback else []),
            "--json",
        ]
        timeout = PROMOTE_TIMEOUT_S if action == "promote" else TIMEOUT_S
        completed = await ctx.run_module("verify", args, timeout_s=timeout)
        command = ["python", "-m", "verify", *args]
        if action == "list":
            listed = command_run(
                ctx, command, completed, AdaptersRun, report_reader(AdapterListing), into="listing", action=action
            )
            loaded = ", ".join(a.name for a in listed.listing.loaded) if listed.listing else "unknown"
            return reply(ctx, f"adapters: loaded {loaded or 'none'}", listed)
        if action == "promote":
            promoted = command_run(
                ctx, command, completed, AdaptersRun, report_reader(PromotionsReport), into="promotion", action=action
            )
            outcomes = promoted.promotion.promotions if promoted.promotion else []
            said = "; ".join(
                f"{p.adapter} -> {p.version}: "
                + (
                    "already serving"
                    if p.already_serving
                    else "promoted"
                    if p.promoted and not p.problems
                    else "refused"
                )
                + (f" ({p.problems[0]})" if p.problems else "")
                for p in outcomes
            )
            return reply(ctx, f"adapters promote {name}: {said or promoted.message or 'no report'}", promoted)
        checked = command_run(
            ctx, command, completed, AdaptersRun, report_reader(AdapterCheckReport), into="check", action=action
        )
        verdict = "PASS" if checked.passed else f"FAIL (exit {checked.exit_code})"
        problems = "; ".join(checked.check.problems) if checked.check else (checked.message or "")
        return reply(ctx, f"adapters check {name}: {verdict} {problems}".rstrip(), checked)
