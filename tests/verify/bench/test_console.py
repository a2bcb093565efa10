"""What `verify bench` and `verify compare` print: tables that fit an 80-column terminal."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console, RenderableType

from verify.bench.compare import compare
from verify.bench.console import comparison_view, summary_table
from verify.bench.results import CellRecord, load_results

DATA = Path(__file__).parent / "data"


def records(name: str) -> list[CellRecord]:
    return load_results(DATA / f"l4-mtp-{name}.jsonl").records


def shown(renderable: RenderableType, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def test_bench_summary_fits_80_columns_without_truncating_headers() -> None:
    """Guards against the summary wrapping each row over three lines and headers cut to "conte…" at 80 columns."""
    lines = shown(summary_table(records("off")), 80)
    assert all(len(line) <= 80 for line in lines)
    assert not any("…" in line for line in lines)
    header = next(line for line in lines if "context" in line)
    for heading in ("context", "actual", "users", "req/s", "tok/s", "p50 ms", "p95 ms", "success", "out tok", "note"):
        assert heading in "\n".join(lines[: lines.index(header) + 1])
    rows = [line for line in lines if line.strip().startswith(("128 ", "8192 ", "16384 "))]
    assert len(rows) == 4  # one line per cell
    assert rows[1].split()[:10] == ["128", "128", "128", "20", "2,560", "300", "-", "45", "7,000", "87.5%"]
    assert rows[0].split()[6] == "n<72"  # a p95 of 32 requests is not shown as one
    assert "1 128 x 128 users: 64 failed (http_429 64); platform limit" in "\n".join(lines)


def test_compare_fits_80_columns_and_shows_values_when_wide() -> None:
    """Guards against `verify compare` wrapping each cell into three lines on an 80-column terminal."""
    rows = compare(records("off"), records("on"))
    narrow = shown(comparison_view(rows, a_name="off", b_name="on", width=80), 80)
    assert all(len(line) <= 80 for line in narrow)
    assert not any("…" in line for line in narrow)
    cells = [line for line in narrow if line.startswith(("128 x", "8192 x", "16384 x"))]
    assert len(cells) == 4
    # The p99s of a 32-request cell are not judged (a p99 needs 368 requests): "?".
    assert " ".join(cells[0].split()) == "128 x 1 +60% ▲ +60% ▲ -5.0% ≈ -5.0% ? -40% ▲ -38% ? +0.0% ="
    assert "⚠ 128 x 128 in A: concurrency 128 exceeds what Cloud Run admits" in "\n".join(narrow)
    wide = "\n".join(shown(comparison_view(rows, a_name="off", b_name="on", width=200), 200))
    assert "0.5 → 0.8 (+60%) ▲" in wide


def test_untrusted_cell_says_why_once_under_the_summary() -> None:
    """Guards against an untrusted cell's numbers printed with no word of why (or the reason repeated)."""
    reason = "untrusted: the load generator ran out of CPU"
    cell = records("off")[0].model_copy(update={"trusted": False, "untrusted_reason": reason, "warnings": [reason]})
    text = "\n".join(shown(summary_table([cell]), 80))
    assert f"1 128 x 1 user: {reason}" in text
    assert text.count("ran out of CPU") == 1
