"""`compare` over N runs: per workload, each stack's cost and the cheapest one meeting an SLO.

The three files are illustrative runs of the three shipped stacks (tests/verify/bench/data/matrix/README.md):
their prices are the stacks' own billing shapes, their throughputs invented.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from PIL import Image

from verify import UsageError, cli
from verify.bench.matrix import HOURS_PER_MONTH, Run, Workload, judge
from verify.bench.matrix_command import load_runs
from verify.bench.slo import parse_slo

DATA = Path(__file__).parent / "data" / "matrix"
FILES = [DATA / "l4.jsonl", DATA / "rtx6000.jsonl", DATA / "tpu-v6e.jsonl"]
SHORT = Workload("chat", 1024, 256)
LONG = Workload("chat", 4096, 256)


def _runs() -> list[Run]:
    return load_runs(FILES)


def _by_workload(slo: list[str]) -> dict[Workload, object]:
    return {verdict.workload: verdict for verdict in judge(_runs(), [parse_slo(text) for text in slo])}


def test_the_cheapest_run_per_workload_meets_the_slo() -> None:
    """The verdict the hand-made agent ended with: per workload, which stack to pick under the SLO."""
    verdicts = judge(_runs(), [parse_slo("p99_ttft_ms=1000")])
    assert [v.workload for v in verdicts] == [SHORT, LONG]
    short, long = verdicts
    assert short.cheapest is not None
    assert short.cheapest.run.label == "tpu-v6e"
    assert short.cheapest.chosen is not None
    assert short.cheapest.chosen.record.max_concurrency == 64
    assert long.cheapest is not None
    assert long.cheapest.run.label == "rtx6000"
    # The L4's cheapest cell at 1,024 tokens (64 users, $0.22/1M) misses the SLO (p99 TTFT 1,900 ms): not chosen.
    l4 = next(run for run in short.runs if run.run.label == "l4")
    assert l4.chosen is not None
    assert l4.chosen.record.max_concurrency == 32
    assert "misses p99_ttft_ms <= 1000" in next(c.mark for c in l4.cells if c.record.max_concurrency == 64)


def test_an_untrusted_cell_is_marked_and_never_chosen_however_cheap() -> None:
    """rtx6000's 256-user cell is the cheapest of all per token but its client was saturated."""
    short = judge(_runs(), [])[0]
    rtx = next(run for run in short.runs if run.run.label == "rtx6000")
    untrusted = next(cell for cell in rtx.cells if cell.record.max_concurrency == 256)
    cheapest_anywhere = min(
        (c for run in short.runs for c in run.cells if c.record.measured),
        key=lambda c: c.record.cost_per_1m_output_tokens_usd or 0,
    )
    assert cheapest_anywhere is untrusted
    assert untrusted.mark.startswith("untrusted:")
    assert rtx.chosen is not None
    assert rtx.chosen.record.max_concurrency == 64


def test_monthly_costs_and_break_even_hours_follow_each_runs_price() -> None:
    """Always on: 730 h at the run's price; scaled to zero (Cloud Run only) while active; break-even against
    the cheapest capacity kept on around the clock."""
    runs = {run.label: run for run in _runs()}
    assert runs["l4"].always_on_monthly_usd() == pytest.approx(1.4209 * HOURS_PER_MONTH)
    assert runs["l4"].scaled_to_zero_monthly_usd(8) == pytest.approx(1.4209 * HOURS_PER_MONTH / 3)
    assert runs["tpu-v6e"].scaled_to_zero_monthly_usd(8) == runs["tpu-v6e"].always_on_monthly_usd()
    short = judge(_runs(), [parse_slo("p99_ttft_ms=1000")])[0]
    hours = {run.run.label: run.break_even_hours for run in short.runs}
    # Capacity cost ($/h per req/s) of the chosen cells: L4 1.4209/6.1, RTX 3.1868/27, TPU 1.35/15.5 (the least).
    assert hours["l4"] == pytest.approx(24 * (1.35 / 15.5) / (1.4209 / 6.1))
    assert hours["rtx6000"] == pytest.approx(24 * (1.35 / 15.5) / (3.1868 / 27))
    assert hours["tpu-v6e"] is None  # a TPU node cannot scale to zero


def test_an_slo_no_run_meets_is_said_not_guessed() -> None:
    verdicts = judge(_runs(), [parse_slo("p99_ttft_ms=10")])
    assert all(v.cheapest is None for v in verdicts)
    assert verdicts[0].reason == "no measured, trusted cell meets success_rate >= 1, p99_ttft_ms <= 10"


def test_the_command_over_three_files_prints_the_table_and_writes_csv_and_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The done-when: compare over 3+ files prints the per-workload table with cost, break-even hours and the
    cheapest stack under an SLO; CSV and PNG come with it."""
    table, chart, markdown = tmp_path / "all.csv", tmp_path / "cost.png", tmp_path / "all.md"
    argv = ["compare", *map(str, FILES), "--slo", "p99_ttft_ms=1000", "--csv", str(table), "--chart", str(chart)]
    code = cli.main([*argv, "--markdown", str(markdown)])
    out = capsys.readouterr().out
    assert code == 0
    assert "## chat, 1,024 prompt tokens -> 256 output tokens" in out
    assert "**Cheapest meeting the SLO:** tpu-v6e (tpu-v6e) at 64 users" in out
    assert "| l4 | nvidia-l4 | gemma-4-12b-it | 32 users | 6.1 |" in out
    assert "break-even active hours" in out
    assert "n/a (bills while it exists)" in out
    assert "- rtx6000, 256 users: untrusted:" in out
    assert markdown.read_text(encoding="utf-8") == out
    rows = list(csv.DictReader(io.StringIO(table.read_text(encoding="utf-8"))))
    assert len(rows) == sum(1 for path in FILES for line in path.read_text().splitlines() if line.strip())
    cheapest = [row for row in rows if row["cheapest"] == "True"]
    assert [(row["run"], row["context"], row["concurrency"]) for row in cheapest] == [
        ("tpu-v6e", "1024", "64"),
        ("rtx6000", "4096", "32"),
    ]
    with Image.open(chart) as image:
        assert image.format == "PNG"
        assert image.size[0] == 1200


def test_two_files_stay_a_vs_b_unless_matrix_is_asked(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["compare", str(FILES[0]), str(FILES[2]), "--matrix"])
    assert code == 0
    assert "# Stacks compared" in capsys.readouterr().out


def test_files_with_the_same_name_are_refused(tmp_path: Path) -> None:
    """Runs are told apart by their file names: two l4.jsonl would make one row of two stacks."""
    other = tmp_path / "l4.jsonl"
    other.write_bytes(FILES[0].read_bytes())
    with pytest.raises(UsageError, match="share a name"):
        load_runs([FILES[0], other, FILES[1]])


def test_active_hours_beyond_a_day_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["compare", *map(str, FILES), "--active-hours", "30"])
    assert "at most 24" in capsys.readouterr().err


def test_a_file_with_a_made_up_line_is_refused_naming_the_line(tmp_path: Path) -> None:
    """A cell written twice (or with impossible numbers) must stop the comparison, never rank made-up runs."""
    doubled = tmp_path / "doubled.jsonl"
    line = FILES[1].read_text(encoding="utf-8").splitlines()[0]
    doubled.write_text(f"{line}\n{line}\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"doubled.jsonl:2"):
        load_runs([FILES[0], doubled, FILES[2]])


def test_allow_untrusted_lets_an_untrusted_cell_be_chosen_and_marks_it() -> None:
    """Guards against N-way compare ignoring --allow-untrusted (it used to: the flag did nothing there)."""
    short = judge(_runs(), [], allow_untrusted=True)[0]
    rtx = next(run for run in short.runs if run.run.label == "rtx6000")
    assert rtx.chosen is not None
    assert rtx.chosen.record.max_concurrency == 256
    assert not rtx.chosen.record.trusted


def test_the_table_shows_the_slos_own_percentile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Guards against an SLO on p95 judged while the table shows p99 beside it."""
    assert cli.main(["compare", *map(str, FILES), "--slo", "p95_ttft_ms=1000"]) == 0
    text = capsys.readouterr().out
    assert "| p95 TTFT ms |" in text
    assert "p99 TTFT ms" not in text
    assert cli.main(["compare", *map(str, FILES)]) == 0
    assert "| p99 TTFT ms | p99 E2EL ms |" in capsys.readouterr().out


def test_a_percentile_the_file_lacks_or_cannot_support_is_not_judged_not_missed(tmp_path: Path) -> None:
    """Red team: a file without a p95, and a cell with too few samples for it, were reported as "misses" the SLO
    (a verdict on a number nobody measured). Each is said as what it is, and neither cell is chosen."""
    slo = [parse_slo("p95_ttft_ms=2000")]
    runs = _runs()
    l4 = runs[0]
    without = l4.records[1]  # 1,024 x 8: 400+ requests, and the file writes no p95
    assert without.p95_ttft_ms is None
    thin = l4.records[2].model_copy(
        update={"p95_ttft_ms": 900.0, "too_few_samples": {"p95_ttft_ms": 72}, "completed": 40}
    )
    run = Run("edited", tmp_path / "edited.jsonl", (without, thin), price_note=l4.price_note)
    (verdict,) = [v for v in judge([run], slo) if v.workload == SHORT]
    marks = [cell.mark for cell in verdict.runs[0].cells]
    assert marks == [
        "not judged: p95_ttft_ms not recorded",
        "not judged: p95_ttft_ms: too few samples (40 completed, a p95 needs 72)",
    ]
    assert not any("misses" in mark for mark in marks)
    assert verdict.runs[0].chosen is None
