"""Tools that change the cloud: deploy, destroy, re-run a weight import. Registered only with --allow-changes.

Why so guarded: an agent acts on its reading of a conversation, and these cost money or delete things.
So they do not exist unless a person started the server with `--allow-changes`, each one refuses to act
unless `confirm` repeats the stack's name, and each goes through the Automation API (verify/pulumi_gateway.py),
which applies the same program, policy and state as a person's `pulumi up`, and reports what changed.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations

from gemma_mcp.context import ServerContext
from gemma_mcp.import_runs import import_run_urn
from gemma_mcp.promotion import POLICY_PACK_DIR, promotion_outcome, promotion_verdict
from gemma_mcp.results import Change, PromoteRun, PromotionRun, json_data
from gemma_mcp.stack_files import require_stack
from gemma_mcp.tools_stacks import reply
from verify.pulumi_gateway import ChangeSummary

# `verify promote` runs health, a short bench and up to one `pulumi up` per traffic step.
PROMOTE_TIMEOUT_S = 3600.0
OUTPUT_TAIL_CHARS = 4000

EXIT_USAGE = 2

CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)


def confirmed(ctx: ServerContext, stack: str, confirm: str | None, action: str) -> str:
    """The stack name, once the caller has typed it again as `confirm`; anything else is refused."""
    require_stack(ctx.root, stack)
    if confirm != stack:
        raise ToolError(
            f"refused: {action} changes cloud resources of stack {stack!r}; call again with confirm={stack!r} "
            "once the user has agreed (run `plan` first to see what the stack contains)"
        )
    return stack


def _change(ctx: ServerContext, stack: str, operation: str, summary: ChangeSummary) -> CallToolResult:
    found = Change(
        stack=stack,
        operation=operation,
        result=summary.result,
        resource_changes=summary.resource_changes,
        outputs=summary.outputs.outputs,
        other_outputs=json_data(summary.outputs.other_values),
        secret_outputs=list(summary.outputs.secret_names),
    )
    changes = ", ".join(f"{count} {kind}" for kind, count in sorted(summary.resource_changes.items())) or "none"
    return reply(ctx, f"{operation} of stack {stack}: {summary.result}; resources: {changes}", found)


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="deploy",
        annotations=CHANGES,
        description=(
            "`pulumi up` of one stack through the Automation API, with the project's program and state: creates "
            "or updates the stack's Google Cloud resources and runs pending weight imports. COSTS MONEY: GPU "
            "instances or a TPU node bill while they exist. Takes minutes (tens of minutes for a first deploy or "
            "a TPU queued resource). Requires confirm set to the stack's name, after the user agreed; run `plan` "
            "and `preflight` first. Returns Pulumi's summary of what changed and the non-secret outputs."
        ),
    )
    async def deploy(stack: str, confirm: str | None = None) -> Annotated[CallToolResult, Change]:
        name = confirmed(ctx, stack, confirm, "deploy")
        return _change(ctx, name, "deploy", await asyncio.to_thread(ctx.pulumi.up, name))

    @server.tool(
        name="destroy",
        annotations=CHANGES,
        description=(
            "`pulumi destroy` of one stack through the Automation API: deletes the service or TPU node and the "
            "stack's other resources (the model bucket stays if it holds weights, unless bucket.forceDestroy is "
            "set; see docs/deploying.md, 'Tear a stack down'). Stops the stack's billing; cannot be undone. "
            "Takes minutes. Requires confirm set to the stack's name, after the user agreed."
        ),
    )
    async def destroy(stack: str, confirm: str | None = None) -> Annotated[CallToolResult, Change]:
        name = confirmed(ctx, stack, confirm, "destroy")
        return _change(ctx, name, "destroy", await asyncio.to_thread(ctx.pulumi.destroy, name))

    @server.tool(
        name="run_weight_import",
        annotations=CHANGES,
        description=(
            "Run one checkpoint's weight import job again (role 'target' for the model, 'drafter' for the MTP "
            "drafter), by having Pulumi replace the command that executes it: the job copies the pinned Hugging "
            "Face revision into the model bucket, skipping what is already complete. Use it after weights were "
            "deleted or an import failed. Costs a Cloud Run job's CPU time and bucket writes (minutes). Requires "
            "confirm set to the stack's name."
        ),
    )
    async def run_weight_import(
        stack: str, role: str = "target", confirm: str | None = None
    ) -> Annotated[CallToolResult, Change]:
        name = confirmed(ctx, stack, confirm, "run_weight_import")
        urns = await asyncio.to_thread(ctx.pulumi.resource_urns, name)
        urn = import_run_urn(urns, name, role)
        summary = await asyncio.to_thread(ctx.pulumi.up, name, replace=[urn], target=[urn])
        return _change(ctx, name, f"weight import {role}", summary)

    @server.tool(
        name="promote",
        annotations=CHANGES,
        description=(
            "Gated rollout of a Cloud Run stack (`gemma-verify promote`): after `deploy` the new revision waits "
            "under the `candidate` tag with 0% of the traffic; this runs verify health and a short bench (slo "
            "entries such as 'p90_ttft_ms=2000'; a p99 needs 368 requests per cell) against the candidate's own "
            "URL and, only if both pass, moves "
            "traffic to it through `pulumi up` (steps such as [10, 50, 100] re-check health between them). On a "
            "failure traffic is left as it was (exit_code 1). rollback=true sends all traffic back to the "
            "previous revision. Changes who serves users; takes minutes; the bench is real load on the candidate. "
            "Requires confirm set to the stack's name."
        ),
    )
    async def promote(
        stack: str,
        confirm: str | None = None,
        steps: list[int] | None = None,
        slo: list[str] | None = None,
        rollback: bool = False,
    ) -> Annotated[CallToolResult, PromoteRun]:
        name = confirmed(ctx, stack, confirm, "promote")
        if steps is not None and (not steps or steps[-1] != 100 or any(not 0 < step <= 100 for step in steps)):
            raise ToolError(f"steps: {steps} must be percentages in 1..100 ending with 100, e.g. [10, 50, 100]")
        args = [
            "promote",
            "--stack",
            name,
            "--json",
            *(["--policy-pack", str(ctx.root / POLICY_PACK_DIR)] if ctx.policy_pack else []),
            *(["--rollback"] if rollback else []),
            *(["--steps", ",".join(map(str, steps))] if steps else []),
            *[part for entry in slo or [] for part in ("--slo", entry)],
        ]
        with ctx.load_slot.hold(f"a promotion of {name} (its bench gate loads the candidate)"):
            completed = await ctx.run_module("verify", args, timeout_s=PROMOTE_TIMEOUT_S)
        outcome = promotion_outcome(completed.stdout)
        if completed.exit_code == EXIT_USAGE and not completed.timed_out and outcome is None:
            raise ToolError(completed.stderr_tail(ctx.redactor) or "verify promote refused the arguments")
        tail = completed.stderr_tail(ctx.redactor)
        found = PromoteRun(
            command=["python", "-m", "verify", *args],
            exit_code=completed.exit_code,
            passed=completed.exit_code == 0 and not completed.timed_out and outcome is not None,
            timed_out=completed.timed_out,
            report=PromotionRun(
                outcome=outcome, output=ctx.redactor.tail(completed.stdout + completed.stderr, OUTPUT_TAIL_CHARS)
            ),
            message=tail.splitlines()[-1] if tail else None,
        )
        verdict = promotion_verdict(outcome, completed.exit_code, timed_out=completed.timed_out)
        return reply(ctx, f"{verdict}: stack {name}" + (f"\n{found.message}" if found.message else ""), found)
