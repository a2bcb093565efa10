"""The cold-start table `verify status` prints: each phase with its duration, the total and the read rate."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from verify.ops.coldstart import ColdStart
from verify.ops.startup_metric import StartupLatency, latency_rows
from verify.terminal import cell, markup_safe


def cold_start_section(
    measured: ColdStart | None, problem: str | None, latency: StartupLatency | None
) -> list[RenderableType]:
    """What `verify status` prints after the rollout state: the phases (or why not), then Cloud Run's own figure."""
    out: list[RenderableType] = []
    if measured is not None:
        out.append(cold_start_table(measured))
    elif problem:
        out.append(cell(problem))
    if latency is not None:
        rows = Table(
            show_header=False, box=None, title=f"as Cloud Monitoring measured it ({markup_safe(latency.metric)})"
        )
        rows.title_justify = "left"
        rows.add_column("what", style="bold")
        rows.add_column("value", overflow="fold")
        for label, value in latency_rows(latency):
            rows.add_row(label, cell(value))
        out.append(rows)
    return out


def cold_start_table(measured: ColdStart) -> Table:
    """One row per phase (seconds, share of the total, the line that ended it), then the weights' figures."""
    total = measured.total_s
    title = f"cold start of {markup_safe(measured.source)} (started {markup_safe(measured.started_at)})"
    table = Table(title=title, title_justify="left")
    table.add_column("phase", style="bold")
    table.add_column("seconds", justify="right")
    table.add_column("share", justify="right")
    table.add_column("ended by", overflow="fold")
    slowest = measured.slowest.name
    for phase in measured.phases:
        style = "yellow" if phase.name == slowest else ""
        share = f"{phase.seconds / total:.0%}" if total > 0 else "-"
        table.add_row(cell(phase.name, style=style), f"{phase.seconds:.1f}", share, cell(phase.ended_by))
    table.add_row(Text("total", style="bold"), f"{total:.1f}", "", Text(f"slowest: {slowest}"))
    rate = measured.read_bytes_per_s
    if measured.weight_bytes is not None:
        if rate is not None:
            read = f"{rate / 1e6:.0f} MB/s effective"
        else:
            read = "no read rate: " + (
                "no weights phase seen" if measured.phase("weights") is None else "0 s of weights"
            )
        table.add_row(
            "weights read", f"{measured.weight_bytes / 1e9:.2f} GB", "", cell(f"{read} ({measured.bytes_from})")
        )
    for label, seconds in (("torch.compile", measured.torch_compile_s), ("graph capture", measured.graph_capture_s)):
        if seconds is not None:
            table.add_row(label, f"{seconds:.1f}", "", Text("as vLLM reports it (inside the phases above)"))
    if measured.compile_cache is not None:
        table.add_row("compile cache", "", "", cell(measured.compile_cache))
    if measured.missing:
        # The start's own first lines missing (1,210 s once read as 310 s): the total counts from later.
        short = measured.first_milestone not in {"instance-start", "container-start"}
        first = "; the start's first lines are missing, so the total is a lower bound" if short else ""
        table.add_row("not seen", "", "", cell(", ".join(measured.missing) + f" (merged into the next phase){first}"))
    if measured.problems:
        table.add_row(Text("not a whole start", style="bold yellow"), "", "", cell("; ".join(measured.problems)))
    return table
