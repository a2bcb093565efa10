"""Tools about the stacks themselves: which exist, what a stack would create, whether it fits, what it exports."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from gemma_mcp.context import ServerContext
from gemma_mcp.results import Fit, Outputs, Plan, PlannedResource, StackList, json_data
from gemma_mcp.stack_files import require_stack, stack_names, summarise
from serving.workload_choices import context_problem, model_problems, variant_problems

PLAN_TIMEOUT_S = 180.0
# Keys of the preview's JSON document that are not resources, outputs or notes: extra plan sections.
_PLAN_CORE_KEYS = {"stack", "project", "offline", "notes", "resources", "outputs", "printed"}
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def reply(ctx: ServerContext, summary: str, result: pydantic.BaseModel) -> CallToolResult:
    """A short text for the agent to read and the structured result, both scrubbed of secret values; the
    result as the SDK publishes its schema (by alias, without computed fields: see gemma_mcp/results.py)."""
    structured = ctx.redactor.data(result.model_dump(mode="json", by_alias=True, exclude_computed_fields=True))
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
            "parent), the stack outputs, the full `vllm serve` command line, notes on manual steps, the cost and "
            "the capacity with the planner's warnings as `make preview` prints them, and the preview's extra "
            "sections. Runs the real program under Pulumi's mocks: no credentials, no cloud calls, no cost; takes a "
            "few seconds. It is not `pulumi preview`: no diff against what is deployed. Pass detail=true for every "
            "resource's inputs (large). A stack file with mistakes returns the same messages as `make preview`."
        ),
    )
    async def plan(stack: str, detail: bool = False) -> Annotated[CallToolResult, Plan]:
        document = await _preview(ctx, require_stack(ctx.root, stack))
        resources = document.get("resources", [])
        outputs: dict[str, Any] = document.get("outputs", {})
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
        # What the CLI prints besides the resources: the cost (with its rates' sources) and the capacity
        # (with the planner's warnings), the same lines.
        printed: dict[str, list[str]] = document.get("printed") or {}
        for section in ("cost", "capacity"):
            summary += [line for line in printed.get(section, []) if line]
        summary += [f"note: {note}" for note in found.notes]
        return reply(ctx, "\n".join(summary), found)

    @server.tool(
        name="fit",
        annotations=READ_ONLY,
        description=(
            "The capacity planner's verdict. For one stack: do the weights fit the accelerator, how much KV cache "
            "is left, how many full-length sequences fit at once, and the errors or warnings for its settings "
            "(docs/capacity-planning.md explains the numbers). Without a stack file: pass model (a catalog id such "
            "as gemma-4-31b-it), shape (one `make matrix` compares: a Cloud Run GPU such as l4, a TPU slice, or a GKE "
            "GPU machine type; serving/data/shapes.json) and optionally variant (bf16, "
            "qat-w4a16-ct, qat-q4_0-unquantized, fp8, nvfp4...; default all) and the workload's context_tokens, "
            "output_tokens and reused_tokens (prompt tokens each request shares with earlier ones, which the prefix "
            "cache serves; default 0): it answers as `make matrix` does (fits or why not, KV tokens, sequences, "
            "price per hour, prefill/decode ceilings and cost per 1M output tokens at the ceiling). Offline: "
            "seconds, free."
        ),
    )
    async def fit(  # noqa: PLR0917 - MCP tools take their arguments by name; the signature is the schema
        stack: str | None = None,
        model: str | None = None,
        variant: str | None = None,
        shape: str | None = None,
        context_tokens: int = 8192,
        output_tokens: int = 1024,
        reused_tokens: int = 0,
    ) -> Annotated[CallToolResult, Fit]:
        if stack is None:
            return await _catalog_fit(ctx, model, variant, shape, (context_tokens, output_tokens, reused_tokens))
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
        reading = ctx.pulumi.outputs(require_stack(ctx.root, stack))
        problems = reading.problems
        found = Outputs(
            stack=stack,
            outputs=reading.outputs,
            other_outputs=json_data(reading.other_values),
            secret_outputs=list(reading.secret_names),
            platform=reading.outputs.platform,
            contract_problems=problems,
        )
        summary = f"stack {stack}: endpoint {reading.outputs.endpoint or '(none)'}, {len(reading.values)} outputs"
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


async def _catalog_fit(
    ctx: ServerContext,
    model: str | None,
    variant: str | None,
    shape: str | None,
    tokens: tuple[int, int, int],
) -> CallToolResult:
    """`fit` without a stack: the catalog's answer for a model (and variant) on a shape (preview/matrix.py)."""
    if not model or not shape:
        raise ToolError(
            "fit needs a stack, or a model (catalog id) and a shape (`make matrix --help` lists them: Cloud Run GPUs, "
            "TPU slices, GKE GPU machine types)"
        )
    context_tokens, output_tokens, reused_tokens = tokens
    # A typo is a tool error naming the argument and what is allowed, never "does not fit" (serving/workload_choices).
    problems = [
        *model_problems([model], flag="model"),
        *variant_problems([model], [variant] if variant else [], flag="variant"),
        context_problem(context_tokens, output_tokens, [model], flag="context_tokens"),
    ]
    if refused := [problem for problem in problems if problem]:
        raise ToolError("; ".join(refused))
    args = ["--model", model, "--shape", shape, "--context", str(context_tokens), "--output", str(output_tokens)]
    args += ["--reused-tokens", str(reused_tokens)] if reused_tokens else []
    args += ["--variant", variant] if variant else []
    completed = await ctx.run_module("preview.matrix", [*args, "--format", "json"], timeout_s=PLAN_TIMEOUT_S)
    if completed.timed_out:
        raise ToolError(f"the fit of {model} on {shape} did not finish within {PLAN_TIMEOUT_S:.0f} s")
    if completed.exit_code != 0:
        raise ToolError(completed.stderr_tail(ctx.redactor) or f"preview.matrix exited {completed.exit_code}")
    rows: list[dict[str, Any]] = json.loads(completed.stdout)["rows"]
    fitting = [row for row in rows if row["fits"]]
    verdict = "fits" if fitting else "does not fit"
    errors = [f"{row['model']} {row['variant']} on {row['shape']}: {row['whyNot']}" for row in rows if not row["fits"]]
    warnings = [f"{row['model']} {row['variant']}: {w}" for row in fitting for w in row["warnings"]]
    found = Fit(stack=None, verdict=verdict, errors=errors, warnings=warnings, capacity={}, combinations=rows)
    summary = [f"{model} on {shape} ({context_tokens:,} context + {output_tokens:,} output tokens): {verdict}"]
    for row in fitting:
        ceilings = row["ceilings"]
        summary.append(
            f"  {row['variant']}: {row['kvTokens']:,} KV tokens, {row['sequences']} requests at once, "
            f"${row['usdPerHour']}/h; ceilings (not measurements): prefill {ceilings['prefillTokensPerS']:,} tok/s, "
            f"decode {ceilings['decodeTokensPerS']:,} tok/s, ${ceilings['usdPerMillionOutputTokens']}/1M output tokens"
        )
    summary += [f"  no: {item}" for item in errors]
    return reply(ctx, "\n".join(summary), found)
