"""`make matrix`: every catalog model x variant x shape offline, each a fit with figures or a refusal with numbers."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from preview.matrix import FitMatrixOptions, main, render
from preview.stack_file import ROOT_ENVIRONMENT_VARIABLE
from serving.catalog import catalog, catalog_model
from serving.pricing import price_book
from serving.speed_records import SpeedRecord, save_speed_records
from stacks.fit import SHAPES, Workload, fit, fit_matrix, shape_named
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    return [row.as_dict() for row in fit_matrix(Workload())]


def test_one_row_per_combination(rows: list[dict[str, object]]) -> None:
    """The JSON has exactly one row per model x variant x shape: nothing skipped, nothing twice."""
    expected = {(m.id, v, s.name) for m in catalog().values() for v in m.variants for s in SHAPES}
    assert len(rows) == len(expected)
    assert {(r["model"], r["variant"], r["shape"]) for r in rows} == expected


def test_every_model_fits_somewhere_and_every_refusal_has_a_reason(rows: list[dict[str, object]]) -> None:
    """Done-when: each model has a variant that fits a shape; every "no" says why, naming the key."""
    for model in catalog():
        assert any(r["fits"] for r in rows if r["model"] == model), model
    for row in rows:
        if not row["fits"]:
            assert isinstance(row["whyNot"], str)
            assert row["whyNot"].split(":", 1)[0] in {"model.variant", "tpu.acceleratorType", "gke.memoryGib"}


def test_fits_carry_figures_and_labelled_ceilings(rows: list[dict[str, object]]) -> None:
    """A fit has KV tokens, sequences, a price (where the price book has a rate: none is guessed), and
    ceilings labelled as ceilings (not measurements)."""
    priced = price_book().gke.machines_per_hour
    unpriced = {shape.name for shape in SHAPES if shape.platform == "gke" and shape.name not in priced}
    for row in rows:
        if row["fits"]:
            assert row["kvTokens"] > 0  # type: ignore[operator]
            assert row["sequences"] >= 1  # type: ignore[operator]
            ceilings = row["ceilings"]
            assert isinstance(ceilings, dict)
            assert "not measurements" in ceilings["note"]
            assert ceilings["decodeTokensPerS"] > 0
            if row["shape"] in unpriced:
                assert row["usdPerHour"] is None
                continue
            assert row["usdPerHour"] > 0  # type: ignore[operator]
            assert ceilings["usdPerMillionOutputTokens"] > 0


def test_only_nvfp4_of_the_26b_fits_the_l4_and_the_refusals_have_numbers() -> None:
    """The hand-made deployments' "26B on L4": of the variants vLLM serves only NVFP4 (weight-only, 16.4 GB)
    fits 24 GB, unconfirmed; every refusal gives the numbers."""
    model = catalog_model("gemma-4-26b-a4b-it")
    answers = [fit(model, variant, shape_named("l4"), Workload()) for variant in model.variants]
    assert {answer.variant for answer in answers if answer.fits} == {"nvfp4", "nvfp4-nvidia"}
    fp8 = next(answer for answer in answers if answer.variant == "fp8")
    assert fp8.why_not is not None
    assert "weights need 27.08 GB (25.22 GiB)" in fp8.why_not
    assert "only 20.12 GiB is usable" in fp8.why_not


def test_text_only_frees_the_towers() -> None:
    """--language-model-only skips the vision encoder: the 31B's weights drop by its ~1.1 GB."""
    model, shape = catalog_model("gemma-4-31b-it"), shape_named("rtx-pro-6000")
    full = fit(model, "qat-w4a16-ct", shape, Workload())
    text = fit(model, "qat-w4a16-ct", shape, Workload(text_only=True))
    assert full.weight_bytes is not None
    assert text.weight_bytes is not None
    assert full.weight_bytes - text.weight_bytes == 1_100_000_000
    assert text.kv_tokens > full.kv_tokens  # type: ignore[operator]


def test_moe_decode_reads_the_touched_experts_only() -> None:
    """The 26B-A4B's decode ceiling is above the 31B's on the same card: 3.8B active, not 25.2B."""
    shape = shape_named("rtx-pro-6000")
    moe = fit(catalog_model("gemma-4-26b-a4b-it"), "nvfp4", shape, Workload())
    dense = fit(catalog_model("gemma-4-31b-it"), "nvfp4", shape, Workload())
    assert moe.prefill_ceiling_tokens_per_s > 7 * dense.prefill_ceiling_tokens_per_s  # type: ignore[operator]
    assert moe.decode_ceiling_tokens_per_s > dense.decode_ceiling_tokens_per_s  # type: ignore[operator]


def test_cli_json_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints the rows; an unknown shape is a usage error (exit 2) listing the allowed ones."""
    assert main(["--model", "gemma-4-e4b-it", "--shape", "l4", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["workload"]["contextTokens"] == 8192
    assert {row["variant"] for row in document["rows"]} == set(catalog_model("gemma-4-e4b-it").variants)
    assert main(["--shape", "a100"]) == 2
    assert "--shape 'a100': allowed: l4, rtx-pro-6000, v6e-1, v6e-4, v6e-8" in capsys.readouterr().err


def test_cli_text_labels_ceilings(capsys: pytest.CaptureFixture[str]) -> None:
    """The text table says the ceilings are ceilings and lists why each refused combination does not fit."""
    assert main(["--model", "gemma-4-31b-it", "--shape", "l4", "--shape", "v6e-8"]) == 0
    out = capsys.readouterr().out
    assert "CEILINGS from peak bf16 FLOP/s and memory bandwidth (not measurements" in out
    (line,) = [line for line in out.splitlines() if line.startswith("  a precision the accelerator does not serve")]
    assert "gemma-4-31b-it nvfp4 on v6e-8" in line
    assert "E.g. model.variant: gemma-4-31b-it" in line


def test_nvfp4_on_an_l4_is_planned_weight_only_with_its_speed_unconfirmed() -> None:
    """The L4 was refused NVFP4 ("needs Blackwell") although vLLM serves it weight-only through Marlin on
    capability >= 7.5; now it is planned, and the plan says the speed of that path is unconfirmed."""
    row = fit(catalog_model("gemma-4-26b-a4b-it"), "nvfp4", shape_named("l4"), Workload())
    assert row.fits
    assert any("speed unconfirmed" in warning for warning in row.warnings)
    tpu = fit(catalog_model("gemma-4-26b-a4b-it"), "nvfp4", shape_named("v6e-4"), Workload())
    assert not tpu.fits
    assert "NVIDIA weight format" in (tpu.why_not or "")


def test_the_matrix_covers_every_gpu_count_and_tpu_slice() -> None:
    """Done-when: H100 nodes, 2/4/8 x L4 nodes and the v6e slices are compared, tensor parallel chosen per row."""
    counts = {(shape.accelerator, shape.chips) for shape in SHAPES}
    for chips in (1, 2, 4, 8):
        assert ("nvidia-l4", chips) in counts
        assert ("nvidia-h100-80gb", chips) in counts
    assert {"v6e-1", "v6e-4", "v6e-8"} <= {shape.name for shape in SHAPES}
    row = fit(catalog_model("gemma-4-12b-it"), "qat-w4a16-ct", shape_named("g2-standard-48"), Workload())
    assert row.fits
    assert (row.tensor_parallel, row.replicas_per_node) == (1, 4)  # the smallest TP that fits: 4 replicas a node


def test_a_speed_record_shows_beside_the_ceilings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where `gemma-verify calibrate` recorded a measured cell of a combination at the matrix's workload, the
    matrix shows it (and its source) beside the ceilings: a measured figure over an estimate, both shown."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    monkeypatch.setenv(ROOT_ENVIRONMENT_VARIABLE, str(tmp_path))
    record = SpeedRecord(
        model="gemma-4-12b-it",
        variant="qat-w4a16-ct",
        shape="l4",
        accelerator="nvidia-l4",
        chips=1,
        vllm_version="0.32.0",
        serving_args={},
        prompt_tokens=8192,
        output_tokens=1024,
        concurrency=8,
        request_throughput=0.1,
        output_throughput=123.0,
        measured_at="2026-11-26T12:00:00+00:00",
        source_file="results/l4.jsonl",
        source_sha256="b" * 64,
    )
    save_speed_records(tmp_path, [record])
    options = FitMatrixOptions(models=("gemma-4-12b-it",), variants=("qat-w4a16-ct",), shapes=("l4",))
    text = render(options)
    assert "123 @8 (est " in text, "the latency model's estimate at the same 8 users sits beside the measured figure"
    assert "results/l4.jsonl (sha256 bbbbbbbbbbbb)" in text
    assert "est: latency model, docs/advisor.md" in text
    (row,) = json.loads(render(dataclasses.replace(options, as_json=True)))["rows"]
    assert row["measured"]["output_throughput"] == 123.0
    estimated = row["estimatedAtMeasured"]
    assert estimated["users"] == 8
    assert estimated["outputTokensPerS"] > 0
    assert "median |error|" in estimated["error"], "the error the fit showed on this family and kind of workload"


def test_a_gke_tpu_machine_type_is_ranked_only_where_no_tpu_vm_slice_repeats_it() -> None:
    """A TPU sold through GKE only has no TPU VM slice to stand for it: dropping its machine type as a repeat
    left `make matrix` without a row for the chip at all."""
    from serving.shapes import accelerator_facts, shapes

    slices = {(entry.accelerator, entry.accelerators) for entry in shapes(platform="tpu-vm")}
    ranked = {shape.name for shape in SHAPES}
    for entry in shapes(platform="gke"):
        if accelerator_facts(entry.accelerator).family == "tpu":
            assert (entry.name in ranked) is ((entry.accelerator, entry.accelerators) not in slices), entry.name
