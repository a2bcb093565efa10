"""Tools that talk to a serving endpoint: health, a bounded benchmark, and comparing two benchmarks.

Each runs `python -m verify ...` as a child process with `--json` (see `runner` for why), so the agent
gets exactly what a person gets from the CLI, and each is bounded in time and load by the caps below.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Annotated

import pydantic
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ToolAnnotations

from gemma_mcp.bench_cloud import CLOUD_RUN_JOB, LOCAL, cloud_run_job_stack
from gemma_mcp.compare_runs import compare_runs
from gemma_mcp.context import ServerContext
from gemma_mcp.files import OutsideError, inside
from gemma_mcp.results import (
    BenchRun,
    ComparedCell,
    Comparison,
    DeltaResult,
    HealthRun,
    report_reader,
)
from gemma_mcp.tools_stacks import reply
from gemma_mcp.verify_calls import TALKS_TO_ENDPOINT, command_run, target_args
from verify.bench import compare as comparing
from verify.bench.caveats import untrusted_reason, untrusted_summary
from verify.bench.matrix import DEFAULT_ACTIVE_HOURS
from verify.bench.results import CellRecord, ResultsFileError, load_results
from verify.health.report import HealthReport
from verify.numbers import percent, readable

# Caps on what one agent call may ask of a server (and of the user's bill); stated in the descriptions.
MAX_WAIT_S = 1800.0
# From the agent's machine (gemma_mcp/bench_cloud.py has these and the load-generator job's larger ones).
MAX_USERS = LOCAL.max_users
MAX_CELLS = LOCAL.max_cells
MAX_REQUESTS_PER_CELL = LOCAL.max_requests_per_cell
MAX_OUTPUT_TOKENS = LOCAL.max_output_tokens
MAX_CONTEXT_TOKENS = 131072
MAX_BENCH_WALL_S = LOCAL.max_wall_s
DEFAULT_BENCH_WALL_S = 300.0
# Time a health run may take beyond its readiness wait (the chat checks, the metrics scrape).
HEALTH_SLACK_S = 300.0
# A command-line flag in a message (`--allow-untrusted`): meaningless to an agent calling a tool.
_CLI_FLAG = re.compile(r"(?<![\w-])--[a-z]")


# `verify bench --json` prints the new cells' records, one JSON list.
_CELLS: pydantic.TypeAdapter[list[CellRecord]] = pydantic.TypeAdapter(list[CellRecord])


def _check_each(name: str, values: list[int], *, cap: int) -> None:
    if not values:
        raise ToolError(f"{name}: give at least one value")
    for value in values:
        if not 1 <= value <= cap:
            raise ToolError(f"{name}: {value} is outside 1..{cap} (this tool's cap; use the CLI for larger sweeps)")


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="health",
        annotations=TALKS_TO_ENDPOINT,
        description=(
            "Prove an endpoint serves: waits for /health, checks the served model name, vLLM version, one chat "
            "answer, one streamed answer and /metrics, each with what was expected and what came back. Give "
            "stack (a deployed stack: reads its outputs with the Pulumi CLI) or url (+ model). Use it after a "
            "rollout, or first when anything looks wrong. Cost: a few tiny requests; on a scaled-to-zero Cloud "
            f"Run service it starts one instance (billed while it runs). Time: up to wait_s (cap {MAX_WAIT_S:.0f} s) "
            "plus a few seconds. passed=false with exit_code 1: a check failed; 2: unreachable or unauthorised."
        ),
    )
    async def health(
        *,
        stack: str | None = None,
        url: str | None = None,
        model: str | None = None,
        wait_s: float = 60.0,
        max_tokens: int | None = None,
    ) -> Annotated[CallToolResult, HealthRun]:
        if not 0 <= wait_s <= MAX_WAIT_S:
            raise ToolError(f"wait_s: {wait_s} is outside 0..{MAX_WAIT_S:.0f} seconds")
        if max_tokens is not None and not 1 <= max_tokens <= MAX_OUTPUT_TOKENS:
            raise ToolError(f"max_tokens: {max_tokens} is outside 1..{MAX_OUTPUT_TOKENS}")
        args = [
            "health",
            *await target_args(ctx, stack, url, model),
            "--wait",
            f"{wait_s:g}",
            *(["--max-tokens", str(max_tokens)] if max_tokens is not None else []),
            "--json",
        ]
        completed = await ctx.run_module("verify", args, timeout_s=wait_s + HEALTH_SLACK_S)
        found = command_run(ctx, ["python", "-m", "verify", *args], completed, HealthRun, report_reader(HealthReport))
        return reply(ctx, _health_summary(found), found)

    @server.tool(
        name="bench",
        annotations=TALKS_TO_ENDPOINT,
        description=(
            "Benchmark an endpoint with a closed-loop sweep of concurrency x context (streamed requests, exact "
            "prompt lengths the prefix cache cannot serve, output length forced): TTFT, TPOT, ITL, E2EL "
            "percentiles, request and token throughput, failures by class, per cell. Caps per call: concurrency "
            f"<= {MAX_USERS} users, at most {MAX_CELLS} cells, requests per cell <= {MAX_REQUESTS_PER_CELL}, "
            f"max_tokens <= {MAX_OUTPUT_TOKENS}, wall time <= {MAX_BENCH_WALL_S:.0f} s (default "
            f"{DEFAULT_BENCH_WALL_S:.0f} s; at the cap the run stops and keeps the finished cells). Cost: real "
            "load on the server: a Cloud Run service may scale out to its maxInstances GPU instances for the "
            "whole run (each billed per second while up); a TPU node bills the same whether loaded or not. "
            "slo entries like 'p95_ttft_ms=2000' or 'success_rate=0.99' make passed=false when violated (a percentile "
            "needs its requests per cell: p90 36, p95 72, p99 368; the default count rises to it). Returns "
            "each cell's record and the paths of the JSONL, CSV, Markdown and PNG reports (read the Markdown and "
            "PNG through the bench:// resources). on_cloud_run=true (a stack with a bench block; only when the "
            "server was started with --allow-changes, and with confirm=<stack name>) generates the load from the "
            f"stack's Cloud Run load-generator job instead: up to {CLOUD_RUN_JOB.max_users} users, "
            f"{CLOUD_RUN_JOB.max_cells} cells, {CLOUD_RUN_JOB.max_requests_per_cell} requests per cell, wall time "
            f"<= {CLOUD_RUN_JOB.max_wall_s:.0f} s; it bills the job's tasks too, and returns the merged results."
        ),
    )
    async def bench(
        *,
        stack: str | None = None,
        url: str | None = None,
        model: str | None = None,
        concurrency: list[int] | None = None,
        context: list[int] | None = None,
        max_tokens: int = 128,
        requests_per_cell: int | None = None,
        slo: list[str] | None = None,
        wall_time_s: float = DEFAULT_BENCH_WALL_S,
        on_cloud_run: bool = False,
        confirm: str | None = None,
    ) -> Annotated[CallToolResult, BenchRun]:
        caps = CLOUD_RUN_JOB if on_cloud_run else LOCAL
        if on_cloud_run:
            stack = cloud_run_job_stack(ctx, stack, url, confirm)
        users = concurrency or [1, 8]
        contexts = context or [128, 1024]
        _check_each("concurrency", users, cap=caps.max_users)
        _check_each("context", contexts, cap=MAX_CONTEXT_TOKENS)
        if len(users) * len(contexts) > caps.max_cells:
            raise ToolError(f"{len(users)} x {len(contexts)} cells is more than this tool's cap of {caps.max_cells}")
        if not 1 <= max_tokens <= caps.max_output_tokens:
            raise ToolError(f"max_tokens: {max_tokens} is outside 1..{caps.max_output_tokens}")
        requests = (
            requests_per_cell if requests_per_cell is not None else min(caps.max_requests_per_cell, 4 * max(users))
        )
        if not 1 <= requests <= caps.max_requests_per_cell:
            raise ToolError(f"requests_per_cell: {requests} is outside 1..{caps.max_requests_per_cell}")
        if not 0 < wall_time_s <= caps.max_wall_s:
            raise ToolError(f"wall_time_s: {wall_time_s} is outside 0..{caps.max_wall_s:.0f} seconds")
        ctx.bench_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S-%f")
        results = ctx.bench_dir / f"bench-{stamp}.jsonl"
        args = [
            "bench",
            *await target_args(ctx, stack, url, model),
            "--concurrency",
            ",".join(map(str, users)),
            "--context",
            ",".join(map(str, contexts)),
            "--max-tokens",
            str(max_tokens),
            "--requests",
            str(requests),
            "--output",
            str(results),
            "--no-progress",
            "--json",
            *[part for entry in slo or [] for part in ("--slo", entry)],
            *(["--on-cloud-run"] if on_cloud_run else []),
        ]
        with ctx.load_slot.hold("a bench run"):
            completed = await ctx.run_module("verify", args, timeout_s=wall_time_s)
        run = command_run(
            ctx,
            ["python", "-m", "verify", *args],
            completed,
            BenchRun,
            _CELLS.validate_json,
            results_file=str(results),
            report_files=sorted(str(path) for path in results.parent.glob(f"{results.stem}.*") if path != results),
            caps=caps.as_dict(wall_time_s),
        )
        if on_cloud_run:
            # The merged results are in the file (the job's tasks measured; this process only merged them).
            run = run.model_copy(update={"report": load_results(results).records})
        return reply(ctx, _bench_summary(run), run)

    @server.tool(
        name="compare",
        annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
        description=(
            "Compare two bench results files (JSONL, e.g. before and after a change: MTP off vs on, a new image): "
            "per cell (context x concurrency) B's change against A for throughput and latency percentiles, each "
            "judged better, worse or noise (within the two runs' own spread). Refuses files whose requests differ "
            "in output tokens or API unless allow_mismatch. Paths are relative to the project root (the bench tool "
            "returns them). With more files (more=[...], or matrix=true for two): each file is one stack's run, "
            "compared per workload with cost per 1M requests and output tokens, monthly cost always on and scaled "
            "to zero (active_hours a day), break-even active hours, and the cheapest run meeting slo (e.g. "
            "['p99_ttft_ms=2000']); untrusted cells are marked and left out. Local files only: instant, free."
        ),
    )
    def compare(
        a: str,
        b: str,
        *,
        allow_mismatch: bool = False,
        more: list[str] | None = None,
        matrix: bool = False,
        slo: list[str] | None = None,
        active_hours: float = DEFAULT_ACTIVE_HOURS,
    ) -> Annotated[CallToolResult, Comparison]:
        path_a, path_b = _results_path(ctx, a, "a"), _results_path(ctx, b, "b")
        if more or matrix:
            paths = [path_a, path_b, *(_results_path(ctx, given, "more") for given in more or [])]
            return compare_runs(ctx, paths, slo or [], active_hours)
        records_a, records_b = _records(path_a, "a"), _records(path_b, "b")
        mismatches = comparing.workload_mismatches(records_a, records_b)
        refused = [mismatch.describe() for mismatch in mismatches if mismatch.refused]
        if refused and not allow_mismatch:
            raise ToolError(
                "a and b measured different workloads: " + "; ".join(refused) + " (allow_mismatch to compare anyway)"
            )
        rows = comparing.compare(records_a, records_b)
        markdown = comparing.markdown(
            rows,
            a_name=path_a.name,
            b_name=path_b.name,
            a_desc=comparing.describe_side(records_a),
            b_desc=comparing.describe_side(records_b),
            mismatches=mismatches,
        )
        cells = [
            ComparedCell(
                context=row.context,
                concurrency=row.concurrency,
                status=row.status() or "compared",
                deltas={
                    delta.field: DeltaResult(a=delta.a, b=delta.b, change=delta.change, verdict=delta.verdict)
                    for delta in row.deltas
                },
            )
            for row in rows
        ]
        found = Comparison(a=str(path_a), b=str(path_b), cells=cells, markdown=markdown)
        return reply(ctx, markdown, found)


def _results_path(ctx: ServerContext, given: str, name: str) -> Path:
    """A results file inside the project root (relative paths start there) or, given absolute, inside the
    bench results folder the server writes to (which may lie outside the root)."""
    wanted = Path(given)
    folders = [ctx.root, ctx.bench_results] if wanted.is_absolute() else [ctx.root]
    refused: OutsideError | None = None
    for folder in folders:
        try:
            path = inside(folder, wanted)
            break
        except OutsideError as error:
            refused = refused or error
    else:
        raise ToolError(
            f"{name}: {given!r} is outside the project root or reached through a symlink ({refused}); give a "
            "path inside it"
        ) from None
    if path.suffix != ".jsonl" or not path.is_file():
        raise ToolError(f"{name}: {given!r} is not a bench results file (.jsonl) in the project")
    return path


def _records(path: Path, name: str) -> list[CellRecord]:
    """A side's cells, each line checked as the CLI checks it: a line verify could not have written is refused."""
    try:
        return load_results(path).records
    except ResultsFileError as exc:
        raise ToolError(f"{name}: {exc}") from None


def _health_summary(run: HealthRun) -> str:
    head = "health: PASS" if run.passed else f"health: FAIL (exit {run.exit_code})"
    lines = [head]
    checks = run.report.checks if run.report is not None else []
    lines.extend(
        f"  {check.status.value}: {check.name.value}" + (f" ({check.cause})" if check.cause else "") for check in checks
    )
    if run.message and not run.passed:
        lines.append(run.message)
    return "\n".join(lines)


def _without_cli_flags(message: str) -> str:
    """A CLI message without its advice clauses that name flags: the agent calls a tool, not the CLI."""
    kept = [clause for clause in message.split("; ") if not _CLI_FLAG.search(clause)]
    return "; ".join(kept)


def _cell_line(cell: CellRecord) -> str:
    where = f"  context {cell.requested_context} x {cell.load}: "
    if not cell.measured:
        return where + f"skipped ({cell.skip_reason})"
    numbers = (
        f"{readable(cell.request_throughput)} req/s, p99 TTFT {readable(cell.p99_ttft_ms)} ms, "
        f"success {percent(cell.success_rate)}"
    )
    reason = untrusted_reason(cell)
    return where + numbers + (f" ({reason})" if reason else "")


def _bench_summary(run: BenchRun) -> str:
    """PASS/FAIL with the untrusted cells counted on the same line (a PASS on numbers the client made up
    must not read as a clean one), one rounded line per cell, and the CLI's message without flag names."""
    cells = run.report or []
    head = (
        "bench: PASS"
        if run.passed
        else f"bench: FAIL (exit {run.exit_code}{', stopped at the wall-time cap' if run.timed_out else ''})"
    )
    untrusted = untrusted_summary(cells)
    lines = [head + (f", {untrusted}" if untrusted else ""), f"results: {run.results_file}"]
    lines.extend(_cell_line(cell) for cell in cells)
    if untrusted:
        lines.append(
            "untrusted cells' latencies include the load generator's own delay (this machine was short of CPU): "
            "fewer users per cell, or a run from a machine with CPU to spare, gives numbers to trust"
        )
    if run.message and not run.passed:
        shown = _without_cli_flags(run.message)
        if shown:
            lines.append(shown)
    return "\n".join(lines)
