"""`run_bench(target, options) -> BenchReport`: the bench as a function, as `verify promote` calls it.

No flags here: a caller builds the options and the target, and keeps the report (what was measured, what
failed and why), rather than an exit code.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import running
from verify.bench.command import BenchReport, run_bench
from verify.bench.options import BenchOptions, Gate, Workload
from verify.bench.results import load_results
from verify.bench.slo import parse_slo
from verify.endpoint import AuthKind, Target

SMALL = Workload(concurrency=(1, 2), context=(16,), max_tokens=3, requests=3)


def _target(url: str) -> Target:
    return Target(base_url=url, model="tiny-gemma", auth_kind=AuthKind.NONE, source="url")


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=160)


def test_a_caller_keeps_the_report_of_what_was_measured(tmp_path: Path) -> None:
    """Guards against a promotion's bench gate that knows only an exit code: the report names every cell
    it measured, the files it wrote, and survives a JSON round trip (what promote and the MCP server keep)."""
    output = tmp_path / "gate.jsonl"
    with running() as server:
        report = run_bench(
            _target(server.url), BenchOptions(output=output, workload=SMALL, progress=False), console=_quiet()
        )
    assert report.exit_code == 0
    assert report.failures == ()
    assert [(r.requested_context, r.max_concurrency) for r in report.new] == [(16, 1), (16, 2)]
    assert list(report.records) == load_results(output).records
    assert {path.name for path in report.reports} == {"gate.csv", "gate.md", "gate.png"}
    assert BenchReport.model_validate_json(report.model_dump_json(exclude={"exit_code"})) == report


def test_a_violated_slo_is_a_failure_naming_it(tmp_path: Path) -> None:
    """Guards against a refused promotion that cannot say which check failed: the SLO is in the report."""
    options = BenchOptions(
        output=tmp_path / "slow.jsonl",
        workload=replace(SMALL, requests=6, concurrency=(2,)),
        progress=False,
        gate=Gate(slos=(parse_slo("median_ttft_ms=20"),), allow_untrusted=True),
    )
    with running(FakeVllmConfig(count_prompt_words=True, ttft_s=0.03)) as server:
        report = run_bench(_target(server.url), options, console=_quiet())
    assert report.exit_code == 1
    assert report.failures
    assert all("median_ttft_ms" in failure for failure in report.failures)
