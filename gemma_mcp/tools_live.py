"""Tools that ask a serving endpoint one question or read its live counters: query and metrics.

Like health and bench, each runs `python -m verify ... --json` as a child process (see `runner`), so the
agent gets what a person gets from the CLI, with the same target resolution, credential and bounds.
"""

from __future__ import annotations

import math
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from gemma_mcp.context import ServerContext
from gemma_mcp.results import MetricsRun, QueryRun, report_reader
from gemma_mcp.tools_stacks import reply
from gemma_mcp.verify_calls import TALKS_TO_ENDPOINT, command_run, target_args
from verify.metrics.reading import MetricsReport
from verify.query.run import QueryReport

MAX_QUERY_TOKENS = 4096
MAX_PROMPT_CHARS = 200_000
MAX_QUERY_DEADLINE_S = 600.0
DEFAULT_QUERY_DEADLINE_S = 120.0
MAX_WINDOW_S = 600.0
# Time the child may take beyond the request's own deadline or the window (start-up, target resolution).
SLACK_S = 60.0


def register(server: MCPServer, ctx: ServerContext) -> None:
    @server.tool(
        name="query",
        annotations=TALKS_TO_ENDPOINT,
        description=(
            "Ask an endpoint one prompt as a streamed chat completion and get the answer with its numbers: "
            "TTFT, output tokens/s, usage (prompt, completion and reasoning tokens), finish reason and the model "
            "that answered. Give stack (a deployed stack) or url (+ model). reasoning='hide' leaves the "
            f"model's reasoning out of the answer (its tokens still count). Bounds: max_tokens <= {MAX_QUERY_TOKENS}, "
            f"deadline_s <= {MAX_QUERY_DEADLINE_S:.0f} (default {DEFAULT_QUERY_DEADLINE_S:.0f}). Cost: one request; "
            "on a scaled-to-zero Cloud Run service it starts an instance (billed while it runs). passed=false "
            "with exit_code 1: the request failed (report.cause says why); 2: unreachable or unauthorised."
        ),
    )
    async def query(
        prompt: str,
        *,
        stack: str | None = None,
        url: str | None = None,
        model: str | None = None,
        max_tokens: int = 256,
        deadline_s: float = DEFAULT_QUERY_DEADLINE_S,
        reasoning: str = "show",
        system: str | None = None,
    ) -> Annotated[CallToolResult, QueryRun]:
        if not prompt.strip() or len(prompt) > MAX_PROMPT_CHARS:
            raise ToolError(f"prompt: give 1..{MAX_PROMPT_CHARS} characters of text")
        if not 1 <= max_tokens <= MAX_QUERY_TOKENS:
            raise ToolError(f"max_tokens: {max_tokens} is outside 1..{MAX_QUERY_TOKENS}")
        if not (math.isfinite(deadline_s) and 0 < deadline_s <= MAX_QUERY_DEADLINE_S):
            raise ToolError(f"deadline_s: {deadline_s} is outside 0..{MAX_QUERY_DEADLINE_S:.0f} seconds")
        if reasoning not in {"show", "hide"}:
            raise ToolError(f"reasoning: {reasoning!r} is not one of 'show', 'hide'")
        args = [
            "query",
            *await target_args(ctx, stack, url, model),
            "--max-tokens",
            str(max_tokens),
            "--deadline",
            f"{deadline_s:g}",
            "--reasoning",
            reasoning,
            *(["--system", system] if system else []),
            "--json",
            "--",
            prompt,
        ]
        completed = await ctx.run_module("verify", args, timeout_s=deadline_s + SLACK_S)
        # The prompt is the user's text: the recorded command names it by length, not in full.
        shown = [*args[:-1], f"<prompt: {len(prompt)} characters>"]
        found = command_run(ctx, ["python", "-m", "verify", *shown], completed, QueryRun, report_reader(QueryReport))
        return reply(ctx, _query_summary(found), found)

    @server.tool(
        name="metrics",
        annotations=TALKS_TO_ENDPOINT,
        description=(
            "Read vLLM's own /metrics (with the same credential as health): requests running and waiting, "
            "KV-cache usage, prefix-cache hits, preemptions, TTFT/queue/ITL/end-to-end means and percentiles "
            "(each percentile as the histogram bucket it falls in), speculative-decoding acceptance overall and "
            "per draft position. Without window_s: one read, totals since the server started; with window_s "
            f"(<= {MAX_WINDOW_S:.0f}): two reads that far apart, that window only. The report states which. "
            "Give stack or url. Cost: free (no generation), but a scaled-to-zero service starts an instance."
        ),
    )
    async def metrics(
        *,
        stack: str | None = None,
        url: str | None = None,
        model: str | None = None,
        window_s: float | None = None,
    ) -> Annotated[CallToolResult, MetricsRun]:
        if window_s is not None and not (math.isfinite(window_s) and 0 < window_s <= MAX_WINDOW_S):
            raise ToolError(f"window_s: {window_s} is outside 0..{MAX_WINDOW_S:.0f} seconds")
        args = [
            "metrics",
            *await target_args(ctx, stack, url, model),
            *(["--window", f"{window_s:g}"] if window_s is not None else []),
            "--json",
        ]
        completed = await ctx.run_module("verify", args, timeout_s=(window_s or 0.0) + SLACK_S)
        found = command_run(ctx, ["python", "-m", "verify", *args], completed, MetricsRun, report_reader(MetricsReport))
        return reply(ctx, _metrics_summary(found), found)


def _query_summary(run: QueryRun) -> str:
    report = run.report
    if report is None:
        return f"query: FAIL (exit {run.exit_code}) {run.message or ''}".rstrip()
    head = "query: answered" if run.passed else f"query: FAIL (exit {run.exit_code}): {report.cause}"
    numbers = (
        f"TTFT {_ms(report.ttft_ms)}, {_num(report.output_tokens_per_s)} output tok/s, "
        f"usage prompt {report.prompt_tokens} / completion {report.completion_tokens} / "
        f"reasoning {report.reasoning_tokens}, finish {report.finish_reason}, "
        f"model {report.served_model}"
    )
    return "\n".join([head, numbers, report.answer or ""])


def _metrics_summary(run: MetricsRun) -> str:
    report = run.report
    if report is None:
        return f"metrics: FAIL (exit {run.exit_code}) {run.message or ''}".rstrip()
    window = report.window
    seconds = f", {window.seconds} s" if window.seconds else ""
    lines = [
        (
            f"metrics ({window.kind}{seconds}): "
            f"running {report.running}, waiting {report.waiting}, KV cache "
            f"{report.kv_cache_usage}, prefix-cache hit rate {report.prefix_cache_hit_rate}, "
            f"preemptions {report.preemptions}"
        )
    ]
    for name, found in report.latency.items():
        lines.append(f"  {name}: n={found.count} mean {_ms(found.mean_ms)}")
    spec = report.spec_decode
    if spec:
        lines.append(f"  spec decode acceptance {spec.acceptance_rate}, by position {spec.acceptance_by_position}")
    return "\n".join(lines)


def _ms(value: object) -> str:
    return f"{value:.1f} ms" if isinstance(value, int | float) else "-"


def _num(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "-"
