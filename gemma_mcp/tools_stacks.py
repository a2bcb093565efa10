"""Tools about the stacks themselves: which exist, what a stack would create, whether it fits, what it exports."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from gemma_mcp.context import ServerContext
from gemma_mcp.results import Fit, Outputs, Plan, PlannedResource, StackList
from gemma_mcp.stack_files import require_stack, stack_names, summarise
from serving.outputs import contract_problems

PLAN_TIMEOUT_S = 180.0
# Keys of the preview's JSON document that are not resources, outputs or notes: extra plan sections.
_PLAN_CORE_KEYS = {"stack", "project", "offline", "notes", "resources", "outputs"}
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def reply(ctx: ServerContext, summary: str, result: Any) -> CallToolResult:  # noqa: ANN401 - any result model
    """A short text for the agent to read and the structured result, both scrubbed of secret values."""
    structured = ctx.redactor.data(result.model_dump(mode="json"))
    return CallToolResult(
        content=[TextContent(type="text", text=ctx.redactor.text(summary))], structured_content=structured
    )


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="stacks",
        annotations=READ_ONLY,
        description=(
            "List this project's stacks (Pulumi.<name>.yaml) with accelerator, platform, region, zone and model, "
            "and whether each stack file is valid (with the problems if not). Use it first, to learn the stack "
            "names the other tools take. Reads local files only: instant, free."
        ),
    )
    def stacks() -> Annotated[CallToolResult, StackList]:
        found = StackList(stacks=[summarise(ctx.root, name) for name in stack_names(ctx.root)])
        lines = [
            f"{s.name}: {s.accelerator} on {s.platform} in {s.zone or s.region}, model {s.served_model_name}"
            if s.valid
            else f"{s.name}: INVALID ({'; '.join(s.problems)})"
            for s in found.stacks
        ]
        return reply(ctx, "\n".join(lines) or "no stack files", found)

    @server.tool(
        name="plan",
        annotations=READ_ONLY,
        description=(
            "The offline plan of one stack: every Google Cloud resource `pulumi up` would create (type, name, "
            "parent), the stack outputs, the full `vllm serve` command line, notes on manual steps, and the "
            "preview's extra sections (capacity, cost where shown). Runs the real program under Pulumi's mocks: "
            "no credentials, no cloud calls, no cost; takes a few seconds. It is not `pulumi preview`: no diff "
            "against what is deployed. Pass detail=true for every resource's inputs (large). A stack file with "
            "mistakes returns the same messages as `make preview`."
        ),
    )
    async def plan(stack: str, detail: bool = False) -> Annotated[CallToolResult, Plan]:
        document = await _preview(ctx, require_stack(ctx.root, stack))
        resources = document.get("resources", [])
        outputs = document.get("outputs", {})
        found = Plan(
            stack=stack,
            project=str(document.get("project", "")),
            resource_count=len(resources),
            resources=[PlannedResource(type=r["type"], name=r["name"], parent=r.get("parent")) for r in resources],
            outputs=outputs,
            notes=list(document.get("notes", [])),
            vllm_command=outputs.get("vllmArgs"),
            sections={key: value for key, value in document.items() if key not in _PLAN_CORE_KEYS},
            inputs={r["name"]: r.get("inputs", {}) for r in resources} if detail else None,
        )
        kinds: dict[str, int] = {}
        for resource in found.resources:
            kinds[resource.type] = kinds.get(resource.type, 0) + 1
        summary = [f"stack {stack}: {found.resource_count} resources"]
        summary += [f"  {count} x {kind}" for kind, count in sorted(kinds.items())]
        summary += [f"note: {note}" for note in found.notes]
        return reply(ctx, "\n".join(summary), found)

    @server.tool(
        name="fit",
        annotations=READ_ONLY,
        description=(
            "The capacity planner's verdict for one stack: do the weights fit the accelerator, how much KV cache "
            "is left, how many full-length sequences fit at once, and the errors or warnings for its settings "
            "(docs/capacity-planning.md explains the numbers). Use it before changing maxModelLen, maxNumSeqs, "
            "the model or the accelerator. Offline: a few seconds, free."
        ),
    )
    async def fit(stack: str) -> Annotated[CallToolResult, Fit]:
        document = await _preview(ctx, require_stack(ctx.root, stack))
        capacity: dict[str, Any] = document.get("capacity") or {}
        errors = [str(item) for item in capacity.get("errors", [])]
        warnings = [str(item) for item in capacity.get("warnings", [])]
        verdict = "does not fit" if errors else ("fits, with warnings" if warnings else "fits")
        found = Fit(stack=stack, verdict=verdict, errors=errors, warnings=warnings, capacity=capacity)
        summary = [f"stack {stack}: {verdict}"]
        if "capacityTokens" in capacity:
            summary.append(
                f"KV cache holds {capacity['capacityTokens']:,} tokens: {capacity.get('maxConcurrency')} sequences of "
                f"{capacity.get('maxModelLen'):,} tokens at once (maxNumSeqs {capacity.get('maxNumSeqs')})"
            )
        summary += [f"error: {item}" for item in errors] + [f"warning: {item}" for item in warnings]
        return reply(ctx, "\n".join(summary), found)

    @server.tool(
        name="outputs",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True),
        description=(
            "The outputs of a DEPLOYED stack from its Pulumi state (endpoint, served model name, auth kind, "
            "service or queued-resource names, image, ...). Secret outputs are listed by name, never by value. "
            "Needs the Pulumi CLI logged in to the stack's backend; reads state only: free, a few seconds. "
            "Use `plan` instead for a stack that is not deployed."
        ),
    )
    def outputs(stack: str) -> Annotated[CallToolResult, Outputs]:
        values = ctx.pulumi.outputs(require_stack(ctx.root, stack))
        problems = contract_problems(values.values)
        platform = values.values.get("platform")
        found = Outputs(
            stack=stack,
            outputs=values.values,
            secret_outputs=values.secret_names,
            platform=platform if isinstance(platform, str) else None,
            contract_problems=problems,
        )
        summary = f"stack {stack}: endpoint {values.values.get('endpoint', '(none)')}, {len(values.values)} outputs"
        if problems:
            summary += (
                f"; {len(problems)} not as serving/outputs.py declares (deployed by an older version? run "
                f"`pulumi up`): " + "; ".join(problems)
            )
        return reply(ctx, summary, found)


async def _preview(ctx: ServerContext, stack: str) -> dict[str, Any]:
    completed = await ctx.run_module("preview", ["--stack", stack, "--format", "json"], timeout_s=PLAN_TIMEOUT_S)
    if completed.timed_out:
        raise ToolError(f"the offline plan of {stack!r} did not finish within {PLAN_TIMEOUT_S:.0f} s")
    if completed.exit_code != 0:
        raise ToolError(completed.stderr_tail(ctx.redactor) or f"preview exited {completed.exit_code}")
    try:
        document: dict[str, Any] = json.loads(completed.stdout)
    except json.JSONDecodeError:
        raise ToolError(f"the offline plan of {stack!r} did not print JSON") from None
    return document
