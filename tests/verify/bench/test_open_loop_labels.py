"""Open-loop cells are named by the rate that loaded them in every listing, never by their in-flight cap.

Red team (issue 46): open-loop cells were labelled "64 x 256" (the prompt length and the in-flight cap), which
reads as 256 users; a reader comparing it with a closed-loop cell of 256 users compared two different loads.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rich.console import Console

from gemma_mcp.compare_runs import _workload
from verify.bench.console import summary_table
from verify.bench.matrix import Run, judge
from verify.bench.matrix_command import load_runs
from verify.bench.matrix_report import csv_text, markdown
from verify.bench.results import CellRecord
from verify.bench.slo import parse_slo

L4 = Path(__file__).parent / "data" / "matrix" / "l4.jsonl"
CAP = 256


def _open_loop(record: CellRecord, rate: float) -> CellRecord:
    """The same cell as if sent at ``rate`` req/s with ``CAP`` requests in flight at most."""
    return record.model_copy(update={"request_rate": rate, "achieved_request_rate": rate, "max_concurrency": CAP})


def _runs() -> list[Run]:
    (l4,) = load_runs([L4])
    records = [r for r in l4.records if r.requested_context == 1024]
    rated = tuple(_open_loop(record, float(index + 1)) for index, record in enumerate(records))
    return [Run("l4-open", l4.path, rated, price_note=l4.price_note)]


def test_every_listing_names_an_open_loop_cell_by_its_rate() -> None:
    """`compare --matrix` (Markdown, the left-out list, CSV), the MCP compare answer and the bench summary's
    footnotes say "N req/s", and no listing calls the in-flight cap its users."""
    verdicts = judge(_runs(), [parse_slo("p99_ttft_ms=1000")])
    (verdict,) = [v for v in verdicts if v.workload.context == 1024]
    (run,) = verdict.runs
    assert run.chosen is not None
    rate = run.chosen.record.request_rate
    text = markdown(verdicts, active_hours=24, slo_text="p99_ttft_ms <= 1000")
    assert f"| l4-open | nvidia-l4 | gemma-4-12b-it | {rate:g} req/s |" in text
    assert f"{CAP} users" not in text
    assert any(line.startswith("- l4-open, ") and " req/s: " in line for line in text.splitlines())
    rows = list(csv.DictReader(io.StringIO(csv_text(verdicts))))
    assert {row["concurrency"] for row in rows} == {str(CAP)}
    assert all(row["request_rate"] for row in rows)  # the rate beside the cap, never the cap alone
    answer = _workload(verdict, 24)
    assert answer.runs[0].chosen_load == f"{rate:g} req/s"
    noted = run.cells[0].record.model_copy(update={"trusted": False, "untrusted_reason": "untrusted: test"})
    console = Console(width=100, file=io.StringIO(), record=True, color_system=None)
    console.print(summary_table([noted]))
    printed = console.export_text()
    assert f"1024 x {noted.request_rate:g} req/s: untrusted: test" in printed
    assert f"x {CAP}" not in printed
