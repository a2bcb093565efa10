"""`compare` shows each measured cell beside the latency model's estimate for what the cell claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.verify.bench.test_ceilings import physical_12b_on_l4, relabelled
from verify.bench.compare_command import CompareOptions, run_compare
from verify.bench.predicted import estimate_cell
from verify.bench.results import append_record
from verify.cli import main


def test_a_measured_cell_gets_the_estimate_for_its_claims() -> None:
    """A user reading a measured 12B-on-L4 cell wants to know whether it is what the model expects: the estimate
    is for the same model, accelerator, tokens and users, with the measured figure beside each estimated one."""
    cell = physical_12b_on_l4()
    found = estimate_cell(cell)
    assert found is not None
    assert found.model.id == "gemma-4-12b-it"
    values = found.values()
    measured, estimated = values["req/s"]
    assert measured == cell.request_throughput
    assert estimated is not None
    assert estimated > 0
    line = found.line("128 x 1 in A")
    assert "(est " in line
    assert "gemma-4-12b-it" in line
    assert "assumed" in line, "a served name that does not pin a variant says which one the estimate assumed"


def test_a_relabelled_cell_is_estimated_as_what_it_claims() -> None:
    """The 31B label on a 12B's numbers: the estimate is the 31B's on one L4 (far slower decode), so the two sit
    side by side and the gap is plain, beside the ceiling flag that leaves the cell out of the verdict."""
    honest = estimate_cell(physical_12b_on_l4())
    claimed = estimate_cell(relabelled(physical_12b_on_l4()))
    assert honest is not None
    assert claimed is not None
    assert claimed.model.id == "gemma-4-31b-it"
    assert claimed.estimate.at.tpot_s > honest.estimate.at.tpot_s * 1.5


def test_compare_prints_measured_beside_the_estimate_with_its_basis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the command's own output and in its Markdown: each cell's measured figures with the estimate beside
    them, the estimate's basis (formula, hardware facts, fitted factors) and its stated error."""
    a, b, markdown = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "out.md"
    append_record(a, physical_12b_on_l4())
    append_record(b, relabelled(physical_12b_on_l4()))
    assert main(["compare", str(a), str(b), "--allow-mismatch", "--markdown", str(markdown)]) == 0
    out = capsys.readouterr().out
    assert "measured beside the estimate" in out
    assert "in A: req/s" in out
    assert "in B: req/s" in out
    assert "estimate basis: latency model, docs/advisor.md" in out
    assert "median |error|" in out, "the error the fit showed on this family and kind of workload"
    text = markdown.read_text(encoding="utf-8")
    assert "## Measured beside the estimate" in text
    report = run_compare(a, b, CompareOptions(allow_mismatch=True))
    assert len([line for line in report.estimates if " in " in line and "(est " in line]) == 2
