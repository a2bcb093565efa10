"""Batch jobs: `advise --batch REQUESTS --within HOURS` ranks by the cost to finish in time, priced for the hours
the job runs, and the stack it writes for a flex-start row runs long enough and previews."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from preview.__main__ import main as preview_main
from tests.conftest import ROOT, ensure_event_loop
from tests.gemma_mcp.conftest import connect, text_of
from verify.advise.options import PROVISIONING, AdviseOptions
from verify.advise.report import AdviseReport, render
from verify.advise.run import run_advise
from verify.advise.write import write_stack
from verify.cli import main as verify_main

# The nightly job: 200,000 documents of 3k tokens in, 300 out, within 6 hours.
NIGHTLY = AdviseOptions(
    prompt_tokens=3072,
    output_tokens=300,
    batch_requests=200_000,
    within_hours=6.0,
    provisioning=PROVISIONING,
    one_ranking=True,
    top=200,
)


@pytest.fixture(scope="module")
def nightly() -> AdviseReport:
    return run_advise(NIGHTLY)


def test_each_row_is_priced_for_the_hours_its_job_runs(nightly: AdviseReport) -> None:
    """Every TPU and GKE row was billed 730 hours a month whatever the job needed: each row now bills its units for
    one run's hours (its start included, within the 6 h) times 30 runs, and finishes the batch in time."""
    assert nightly.rows
    for row in nightly.rows:
        assert row.batch_run_hours is not None
        assert row.usd_per_run is not None
        assert 0 < row.batch_run_hours <= 6.0
        # A GKE cluster's fee and system node bill all month; everything else only while the job runs.
        assert row.usd_per_month >= row.usd_per_run * 30 - 1e-6
        assert row.usd_per_month < row.usd_per_hour * 730
    assert "batch of 200,000 requests within 6 h" in nightly.load
    assert "every row meets it" not in render(nightly)


def test_a_flex_start_or_spot_row_can_win(nightly: AdviseReport) -> None:
    """A flex-start v6e at $5.40/h lost to Cloud Run rows it should beat: priced per run, the cheapest way to
    finish the job is spot or flex-start capacity, and each such row says what to plan for."""
    assert nightly.rows[0].provisioning in {"spot", "flex-start"}
    flex = next(row for row in nightly.rows if row.platform == "tpu" and row.provisioning == "flex-start")
    assert flex.usd_per_month < flex.usd_per_hour * 6 * 30 + 1e-6
    assert any(caveat.startswith("flex-start:") for caveat in flex.caveats)


def test_a_written_flex_start_batch_stack_runs_long_enough_and_previews(nightly: AdviseReport, tmp_path: Path) -> None:
    """A flex-start node is deleted at its maxRunDuration (4 h unset): the written batch stack carries the run's
    hours with slack, and the real preview plans it."""
    for name in ("Pulumi.yaml", "__main__.py", "Pulumi.tpu-v6e.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    row = next(row for row in nightly.rows if row.platform == "tpu" and row.provisioning == "flex-start")
    assert row.batch_run_hours is not None
    path = write_stack(tmp_path, "nightly", row, revision="5e1f0c2d9a7b4e83c6d0f1a2b9e8c7d6a5f4e3b2")
    tpu = yaml.safe_load(path.read_text(encoding="utf-8"))["config"]["gemma-serving:tpu"]
    minutes = int(tpu["provisioning"]["maxRunDuration"].removesuffix("m"))
    assert minutes >= row.batch_run_hours * 60
    ensure_event_loop()
    assert preview_main(["--stack", "nightly", "--root", str(tmp_path), "--format", "json"]) == 0


def test_batch_needs_its_deadline(capsys: pytest.CaptureFixture[str]) -> None:
    """`--batch` without `--within` cannot be priced: a usage error naming both."""
    code = verify_main(["advise", "--batch", "1000", "--prompt-tokens", "512", "--output-tokens", "64"])
    assert code == 2
    assert "--within" in capsys.readouterr().err


async def test_the_mcp_tool_prices_a_batch_as_the_cli_does(nightly: AdviseReport) -> None:
    """An agent asking for the nightly job gets the same per-run pricing."""
    async with connect() as client:
        result = await client.call_tool(
            "advise",
            {
                "prompt_tokens": 3072,
                "output_tokens": 300,
                "batch_requests": 200_000,
                "within_hours": 6,
                "one_ranking": True,
                "top": 3,
            },
        )
    assert not result.is_error, text_of(result)
    rows = result.structured_content["rows"]
    assert [row["usd_per_month"] for row in rows] == pytest.approx([row.usd_per_month for row in nightly.rows[:3]])
