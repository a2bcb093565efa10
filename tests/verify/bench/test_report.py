"""Reports and comparisons rendered from fixed results files (tests/verify/bench/data/*.jsonl)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verify.bench.compare import compare, markdown
from verify.bench.report import CSV_COLUMNS, chart_png, csv_text, markdown_report, write_reports
from verify.bench.results import CellRecord, append_record, done_keys, load_results

DATA = Path(__file__).parent / "data"
MTP_OFF = DATA / "l4-mtp-off.jsonl"
MTP_ON = DATA / "l4-mtp-on.jsonl"


def records(path: Path) -> list[CellRecord]:
    loaded = load_results(path)
    assert loaded.unreadable_lines == []
    return loaded.records


def test_csv_keeps_the_hand_made_sweeps_columns() -> None:
    """Guards against breaking the spreadsheets built on the old sweeps' CSV (columns, units, order)."""
    lines = csv_text(records(MTP_OFF)).splitlines()
    assert lines[0] == ",".join(CSV_COLUMNS)
    # Sorted by context then concurrency; latencies in seconds; skipped cells have no row.
    assert lines[1:] == [
        "128,1,1,1.95,2,0.5,64",
        "128,128,0.875,6,7,20,2560",
        "8192,1,1,3,3.1,0.3,38.4",
    ]


def test_markdown_has_the_matrices_and_explains_marks_and_skips() -> None:
    """Guards against a report that hides skipped cells, platform-limit failures or the failure mix."""
    report = markdown_report(records(MTP_OFF))
    assert "### Request throughput (req/s)" in report
    assert "| context \\ concurrency | 1 | 128 |" in report
    assert "| 128 | 0.5 | 20† |" in report
    assert "| 8192 | 0.3 |  |" in report
    assert "| 16384 | skipped |  |" in report
    assert "### Median TTFT (ms)" in report
    assert "### P99 E2EL (ms)" in report
    assert "| 128 | 100.0% | 87.5%† |" in report
    assert "64 failed (http_429 64)" in report
    assert "skipped (prompt 16384 + max tokens 128 exceeds the server's max_model_len 16384)" in report
    assert "Cost per 1M output tokens (USD, at $1.05/hour)" in report


def test_chart_is_a_png(tmp_path: Path) -> None:
    """Guards against a chart step that silently writes nothing (or needs a display)."""
    target = tmp_path / "chart.png"
    assert chart_png(records(MTP_OFF), target)
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_reports_puts_all_three_beside_the_results(tmp_path: Path) -> None:
    """Guards against reports landing somewhere the user will not look."""
    written = write_reports(records(MTP_OFF), tmp_path / "run")
    assert sorted(p.name for p in written) == ["run.csv", "run.md", "run.png"]


def test_compare_reports_per_cell_deltas_with_direction() -> None:
    """Guards against a comparison that only shows one headline number, or marks a slower TTFT better."""
    rows = compare(records(MTP_OFF), records(MTP_ON))
    by_cell = {row.label: row for row in rows}
    assert set(by_cell) == {"128 x 1", "128 x 128", "8192 x 1", "16384 x 1"}
    low = {d.field: d for d in by_cell["128 x 1"].deltas}
    assert low["request_throughput"].change == pytest.approx(0.6)
    assert low["request_throughput"].better is True
    assert low["mean_tpot_ms"].better is True  # 15 -> 9 ms is better
    high = {d.field: d for d in by_cell["128 x 128"].deltas}
    assert high["median_ttft_ms"].better is False  # 300 -> 320 ms is worse
    assert by_cell["16384 x 1"].status() == "only in A"
    text = markdown(rows, a_name="off", b_name="on", a_desc="A", b_desc="B")
    assert "| 128 x 1 | 0.5 → 0.8 (+60.0%) ▲ |" in text


def test_resume_keys_and_a_cut_last_line(tmp_path: Path) -> None:
    """Guards against a run killed mid-write making the file unreadable or the next line glued to it."""
    path = tmp_path / "r.jsonl"
    first, second = records(MTP_OFF)[:2]
    append_record(path, first)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"record": "cell", "status": "meas')  # what a kill mid-write leaves
    append_record(path, second)
    loaded = load_results(path)
    assert loaded.unreadable_lines == [2]
    assert done_keys(loaded.records) == {first.key, second.key}
