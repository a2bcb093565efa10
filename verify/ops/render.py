"""Tables for people, one JSON document for machines: the three ops reports, drawn and nothing decided.

Text from Google or from logs is always passed as `rich.text.Text`, so brackets in it are never markup.
"""

from __future__ import annotations

import sys
from typing import TextIO

import pydantic
from rich.console import Console
from rich.table import Table
from rich.text import Text

from serving.naming import CANDIDATE_TAG
from verify.health.console import stdout_console  # the 120-column console verify health prints with
from verify.ops.coldstart_render import cold_start_section
from verify.ops.findings import Verdict
from verify.ops.gke_status import GkeStatus, PodLine
from verify.ops.live_state import live_rows
from verify.ops.logs import LogsReport
from verify.ops.preflight import PreflightReport
from verify.ops.status import CloudRunStatus, RolloutState, StatusReport, TpuStatus
from verify.ops.tpu_availability import TpuAvailability
from verify.terminal import cell

_VERDICTS: dict[Verdict, tuple[str, str]] = {
    Verdict.PASS: ("PASS", "bold green"),
    Verdict.BLOCKER: ("BLOCKER", "bold red"),
    Verdict.UNCHECKED: ("UNCHECKED", "bold yellow"),
    Verdict.INFO: ("info", "cyan"),
}
_STATES: dict[RolloutState, str] = {
    RolloutState.READY: "bold green",
    RolloutState.IN_PROGRESS: "bold yellow",
    RolloutState.FAILED: "bold red",
    RolloutState.NOT_DEPLOYED: "bold red",
    RolloutState.UNKNOWN: "bold yellow",
}
_EXIT_WORDS = {0: "all clear", 1: "blocked", 2: "could not check everything"}


def print_json(report: pydantic.BaseModel, stream: TextIO | None = None) -> None:
    out = stream if stream is not None else sys.stdout
    out.write(report.model_dump_json(indent=2) + "\n")


def print_preflight(report: PreflightReport, console: Console | None = None) -> None:
    out = console if console is not None else stdout_console()
    where = f"{report.region}" + (f" / {report.zone}" if report.zone else "")
    out.print(
        Text.assemble(
            ("verify preflight ", "bold"), f"{report.stack}: {report.accelerator} in {where}, project {report.project}"
        )
    )
    table = Table(show_header=True, header_style="bold")
    for column in ("area", "item", "result", "details", "fix"):
        table.add_column(column, overflow="fold")
    for finding in report.findings:
        label, style = _VERDICTS[finding.verdict]
        table.add_row(
            cell(finding.area),
            cell(finding.item),
            Text(label, style=style),
            cell(finding.detail),
            cell(finding.fix or ""),
        )
    out.print(table)
    if report.tpu_availability is not None:
        print_tpu_availability(report.tpu_availability, out)
    style = "bold green" if report.exit_code == 0 else "bold red"
    counts = {verdict: sum(1 for f in report.findings if f.verdict is verdict) for verdict in Verdict}
    out.print(
        Text(
            f"{_EXIT_WORDS[report.exit_code]}: {counts[Verdict.BLOCKER]} blocker(s), "
            f"{counts[Verdict.UNCHECKED]} unchecked, {counts[Verdict.PASS]} passed (exit {report.exit_code})",
            style=style,
        )
    )


def print_tpu_availability(capacity: TpuAvailability, out: Console) -> None:
    """Every zone and tier for the stack's slice, best first; `#` is the stack's own placement number."""
    title = f"TPU {capacity.accelerator_type} ({capacity.chips} chip(s)) by zone and tier, ranked ({capacity.source})"
    table = Table(show_header=True, header_style="bold", title=title)
    for column in ("rank", "zone", "tier", "quota", "limit", "in use", "free", "offered", "#", "answer"):
        table.add_column(column, overflow="fold")
    for row in capacity.rows:
        can = {True: ("yes", "green"), False: ("no", "red"), None: ("?", "yellow")}[row.grantable]
        offered = {True: "yes", False: "no", None: "?"}
        table.add_row(
            str(row.rank),
            cell(row.zone),
            cell(row.tier),
            cell(row.quota),
            _number(row.limit),
            _number(row.usage),
            Text(_number(row.free), style=can[1]),
            f"{offered[row.offers_slice]}/{offered[row.offers_runtime]}",
            str(row.placement or ""),
            cell(row.answer),
        )
    out.print(table)
    out.print(cell(f"source: {capacity.source_note}", style="dim" if capacity.source == "live" else "yellow"))


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    return "unlimited" if value == -1 else f"{value:g}"


def print_status(report: StatusReport, console: Console | None = None) -> None:
    out = console if console is not None else stdout_console()
    out.print(
        Text.assemble(
            ("verify status ", "bold"),
            f"{report.stack} ({report.platform}, project {report.project}): ",
            (report.state.value.upper(), _STATES[report.state]),
            " (timed out)" if report.timed_out else "",
        )
    )
    table = Table(show_header=False)
    table.add_column("fact", style="bold")
    table.add_column("value", overflow="fold")
    # Every value below may hold Google's, Kubernetes' or a node's text: one escaped line per cell.
    table.add_row("summary", cell(report.summary))
    for name, value in _detail_rows(report.detail):
        if value:
            table.add_row(name, cell(value))
    for name, value in live_rows(report):
        table.add_row(name, cell(value))
    if report.readiness is not None:
        table.add_row("readiness", cell(f"{report.readiness.status}: {report.readiness.summary}"))
    if report.fix:
        table.add_row("next", cell(report.fix))
    out.print(table)
    for part in cold_start_section(report.cold_start, report.cold_start_problem, report.startup_latency):
        out.print(part)


def _detail_rows(detail: CloudRunStatus | TpuStatus | GkeStatus | None) -> list[tuple[str, str | None]]:
    match detail:
        case CloudRunStatus() as run:
            return [
                ("service", run.service),
                ("ready", run.ready),
                ("latest created", run.latest_created_revision or "-"),
                ("latest ready", run.latest_ready_revision or "-"),
                ("traffic", ", ".join(run.traffic) or "-"),
                # The revision behind the gated rollout's tag, named as the tag is.
                (CANDIDATE_TAG, run.candidate_url and f"{run.candidate_revision} at {run.candidate_url}"),
                ("failing revision", run.failing_revision),
                ("reason", run.failing_reason),
                ("message", run.failing_message),
                ("instances", f"min {run.min_instances}, max {run.max_instances}"),
                ("url", run.url or "-"),
            ]
        case TpuStatus() as tpu:
            return [
                ("queued resource", f"{tpu.queued_resource}: {tpu.state}"),
                ("placement", tpu.placement.text() if tpu.placement else None),
                ("left in the list", _list_left(tpu) if tpu.state != "ACTIVE" else None),
                ("reason", tpu.reason),
                ("deadline left", _deadline_text(tpu.deadline_left_s) if tpu.state != "ACTIVE" else None),
                ("valid until", tpu.valid_until),
                ("node", tpu.node_state and f"{tpu.node_state} ({tpu.node_health or 'health not reported'})"),
                ("health", tpu.health_description),
                ("endpoint", tpu.endpoint),
            ]
        case GkeStatus() as gke:
            return [
                ("cluster", f"{gke.cluster}: {gke.cluster_status}"),
                *[("node pool", pool) for pool in gke.node_pools],
                ("deployment", f"{gke.deployment}: {gke.ready_replicas}/{gke.replicas} ready"),
                ("hpa", gke.hpa),
                *[("pod", _pod_text(pod)) for pod in gke.pods],
                *([("gateway", gke.gateway.gateway)] if gke.gateway else []),
                *[("pool", line) for line in (gke.gateway.pools if gke.gateway else [])],
                ("endpoint", gke.endpoint),
            ]
        case None:
            return []


def _pod_text(pod: PodLine) -> str:
    state = "ready" if pod.ready else pod.reason or pod.phase
    parts = [f"{pod.name}: {state}", f"{pod.restarts} restart(s)" if pod.restarts else ""]
    parts += [pod.message or "", (pod.autoscaler and f"autoscaler: {pod.autoscaler}") or ""]
    parts += [(pod.signature and f"signature {pod.signature}: {pod.log_line}") or ""]
    return "; ".join(part for part in parts if part)


def _list_left(tpu: TpuStatus) -> str | None:
    """The most `pulumi up` may still wait over the remaining placements."""
    if tpu.placement is None or tpu.placement.left_in_list_s is None:
        return None
    later = tpu.placement.of - tpu.placement.placement
    return f"at most {tpu.placement.left_in_list_s / 60:.0f} min (this placement, then {later} more)"


def _deadline_text(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    if seconds < 0:
        return f"passed {-seconds / 60:.0f} min ago (tpu.activeDeadline)"
    return f"{seconds / 60:.0f} min (tpu.activeDeadline)"


def status_change_printer(stream: TextIO | None = None) -> Console:
    """Where `--watch` prints each change: stderr, so `--json` stdout stays one document."""
    return Console(file=stream if stream is not None else sys.stderr, highlight=False, soft_wrap=True)


def print_logs(report: LogsReport, console: Console | None = None) -> None:
    out = console if console is not None else stdout_console()
    out.print(Text.assemble(("verify logs ", "bold"), f"{report.stack} ({report.platform}), last {report.since}"))
    if report.problem is not None:
        out.print(cell(f"could not read the logs: {report.problem}", style="bold yellow"))
        if report.fix:
            out.print(cell(f"fix: {report.fix}"))
        return
    for line in report.lines:
        style = "red" if line.signature else ("yellow" if line.severity in {"ERROR", "CRITICAL"} else "")
        prefix = (f"{line.timestamp} {line.severity:<8} {line.source}: ", "dim")
        out.print(Text.assemble(prefix, (line.text, style)), soft_wrap=True)  # one log line, one output line
    if not report.lines:
        out.print(Text("no matching log lines", style="dim"))
    if not report.diagnoses:
        out.print(Text("no known failure signature in these lines", style="green"))
        return
    table = Table(show_header=True, header_style="bold", title="recognised failures")
    for column in ("signature", "seen", "what it means", "fix"):
        table.add_column(column, overflow="fold")
    for diagnosis in report.diagnoses:
        table.add_row(
            Text(diagnosis.signature, style="bold red"),
            f"{diagnosis.count}x from {diagnosis.first_seen}",
            Text(diagnosis.explanation),
            Text(diagnosis.fix),
        )
    out.print(table)
