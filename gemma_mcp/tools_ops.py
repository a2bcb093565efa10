"""Tools that read a stack's cloud project: preflight before `pulumi up`, status and logs after.

Why in process (unlike health and bench): these are short read-only calls whose functions already return
typed reports and print nothing, and the Google client is injectable (`ServerContext.google`), so tests
point it at a local fake of Google's APIs just as the CLI's tests do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations

from gemma_mcp.context import ServerContext
from gemma_mcp.results import LogsRun, PreflightRun, StatusRun
from gemma_mcp.stack_files import require_stack
from gemma_mcp.tools_stacks import reply
from verify import UsageError
from verify.ops.google import ADC_SETUP_COMMAND, CannotCheckError, GoogleApis
from verify.ops.live_state import live_rows
from verify.ops.logs import parse_since, run_logs, unreadable_report
from verify.ops.preflight import run_preflight, unchecked_report
from verify.ops.readiness import probe_readiness
from verify.ops.stack import OpsStack, load_ops_stack
from verify.ops.status import StatusReport, run_status, unknown_report, watch_status

MAX_WATCH_S = 900.0
WATCH_INTERVAL_S = 15.0
MAX_LOG_LINES = 500

_R = TypeVar("_R")

READS_THE_PROJECT = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=True)


def _load(ctx: ServerContext, stack: str, project: str | None) -> OpsStack:
    try:
        return load_ops_stack(require_stack(ctx.root, stack), root=ctx.root, project=project)
    except UsageError as error:
        raise ToolError(str(error)) from None


def _with_google(ctx: ServerContext, work: Callable[[GoogleApis], _R], cannot: Callable[[str], _R]) -> _R:
    """Run `work` with a Google client; without credentials, the command's own "cannot check" report."""
    try:
        with ctx.google() as apis:
            return work(apis)
    except CannotCheckError as error:
        return cannot(str(error))


def _ops_result(ctx: ServerContext, summary: list[str], found: PreflightRun | StatusRun | LogsRun) -> CallToolResult:
    return reply(ctx, "\n".join(summary), found)


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="preflight",
        annotations=READS_THE_PROJECT,
        description=(
            "Before `pulumi up`: checks the stack's Google Cloud project for what would make the deploy fail or "
            "wait: the APIs it enables (and whether the deployer may enable them), the deployer's IAM permissions "
            "(each missing one with the role that grants it), Cloud Run GPU/CPU/memory quotas or TPU v6e chip "
            "quota against what the stack needs (limit, usage, need, where to ask for more), and for TPU the v6e "
            "quota, offer and runtime in every v6e zone for flex-start, spot and guaranteed, ranked "
            "(report.tpu_capacity), with each of the stack's tpu.placements checked. Read-only calls with the user's "
            "Application Default Credentials: free, a few seconds. exit_code 1: a blocker; 2: could not check "
            "(e.g. no credentials: the report says the command that sets them up). project overrides gcp:project."
        ),
    )
    async def preflight(stack: str, project: str | None = None) -> Annotated[CallToolResult, PreflightRun]:
        ops = _load(ctx, stack, project)
        report = await asyncio.to_thread(
            _with_google,
            ctx,
            lambda apis: run_preflight(ops, apis),
            lambda reason: unchecked_report(ops, reason, ADC_SETUP_COMMAND),
        )
        findings = report.model_dump(mode="json").get("findings", [])
        lines = [f"preflight {stack}: exit {report.exit_code}"]
        capacity = report.tpu_capacity
        if capacity is not None:
            lines.append(f"  TPU zones and tiers ({capacity.source}): {capacity.ranked_answer}")
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

        def look(apis: GoogleApis) -> StatusReport:
            def once() -> StatusReport:
                return run_status(ops, apis, probe=probe_readiness)

            if watch_s == 0:
                return once()
            return watch_status(once, timeout_s=watch_s, interval_s=min(WATCH_INTERVAL_S, watch_s))

        report = await asyncio.to_thread(
            _with_google, ctx, look, lambda reason: unknown_report(ops, reason, ADC_SETUP_COMMAND)
        )
        lines = [f"status {stack}: {report.state.value}: {report.summary}"]
        lines += [f"{name}: {value}" for name, value in live_rows(report)]
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
        report = await asyncio.to_thread(
            _with_google,
            ctx,
            lambda apis: run_logs(ops, apis, since_s=since_s, errors_only=errors_only, limit=limit),
            lambda reason: unreadable_report(ops, since_s=since_s, problem=reason, fix=ADC_SETUP_COMMAND),
        )
        lines = [f"logs {stack}: {len(report.lines)} lines since {report.since}, {len(report.diagnoses)} recognised"]
        lines += [f"  {d.signature} (x{d.count}): {d.explanation} -> {d.fix}" for d in report.diagnoses]
        if report.problem:
            lines.append(f"could not read: {report.problem} -> {report.fix}")
        found = LogsRun(stack=stack, exit_code=report.exit_code, passed=report.exit_code == 0, report=report)
        return _ops_result(ctx, lines, found)
