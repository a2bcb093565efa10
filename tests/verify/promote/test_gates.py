"""promote's gates as typed calls: ``CommandGates`` runs verify health and verify bench as functions and keeps
their reports; ``run_gates`` refuses a candidate naming the gate and the check that failed. No argv."""

from __future__ import annotations

from pathlib import Path

from tests.fake_vllm import FakeVllmConfig
from tests.verify.bench.test_cli import running
from verify.bench.command import BenchReport
from verify.endpoint import AuthKind, Target
from verify.health import HealthReport
from verify.promote.gates import BenchGate, CommandGates, GateName, GateResult
from verify.promote.machine import run_gates


def gates_for(tmp_path: Path) -> CommandGates:
    stack = Target(base_url="https://gemma-l4.example", model="tiny-gemma", auth_kind=AuthKind.NONE, source="stack l4")
    return CommandGates(
        stack_target=stack,
        bench_gate=BenchGate(concurrency=(1, 2), context=(16,), max_tokens=3, requests=3, output_dir=tmp_path),
        clock=lambda: 0.0,
        say=lambda _line: None,
    )


def gate_candidate(tmp_path: Path, url: str) -> tuple[str | None, list[GateResult]]:
    """``run_gates`` as promote runs them against the candidate at ``url``: the refusal and what each gate kept."""
    kept: list[GateResult] = []
    refused = run_gates(
        gates_for(tmp_path),
        url,
        subject="the candidate c",
        label="promote-c",
        wait_s=5,
        say=lambda _line: None,
        kept=kept,
    )
    return refused, kept


def test_passing_gates_keep_each_commands_report(tmp_path: Path) -> None:
    """Guards against a promotion whose verdict cannot be traced: every gate's report is kept, in order,
    and the bench gate's results file is the one its report names."""
    with running() as server:
        refused, kept = gate_candidate(tmp_path, server.url)
    assert refused is None
    assert [result.gate for result in kept] == [GateName.HEALTH, GateName.METRICS, GateName.BENCH]
    assert all(result.passed and result.failure is None for result in kept)
    health, _, bench = (result.report for result in kept)
    assert isinstance(health, HealthReport)
    assert health.target.base_url == server.url
    assert isinstance(bench, BenchReport)
    assert bench.output == tmp_path / "promote-c-19700101T000000Z.jsonl"
    assert bench.output.exists()


def test_a_refusal_names_the_health_check_that_failed(tmp_path: Path) -> None:
    """Guards against "failed verify health (exit 1)" with no clue which check: the refusal must name the
    failing check, and no bench runs after it."""
    with running(FakeVllmConfig(served_name="some-other-model")) as server:
        refused, kept = gate_candidate(tmp_path, server.url)
    assert refused is not None
    assert refused.startswith(
        "the candidate c failed verify health (exit 1: a check or an SLO failed): the models check"
    )
    assert [result.gate for result in kept] == [GateName.HEALTH]
    assert isinstance(kept[0].report, HealthReport)
    assert kept[0].report.exit_code == 1


def test_a_bench_failure_names_the_slo_and_keeps_the_report(tmp_path: Path) -> None:
    """Guards against a bench refusal that does not say which SLO the candidate missed: here every request
    fails, so the success-rate gate (judged on every cell, trusted or not) names itself."""
    with running(FakeVllmConfig(always_status={"/v1/chat/completions": 500})) as server:
        result = gates_for(tmp_path).bench(server.url, label="promote-green")
    assert result.gate is GateName.BENCH
    assert result.exit_code == 1
    assert result.failure is not None
    assert "success_rate" in result.failure
    assert isinstance(result.report, BenchReport)
    assert result.report.failures
    assert result.failure == "; ".join(result.report.failures)


def test_a_missing_credential_is_exit_2_without_a_report(tmp_path: Path) -> None:
    """Guards against a gate that cannot even ask (no API key) reading as a failed check: exit 2, the
    variable named, no report."""
    stack = Target(base_url="http://127.0.0.1:9", model="m", auth_kind=AuthKind.API_KEY, source="stack l4")
    gates = CommandGates(
        stack_target=stack,
        bench_gate=BenchGate(output_dir=tmp_path),
        api_key_env="NO_SUCH_GATE_KEY",
        say=lambda _line: None,
    )
    result = gates.health("http://127.0.0.1:9", wait_s=0)
    assert result.exit_code == 2
    assert result.report is None
    assert result.failure is not None
    assert "NO_SUCH_GATE_KEY" in result.failure
