"""Drawing a health report: a rich table for people, one JSON document for machines, progress on stderr.

Rendering only reads the result models; it decides nothing. Server text (bodies, generated output)
is always passed as ``rich.text.Text`` so brackets in it are never taken for console markup, with its
control characters escaped (verify.redact) so an endpoint cannot clear or rewrite the terminal.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from remote.text import escape_controls
from verify.health.report import CheckStatus, HealthReport, Waiting

_STYLES: dict[CheckStatus, tuple[str, str]] = {
    CheckStatus.PASS: ("PASS", "bold green"),
    CheckStatus.FAIL: ("FAIL", "bold red"),
    CheckStatus.UNREACHABLE: ("UNREACHABLE", "bold red"),
    CheckStatus.UNAUTHORISED: ("UNAUTHORISED", "bold red"),
    CheckStatus.SKIPPED: ("skipped", "dim"),
}
# Progress lines while waiting for readiness: on every change, and at least this often.
PROGRESS_EVERY_S = 30.0


def print_health(report: HealthReport, console: Console | None = None) -> None:
    out = console if console is not None else stdout_console()
    target = report.target
    model = target.model or "not given"
    if target.model_discovered:
        model += " (discovered)"
    out.print(Text.assemble(("verify health ", "bold"), target.base_url, f" ({target.source})"))
    version = f", vLLM {report.vllm_version}" if report.vllm_version else ""
    out.print(Text(escape_controls(f"model {model}, auth {target.auth}{version}")))
    table = Table(show_header=True, header_style="bold", expand=False)
    table.add_column("check")
    table.add_column("result")
    table.add_column("time", justify="right")
    table.add_column("details", overflow="fold")
    for check in report.checks:
        label, style = _STYLES[check.status]
        took = "" if check.status is CheckStatus.SKIPPED else f"{check.duration_s:.2f} s"
        table.add_row(check.name.value, Text(label, style=style), took, Text(escape_controls(check.summary)))
    out.print(table)
    for quality in report.quality:
        verdict = Text("pass", style="green") if quality.passed else Text("FAIL", style="bold red")
        out.print(Text.assemble("quality ", (quality.name, "bold"), ": ", verdict, f" ({quality.duration_s:.2f} s)"))
        if not quality.passed:
            out.print(Text(escape_controls(f"  expected: {quality.expected}")))
        out.print(Text(escape_controls(f"  saw: {quality.saw}")))
    for check in report.checks:
        if check.status in {CheckStatus.PASS, CheckStatus.SKIPPED}:
            continue
        out.print(Text(f"{check.name.value}: {_STYLES[check.status][0]}", style="bold red"))
        for label, value in (("expected", check.expected), ("got", check.got), ("likely cause", check.cause)):
            if value:
                out.print(Text.assemble(f"  {label}: ", (escape_controls(value), "")))
    out.print(_verdict(report))


def stdout_console() -> Console:
    """The terminal's width on a terminal; 120 columns in CI logs and pipes (rich would use 80)."""
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        return Console(width=120)
    return console


def _verdict(report: HealthReport) -> Text:
    if report.exit_code == 0:
        quality = f" and {len(report.quality)} quality checks" if report.quality else ""
        return Text(f"all {len(report.checks)} checks{quality} passed", style="bold green")
    bad = [check.name.value for check in report.checks if check.status not in {CheckStatus.PASS, CheckStatus.SKIPPED}]
    bad += [f"quality {check.name}" for check in report.quality if not check.passed]
    kind = "could not check the endpoint" if report.exit_code == 2 else "checks failed"
    return Text(f"{kind}: {', '.join(bad)} (exit {report.exit_code})", style="bold red")


def print_json(report: HealthReport, stream: TextIO | None = None) -> None:
    """The same facts as the table, as one JSON document on stdout."""
    out = stream if stream is not None else sys.stdout
    out.write(report.model_dump_json(indent=2) + "\n")


def waiting_printer(
    stream: TextIO | None = None, *, clock: Callable[[], float] = time.monotonic
) -> Callable[[Waiting], None]:
    """A progress callback for readiness polling; writes to stderr so ``--json`` stdout stays clean."""
    console = Console(file=stream if stream is not None else sys.stderr, highlight=False)
    last: dict[str, object] = {"observation": None, "at": None}

    def show(waiting: Waiting) -> None:
        now = clock()
        at = last["at"]
        changed = waiting.observation != last["observation"]
        if not changed and isinstance(at, float) and now - at < PROGRESS_EVERY_S:
            return
        first = at is None
        last.update(observation=waiting.observation, at=now)
        line = f"waiting for readiness ({waiting.elapsed_s:.0f} s of {waiting.wait_s:g} s): {waiting.observation}"
        if first:
            # Said once, at the first failed poll: how long this goes on and how to make it shorter.
            line += (
                f"; polling /health until it answers or {waiting.wait_s:g} s have passed (a cold start can take "
                f"that long; --wait S waits less, Ctrl-C stops), a line at least every {PROGRESS_EVERY_S:g} s"
            )
        console.print(Text(line, style="yellow"))

    return show
