"""The measured loop: trusted bench cells become speed records, and advise prefers them over its estimate."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from serving.speed_records import SpeedRecord, load_speed_records, save_speed_records
from tests.conftest import ROOT
from tests.verify.bench.test_ceilings import physical_12b_on_l4, relabelled
from verify.advise.calibrate import calibrate
from verify.advise.options import AdviseOptions, Slo
from verify.advise.report import render
from verify.advise.run import run_advise
from verify.bench.results import append_record


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "Pulumi.l4.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_trusted_cells_become_records_keyed_by_what_changes_speed(project: Path) -> None:
    """A record must say what served the cell (model, variant, shape, vLLM, speed flags) and where its numbers
    come from (the file and its hash), or a figure can neither be matched nor traced."""
    results = project / "l4.jsonl"
    intervals = {"p95_ttft_ms": [900.0, 1100.0], "p95_tpot_ms": [47.0, 52.0], "p99_ttft_ms": [1000.0, 1500.0]}
    cell = physical_12b_on_l4().model_copy(update={"ci": intervals})
    append_record(results, cell)
    answer = calibrate(results, "l4", root=project)
    assert not answer.refused
    (record,) = load_speed_records(project)
    assert (record.model, record.variant, record.shape, record.accelerator) == (
        "gemma-4-12b-it",
        "qat-w4a16-ct",
        "l4",
        "nvidia-l4",
    )
    assert record.serving_args["--max-num-seqs"] == "64"
    assert record.serving_args["--kv-cache-dtype"] == "fp8"
    assert record.vllm_version == "0.32.0"
    assert record.source_sha256 == hashlib.sha256(results.read_bytes()).hexdigest()
    assert record.source_file == "l4.jsonl"
    assert record.completed == cell.completed, "a record without its count can never decide a percentile SLO"
    assert record.ci == {"p95_ttft_ms": [900.0, 1100.0], "p95_tpot_ms": [47.0, 52.0]}
    calibrate(results, "l4", root=project)
    assert len(load_speed_records(project)) == 1, "calibrating the same file twice writes each record once"


def test_a_cell_over_its_ceiling_is_refused_as_a_record(project: Path) -> None:
    """The write-ups' copied row would have calibrated the 31B with the 12B's speed: refused, with the reason."""
    results = project / "relabelled.jsonl"
    append_record(results, relabelled(physical_12b_on_l4()))
    answer = calibrate(results, "l4", root=project)
    assert not answer.records
    (refused,) = answer.refused
    assert "above its physical ceiling" in refused
    assert load_speed_records(project) == []


def test_advise_prefers_a_measured_figure_and_shows_the_estimate(project: Path) -> None:
    """Where a record was measured on the row's model, variant and shape at its workload and per-replica load,
    the row says measured, with the source file, and keeps the estimate beside it."""
    options = AdviseOptions(
        prompt_tokens=512,
        output_tokens=256,
        users=4,
        slo=Slo(p95_ttft_ms=5000),
        platforms=("cloud-run",),
        models=("gemma-4-12b-it",),
        variants=("qat-w4a16-ct",),
    )
    estimated = [row for row in run_advise(options, root=project).rows if row.shape == "l4"]
    assert estimated
    assert estimated[0].latency_basis.kind == "estimated"
    per_replica = -(-4 // estimated[0].replicas)
    source = project / "results" / "l4.jsonl"
    source.parent.mkdir()
    source.write_text("{}\n", encoding="utf-8")
    record = SpeedRecord(
        model="gemma-4-12b-it",
        variant="qat-w4a16-ct",
        shape="l4",
        accelerator="nvidia-l4",
        chips=1,
        vllm_version="0.32.0",
        serving_args={"--max-num-seqs": "64", "--kv-cache-dtype": "fp8"},
        prompt_tokens=512,
        output_tokens=256,
        concurrency=per_replica,
        request_throughput=0.3,
        output_throughput=77.0,
        p95_ttft_ms=640.0,
        mean_tpot_ms=49.0,
        completed=400,
        ci={"p95_ttft_ms": [600.0, 700.0]},
        measured_at="2026-11-26T12:00:00+00:00",
        source_file="results/l4.jsonl",
        source_sha256=hashlib.sha256(source.read_bytes()).hexdigest(),
    )
    save_speed_records(project, [record])
    (row,) = [row for row in run_advise(options, root=project).rows if row.shape == "l4"]
    assert row.latency_basis.kind == "measured"
    assert "results/l4.jsonl" in row.latency_basis.source
    assert "estimate beside it" in row.latency_basis.source
    assert row.measured is not None
    assert row.measured["p95_ttft_ms"] == 640.0
    # The table a person reads shows both side by side: the measured p95 TTFT, and the estimate beside it.
    report = run_advise(options, root=project)
    line = next(line for line in render(report).splitlines() if " l4 " in line and "qat-w4a16-ct" in line)
    assert f"640 (est {row.p95_ttft_ms:,.0f})" in line
    assert "measured, est beside" in line
