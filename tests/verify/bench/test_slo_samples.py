"""An SLO on a percentile is judged only on enough requests for that percentile to mean something.

Why: a p99 from 16 requests is the slowest of 16 wearing a p99 label (verify/bench/confidence.py: a 95%
interval on a p99 exists from 368 samples on). The deploy workflow gated exactly that. An explicit request
count too small for the gate is refused before a request is sent, naming the flag, the count it needs and the
percentiles that count can judge; a default count rises to what the gate needs; a cell thinned by failures
below it fails closed.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.verify.bench.test_cli import running
from verify import UsageError
from verify.bench.command import run_bench
from verify.bench.options import BenchOptions, Gate, Workload
from verify.bench.results import CellRecord
from verify.bench.slo import parse_slo, requests_needed, thin_gates, violations
from verify.bench.sweep import plan_for
from verify.cli import main
from verify.endpoint import AuthKind, Target, TimeoutOptions


@pytest.mark.parametrize(
    ("key", "needed"),
    [("p99_ttft_ms", 368), ("p95_tpot_ms", 72), ("p90_e2el_ms", 36), ("median_ttft_ms", 6), ("ttft_p99_ms", 368)],
)
def test_each_percentile_slo_names_the_requests_it_needs(key: str, needed: int) -> None:
    """Guards against a gate that cannot say how many requests its percentile needs."""
    assert parse_slo(f"{key}=1000").samples_needed == needed


@pytest.mark.parametrize("key", ["mean_ttft_ms", "p99_itl_ms", "success_rate", "request_throughput"])
def test_means_rates_and_pooled_gaps_need_no_request_count(key: str) -> None:
    """Guards against refusing a mean or a throughput gate, or the ITL percentiles pooled over every token gap."""
    assert parse_slo(f"{key}=1").samples_needed is None


def test_too_few_explicit_requests_are_refused_naming_the_flag_and_what_fits() -> None:
    """Guards against the deploy gate's old p99 over 16 requests: the message says what to raise and to what,
    and which percentiles 40 requests can judge."""
    slos = [parse_slo("success_rate=0.99"), parse_slo("p99_ttft_ms=2000")]
    message = thin_gates(slos, 40, flag="--requests")
    assert message is not None
    assert "--slo p99_ttft_ms cannot be judged from 40 measured requests per cell" in message
    assert "Raise --requests to 368" in message
    assert "p90_ttft_ms (36)" in message
    assert "p95_ttft_ms" not in message
    assert thin_gates(slos, 368, flag="--requests") is None
    assert thin_gates([parse_slo("p90_ttft_ms=1")], 40, flag="--requests") is None


def test_the_cli_refuses_before_sending_a_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against a run that measures for minutes and only then says its gate meant nothing."""
    output = tmp_path / "thin.jsonl"
    with running() as server:
        code = main(
            ["bench", "--url", server.url, "--model", "tiny-gemma", "--concurrency", "1", "--context", "16",
             "--max-tokens", "2", "--requests", "16", "--output", str(output), "--slo", "p99_ttft_ms=2000"]
        )  # fmt: skip
        sent = [seen for seen in server.requests if seen.path.endswith("/completions")]
    assert code == 2
    assert "Raise --requests to 368" in capsys.readouterr().err
    assert sent == []
    assert not output.exists()


def test_a_default_request_count_rises_to_what_the_gate_needs() -> None:
    """Guards against a user who gave only an SLO being refused, or judged on too few: the default rises."""
    slos = [parse_slo("p95_ttft_ms=2000")]
    closed = plan_for(
        Workload(concurrency=(1, 32)), model="m", timeouts=TimeoutOptions(), min_requests=requests_needed(slos)
    )
    assert [closed.requests_for(users) for users in closed.concurrencies] == [72, 128]
    opened = plan_for(
        Workload(request_rates=(5.0,)), model="m", timeouts=TimeoutOptions(), min_requests=requests_needed(slos)
    )
    assert opened.requests_for(opened.concurrencies[0]) == 100
    explicit = plan_for(Workload(requests=10), model="m", timeouts=TimeoutOptions(), min_requests=72)
    assert explicit.requests_for(1) == 10


def test_the_run_says_when_it_raised_the_count(tmp_path: Path) -> None:
    """Guards against a run that takes longer than the user expected without saying why."""
    shown = io.StringIO()
    options = BenchOptions(
        output=tmp_path / "raised.jsonl",
        workload=Workload(concurrency=(1,), context=(16,), max_tokens=2, warmup=0),
        progress=False,
        gate=Gate(slos=(parse_slo("p90_ttft_ms=60000"),), allow_untrusted=True),
    )
    with running() as server:
        report = run_bench(
            Target(base_url=server.url, model="tiny-gemma", auth_kind=AuthKind.NONE, source="url"),
            options,
            console=Console(file=shown, width=200),
        )
    assert report.exit_code == 0, report.failures
    assert [record.completed for record in report.new] == [36]
    assert "measuring at least 36 requests per cell" in shown.getvalue()


def _cell(completed: int, p99_ms: float) -> CellRecord:
    return CellRecord.model_validate(
        {"status": "measured", "timestamp": "2026-11-26T21:00:00Z", "model": "m", "api": "chat",
         "requested_context": 128, "max_concurrency": 4, "max_tokens": 64, "num_prompts": 400,
         "completed": completed, "failed": 400 - completed, "success_rate": completed / 400, "p99_ttft_ms": p99_ms}
    )  # fmt: skip


def test_a_cell_thinned_by_failures_fails_the_percentile_gate_closed() -> None:
    """Guards against a p99 "met" by the 100 requests that survived of 400: it is no p99, and the gate says so."""
    (found,) = violations([parse_slo("p99_ttft_ms=2000")], [_cell(100, 500.0)])
    assert found.thin == (100, 368)
    assert "from 100 requests, too few to judge (a p99 needs >= 368" in found.describe_value()
    assert violations([parse_slo("p99_ttft_ms=2000")], [_cell(400, 500.0)]) == []


def test_promote_refuses_a_thin_explicit_gate_and_raises_its_default() -> None:
    """Guards against a promotion gated on a p99 of 16 requests, and one refused when the user set no count."""
    from verify.cli import build_parser
    from verify.promote.cli import promote_options

    parser = build_parser()
    thin = parser.parse_args(["promote", "--stack", "l4", "--slo", "p99_ttft_ms=2000", "--bench-requests", "16"])
    with pytest.raises(UsageError, match="Raise --bench-requests to 368"):
        promote_options(thin)
    default = parser.parse_args(["promote", "--stack", "l4", "--slo", "p95_ttft_ms=2000"])
    assert promote_options(default).bench_gate.requests == 72
    plain = parser.parse_args(["promote", "--stack", "l4"])
    assert promote_options(plain).bench_gate.requests == 16


def test_a_percentile_a_cell_does_not_record_is_not_judged_and_still_fails_the_gate() -> None:
    """Red team: a file without a p95 was reported as violating a p95 SLO, as if the value had been measured and
    missed. It is "not recorded", and a gate cannot pass on it: it fails closed, saying which of the two it is."""
    from verify.bench.trust import gate_failures

    cell = _cell(400, 500.0)
    assert cell.p95_ttft_ms is None
    (found,) = violations([parse_slo("p95_ttft_ms=2000")], [cell])
    assert not found.judged
    assert found.not_judged() == "p95_ttft_ms not recorded"
    (line,) = gate_failures([parse_slo("p95_ttft_ms=2000")], [cell], allow_untrusted=True)
    assert line.startswith("SLO not judged (the gate fails closed) context 128 x concurrency 4: p95_ttft_ms not ")
    gates = [parse_slo("p99_ttft_ms=2000"), parse_slo("success_rate=0")]
    (thin,) = gate_failures(gates, [_cell(100, 500.0)], allow_untrusted=True)
    assert thin.startswith("SLO not judged (the gate fails closed)")
    assert "too few to judge" in thin
