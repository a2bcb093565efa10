"""Tools that read a stack's cloud project: preflight before `pulumi up`, status and logs after.

Why in process (unlike health and bench): these are short read-only calls whose functions already return
typed reports and print nothing, and the Google client is injectable (`ServerContext.google`), so tests
point it at a local fake of Google's APIs just as the CLI's tests do.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations

from gemma_mcp.context import ServerContext
from gemma_mcp.results import LogsRun, PreflightRun, StatusRun
from gemma_mcp.stack_files import require_stack
from gemma_mcp.tools_stacks import reply
from verify import UsageError
from verify.ops import commands
from verify.ops.live_state import live_rows
from verify.ops.logs import parse_since
from verify.ops.stack import OpsStack, load_ops_stack
from verify.ops.status import StatusReport

MAX_WATCH_S = 900.0
WATCH_INTERVAL_S = 15.0
MAX_LOG_LINES = 500

READS_THE_PROJECT = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)


def _load(ctx: ServerContext, stack: str, project: str | None) -> OpsStack:
    try:
        return load_ops_stack(require_stack(ctx.root, stack), root=ctx.root, project=project)
    except UsageError as error:
        raise ToolError(str(error)) from None


def _cold_start_lines(report: StatusReport) -> list[str]:
    """The newest start's phases in the tool's text, as `verify status` prints them: an agent asked "why was the
    first request slow" reads the slow phase without parsing the structured report."""
    measured = report.cold_start
    if measured is None:
        return [report.cold_start_problem] if report.cold_start_problem else []
    phases = ", ".join(f"{phase.name} {phase.seconds:.1f} s" for phase in measured.phases)
    slowest = measured.slowest
    total = f"cold start of {measured.source}: {measured.total_s:.1f} s ({phases})"
    return [f"{total}; slowest: {slowest.name} {slowest.seconds:.1f} s"]


def _ops_result(ctx: ServerContext, summary: list[str], found: PreflightRun | StatusRun | LogsRun) -> CallToolResult:
    return reply(ctx, "\n".join(summary), found)


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="preflight",
        annotations=READS_THE_PROJECT,
        description=(
            "Before `pulumi up`: checks the stack's Google Cloud project for what would make the deploy fail or "
            "wait: the APIs it enables (and whether the deployer may enable them), the deployer's IAM permissions "
            "(each missing one with the role that grants it), Cloud Run GPU/CPU/memory quotas or TPU chip quota "
            "against what the stack needs (limit, usage, need, where to ask for more), and for TPU the quota, offer "
            "and runtime in every zone that offers the stack's TPU generation, for flex-start, spot and guaranteed, "
            "ranked (report.tpu_availability), with each of the stack's tpu.placements checked. Read-only calls "
            "with the user's Application Default Credentials: free, a few seconds. exit_code 1: a blocker; 2: "
            "could not check (e.g. no credentials: the report says the command that sets them up). project "
            "overrides gcp:project."
        ),
    )
    async def preflight(stack: str, project: str | None = None) -> Annotated[CallToolResult, PreflightRun]:
        ops = _load(ctx, stack, project)
        report = await asyncio.to_thread(commands.preflight, ops, open_apis=ctx.google)
        findings = report.model_dump(mode="json").get("findings", [])
        lines = [f"preflight {stack}: exit {report.exit_code}"]
        availability = report.tpu_availability
        if availability is not None:
            lines.append(f"  TPU zones and tiers ({availability.source}): {availability.ranked_answer}")
        lines += [
            f"  {f['verdict']}: {f['area']} {f['item']}: {f['detail']}" + (f" -> {f['fix']}" if f.get("fix") else "")
            for f in findings
            if f["verdict"] != "pass"
        ]
        found = PreflightRun(stack=stack, exit_code=report.exit_code, passed=report.exit_code == 0, report=report)
        return _ops_result(ctx, lines, found)

    @server.tool(
        name="status",
        annotations=READS_THE_PROJECT,
        description=(
            "After `pulumi up`: the deployment's state. Cloud Run: ready condition, latest created vs ready "
            "revision, traffic (a gated candidate at 0% included), the failing revision's reason, instances (and how "
            "many are active or idle now, from Cloud Monitoring), URL. A flex-start TPU node: when it ends. "
            "TPU: the queued resource's state with its reason and the time left before its deadline, the node's "
            "state and endpoint. Then one /health poll of the endpoint. watch_s > 0 follows a rollout until it is "
            f"ready or failed (at most {MAX_WATCH_S:.0f} s, a look every {WATCH_INTERVAL_S:.0f} s). Read-only: free. "
            "Use `logs` next when it is not ready."
        ),
    )
    async def status(
        stack: str, project: str | None = None, watch_s: float = 0.0
    ) -> Annotated[CallToolResult, StatusRun]:
        if not 0 <= watch_s <= MAX_WATCH_S:
            raise ToolError(f"watch_s: {watch_s} is outside 0..{MAX_WATCH_S:.0f} seconds")
        ops = _load(ctx, stack, project)

        options = (
            commands.StatusOptions(watch=True, timeout_s=watch_s, interval_s=min(WATCH_INTERVAL_S, watch_s))
            if watch_s > 0
            else commands.StatusOptions()
        )
        report = await asyncio.to_thread(commands.status, ops, options, open_apis=ctx.google)
        lines = [f"status {stack}: {report.state.value}: {report.summary}"]
        lines += [f"{name}: {value}" for name, value in live_rows(report)]
        lines += _cold_start_lines(report)
        if report.fix:
            lines.append(f"fix: {report.fix}")
        found = StatusRun(stack=stack, exit_code=report.exit_code, passed=report.exit_code == 0, report=report)
        return _ops_result(ctx, lines, found)

    @server.tool(
        name="logs",
        annotations=READS_THE_PROJECT,
        description=(
            "The vLLM container's recent log lines from Cloud Logging (the Cloud Run revisions and weight import "
            "jobs, or the TPU VM's startup script and container), with known failures recognised and explained "
            "with their fix (startup probe too short, CUDA out of memory, KV cache too small for max-model-len, "
            "driver/CUDA mismatch, GCS FUSE permission denied, model path not found, Hugging Face 401/404, ...). "
            f"since like '30m', '1h', '2d'; errors_only for errors and recognised failures; at most {MAX_LOG_LINES} "
            "lines. Read-only: Cloud Logging reads are free within its quota; a few seconds."
        ),
    )
    async def logs(
        stack: str, project: str | None = None, since: str = "1h", errors_only: bool = False, limit: int = 200
    ) -> Annotated[CallToolResult, LogsRun]:
        try:
            since_s = parse_since(since)
        except ValueError as error:
            raise ToolError(f"since: {error}") from None
        if not 1 <= limit <= MAX_LOG_LINES:
            raise ToolError(f"limit: {limit} is outside 1..{MAX_LOG_LINES}")
        ops = _load(ctx, stack, project)
        options = commands.LogsOptions(since_s=since_s, errors_only=errors_only, limit=limit)
        report = await asyncio.to_thread(commands.logs, ops, options, open_apis=ctx.google)
        lines = [f"logs {stack}: {len(report.lines)} lines since {report.since}, {len(report.diagnoses)} recognised"]
        lines += [f"  {d.signature} (x{d.count}): {d.explanation} -> {d.fix}" for d in report.diagnoses]
        if report.problem:
            lines.append(f"could not read: {report.problem} -> {report.fix}")
        found = LogsRun(stack=stack, exit_code=report.exit_code, passed=report.exit_code == 0, report=report)
        return _ops_result(ctx, lines, found)
