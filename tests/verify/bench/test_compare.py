"""`verify compare`: per-cell changes that do not overstate, and refusal of files that asked different questions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from verify.bench import spread
from verify.bench.compare import Verdict, compare, markdown, workload_mismatches
from verify.bench.results import CellRecord, append_record, load_results
from verify.cli import main

DATA = Path(__file__).parent / "data"


def records(name: str) -> list[CellRecord]:
    return load_results(DATA / f"l4-mtp-{name}.jsonl").records


def first_cell(name: str = "off") -> CellRecord:
    return records(name)[0]  # 128 x 1: 32 requests, E2EL 1950 ms mean, 156 ms std


def write(path: Path, cells: list[CellRecord]) -> Path:
    for cell in cells:
        append_record(path, cell)
    return path


def verdicts(a: list[CellRecord], b: list[CellRecord]) -> dict[str, Verdict | None]:
    (row,) = [row for row in compare(a, b) if row.label == "128 x 1"]
    return {delta.field: delta.verdict for delta in row.deltas}


def test_compare_reports_per_cell_deltas_with_direction() -> None:
    """Guards against a comparison that only shows one headline number, or marks a slower TTFT better."""
    rows = compare(records("off"), records("on"))
    by_cell = {row.label: row for row in rows}
    assert set(by_cell) == {"128 x 1", "128 x 128", "8192 x 1", "16384 x 1"}
    low = {d.field: d for d in by_cell["128 x 1"].deltas}
    assert low["request_throughput"].change == pytest.approx(0.6)
    assert low["request_throughput"].verdict is Verdict.BETTER
    assert low["mean_tpot_ms"].verdict is Verdict.BETTER  # 15 -> 9 ms is better
    high = {d.field: d for d in by_cell["128 x 128"].deltas}
    assert high["median_ttft_ms"].verdict is Verdict.WORSE  # 300 -> 320 ms over 448 requests is worse
    assert by_cell["16384 x 1"].status() == "only in A"
    text = markdown(rows, a_name="off", b_name="on", a_desc="A", b_desc="B")
    assert "| 128 x 1 | 0.5 → 0.8 (+60%) ▲ |" in text
    # The p99s of the 32-request cells (a p99 needs 368) are not judged: 4 comparisons are unknown.
    tally = (
        "B is better in 6, worse in 6, within noise in 5, unknown (no spread recorded, or too few requests for a "
        "percentile) in 4 of 21 comparisons; 1 of 3 cells have warnings (⚠)"
    )
    assert f"- {tally}\n" in text
    assert low["p99_ttft_ms"].verdict is Verdict.UNKNOWN
    assert high["p99_ttft_ms"].verdict is not Verdict.UNKNOWN  # 448 requests: enough for a p99


def test_a_change_within_the_runs_spread_is_noise_not_a_regression() -> None:
    """Guards against `compare` calling a -0.7% throughput change a regression: 32 requests whose E2EL varies
    by 8% cannot resolve it (the band is 2 x sqrt(2) x 8% / sqrt(32) = 4%)."""
    a = first_cell()
    slower = a.model_copy(update={"request_throughput": 0.5 * 0.993, "output_throughput": 64 * 0.993})
    assert verdicts([a], [slower])["request_throughput"] is Verdict.NOISE
    assert verdicts([a], [slower])["output_throughput"] is Verdict.NOISE
    much_slower = a.model_copy(update={"request_throughput": 0.5 * 0.9})
    assert verdicts([a], [much_slower])["request_throughput"] is Verdict.WORSE


def test_a_latency_change_inside_its_standard_error_is_noise() -> None:
    """Guards against a 2 ms move of a median TTFT whose requests vary by 11 ms being reported as a win."""
    a = first_cell()  # median TTFT 40 ms, std 11 ms, 32 requests: standard error 2.4 ms
    assert verdicts([a], [a.model_copy(update={"median_ttft_ms": 38.0})])["median_ttft_ms"] is Verdict.NOISE
    assert verdicts([a], [a.model_copy(update={"median_ttft_ms": 30.0})])["median_ttft_ms"] is Verdict.BETTER


def test_without_a_recorded_spread_no_change_is_called_better_or_worse() -> None:
    """Guards against judging a change on a file that cannot say how noisy it was (hand-written or old)."""
    a = first_cell().model_copy(update={"std_e2el_ms": None, "std_tpot_ms": None})
    b = a.model_copy(update={"request_throughput": 0.8, "mean_tpot_ms": 13.0})
    judged = verdicts([a], [b])
    assert judged["request_throughput"] is Verdict.UNKNOWN
    assert judged["mean_tpot_ms"] is Verdict.UNKNOWN
    assert judged["success_rate"] is Verdict.SAME


def test_untrusted_cells_are_not_judged_and_warned_cells_are_marked() -> None:
    """Guards against a comparison that calls an untrusted measurement a win, or hides a side's warnings."""
    a = first_cell()
    b = a.model_copy(update={"request_throughput": 0.8, "trusted": False})
    assert verdicts([a], [b])["request_throughput"] is Verdict.UNTRUSTED
    warned = a.model_copy(update={"request_throughput": 0.8, "warnings": ["the load generator stalled 400 ms"]})
    (row,) = compare([a], [warned])
    assert row.caveat
    text = markdown([row], a_name="a", b_name="b", a_desc="A", b_desc="B")
    assert "| 128 x 1 ⚠ |" in text
    assert "- 128 x 1 in B: the load generator stalled 400 ms" in text


def test_workloads_that_differ_are_found_and_the_request_shape_refused() -> None:
    """Guards against comparing a 2-token run with a 128-token one as if TPOT had dropped 99.8%."""
    a = first_cell()
    short = a.model_copy(update={"max_tokens": 2, "mean_tpot_ms": 0.03, "model": "gemma-4-e4b-it-qat"})
    found = {m.setting: m for m in workload_mismatches([a], [short])}
    assert found["output tokens per request"].refused
    assert found["output tokens per request"].describe().startswith("output tokens per request: A 128; B 2 (")
    assert not found["model"].refused
    assert list(found) == ["output tokens per request", "model"]  # the refused first
    assert workload_mismatches([a], [a]) == []


def test_cli_refuses_mismatched_workloads_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against `compare` silently comparing files whose requests differ (exit 2, naming both values)."""
    a = write(tmp_path / "a.jsonl", [first_cell()])
    # 32 output tokens per request: the tokens and throughputs follow (1024 tokens over the same 64 s)
    short = {"max_tokens": 32, "num_prompts": 64, "total_output_tokens": 1024, "output_throughput": 16.0}
    b = write(tmp_path / "b.jsonl", [first_cell().model_copy(update={**short, "total_token_throughput": 80.0})])
    assert main(["compare", str(a), str(b)]) == 2
    error = capsys.readouterr().err
    assert "output tokens per request: A 128; B 32" in error
    assert "--allow-mismatch" in error
    assert main(["compare", str(a), str(b), "--allow-mismatch"]) == 0
    out = capsys.readouterr().out
    assert "workload differs output tokens per request: A 128; B 32" in out
    assert "requests per cell: A 32; B 64" in out


def test_cli_warns_but_compares_a_different_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against refusing the comparison a user runs on purpose: a QAT checkpoint under its own name."""
    a = write(tmp_path / "a.jsonl", [first_cell()])
    b = write(tmp_path / "b.jsonl", [first_cell().model_copy(update={"model": "gemma-4-e4b-it-qat"})])
    markdown_file = tmp_path / "cmp.md"
    assert main(["compare", str(a), str(b), "--markdown", str(markdown_file)]) == 0
    assert "model: A gemma-4-e4b-it; B gemma-4-e4b-it-qat" in capsys.readouterr().out
    assert "- **workload differs**: model: A gemma-4-e4b-it; B gemma-4-e4b-it-qat" in markdown_file.read_text()


def test_standard_errors_follow_the_documented_formulas() -> None:
    """Guards against a noise band that is silently too wide (hiding regressions) or too narrow (inventing them)."""
    assert spread.quantile_se(10.0, 100, 0.5) == pytest.approx(1.2533 * 10.0 / 10, rel=1e-3)
    assert spread.quantile_se(10.0, 100, 0.99) == pytest.approx(3.733 * 10.0 / 10, rel=1e-3)
    assert spread.mean_se(10.0, 25) == pytest.approx(2.0)
    assert spread.mean_se(None, 25) is None
    cell = first_cell()
    assert spread.throughput_se(cell, 0.5) == pytest.approx(0.5 * (156 / 1950) / math.sqrt(32))
    failing = cell.model_copy(update={"success_rate": 0.75, "completed": 24, "failed": 8})
    assert spread.rate_se(failing) == pytest.approx(math.sqrt(0.75 * 0.25 / 32))


def test_open_loop_files_compare_cell_by_rate() -> None:
    """Guards against two open-loop runs refused as "two records of a cell" (each rate is its own cell)."""
    base = first_cell()
    runs = [base.model_copy(update={"request_rate": rate, "max_concurrency": 256}) for rate in (5.0, 10.0)]
    rows = compare(runs, runs)
    assert [row.label for row in rows] == ["128 x 5/s", "128 x 10/s"]
