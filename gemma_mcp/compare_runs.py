"""The compare tool over three or more results files: runs side by side per workload, with cost and a
verdict (verify/bench/matrix.py decides; this only checks the arguments and shapes the answer)."""

from __future__ import annotations

import math
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from gemma_mcp.context import ServerContext
from gemma_mcp.results import Comparison, Workload, WorkloadComparison, WorkloadRun
from gemma_mcp.tools_stacks import reply
from verify import UsageError
from verify.bench.matrix import WorkloadVerdict, judge
from verify.bench.matrix_command import load_runs
from verify.bench.matrix_report import markdown
from verify.bench.slo import parse_slo, with_default_gate

MAX_RUNS = 12


def compare_runs(ctx: ServerContext, paths: list[Path], slo: list[str], active_hours: float) -> CallToolResult:
    if len(paths) > MAX_RUNS:
        raise ToolError(f"at most {MAX_RUNS} results files per call, got {len(paths)}")
    if not (math.isfinite(active_hours) and 0 < active_hours <= 24):
        raise ToolError(f"active_hours: {active_hours} is outside 0..24 hours a day")
    try:
        slos = [parse_slo(text) for text in slo]
        runs = load_runs(paths)
    except (ValueError, UsageError) as error:
        raise ToolError(str(error)) from None
    verdicts = judge(runs, slos)
    slo_text = ", ".join(item.describe() for item in with_default_gate(slos))
    text = markdown(verdicts, active_hours=active_hours, slo_text=slo_text)
    found = Comparison(
        a=str(paths[0]),
        b=str(paths[1]),
        runs=[str(path) for path in paths],
        cells=[_workload(verdict, active_hours) for verdict in verdicts],
        markdown=text,
    )
    return reply(ctx, text, found)


def _workload(verdict: WorkloadVerdict, active_hours: float) -> WorkloadComparison:
    workload = verdict.workload
    return WorkloadComparison(
        workload=Workload(api=workload.api, context=workload.context, max_tokens=workload.max_tokens),
        cheapest=verdict.cheapest.run.label if verdict.cheapest else None,
        reason=verdict.reason,
        runs=[
            WorkloadRun(
                run=run.run.label,
                accelerator=run.run.accelerator,
                chosen_concurrency=run.chosen.record.max_concurrency if run.chosen else None,
                chosen_load=run.chosen.record.load if run.chosen else None,
                cost_per_1m_output_tokens_usd=run.chosen.record.cost_per_1m_output_tokens_usd if run.chosen else None,
                cost_per_1m_requests_usd=run.chosen.record.cost_per_1m_requests_usd if run.chosen else None,
                always_on_monthly_usd=run.run.always_on_monthly_usd(),
                scaled_to_zero_monthly_usd=run.run.scaled_to_zero_monthly_usd(active_hours),
                break_even_active_hours=run.break_even_hours,
                left_out=[f"{cell.record.load}: {cell.mark}" for cell in run.cells if cell.mark],
            )
            for run in verdict.runs
        ],
    )
