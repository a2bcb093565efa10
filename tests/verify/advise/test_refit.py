"""`gemma-verify calibrate --refit`: the latency model's factors fitted again with the project's speed records."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from serving import speed_facts
from serving.speed_facts import FamilyFactors
from serving.speed_records import SpeedRecord, save_speed_records
from stacks.latency_fit import RECORDS_CLIENT, Params, fit, record_state, record_targets
from verify.advise.refit import render, run_refit

KNOWN = Params(
    families=(
        ("gpu", FamilyFactors(compute=0.45, bandwidth=0.72, step_ms=1.6)),
        ("tpu", FamilyFactors(compute=0.3, bandwidth=0.6, step_ms=2.0)),
    ),
    clients=(("A", 0.15), (RECORDS_CLIENT, 0.04)),
    host_us_per_token=12.0,
    sweep_output_tokens=3,
)
# (model, variant, shape, accelerator, prompt, output, users): short and long prompts, one stream and batches,
# three model sizes, so compute, bandwidth, the fixed time, the host and the client each show in some figure.
CELLS = (
    ("gemma-4-12b-it", "qat-w4a16-ct", "l4", "nvidia-l4", 128, 256, 1),
    ("gemma-4-12b-it", "qat-w4a16-ct", "l4", "nvidia-l4", 4096, 64, 8),
    ("gemma-4-e4b-it", "qat-w4a16-ct", "l4", "nvidia-l4", 2048, 128, 4),
    ("gemma-4-12b-it", "qat-w4a16-ct", "rtx-pro-6000", "nvidia-rtx-pro-6000", 8192, 128, 16),
    ("gemma-4-12b-it", "qat-w4a16-ct", "rtx-pro-6000", "nvidia-rtx-pro-6000", 256, 512, 64),
    ("gemma-4-26b-a4b-it", "fp8", "rtx-pro-6000", "nvidia-rtx-pro-6000", 1024, 256, 8),
)


def _synthetic() -> list[SpeedRecord]:
    """Records whose figures are the model's own under KNOWN: a refit must find KNOWN again."""
    records = []
    for model, variant, shape, accelerator, prompt, output, users in CELLS:
        template = SpeedRecord(
            model=model,
            variant=variant,
            shape=shape,
            accelerator=accelerator,
            chips=1,
            vllm_version="0.32.0",
            serving_args={"--kv-cache-dtype": "fp8"},
            prompt_tokens=prompt,
            output_tokens=output,
            concurrency=users,
            request_throughput=1.0,
            output_throughput=1.0,
            measured_at="2026-12-02T00:00:00+00:00",
            source_file="results/synthetic.jsonl",
            source_sha256="c" * 64,
        )
        state = record_state(template, KNOWN)
        assert state is not None
        assert not state.saturated
        records.append(
            template.model_copy(
                update={
                    "request_throughput": state.request_rate,
                    "output_throughput": state.request_rate * output,
                    "mean_ttft_ms": state.ttft_mean_s * 1000,
                    "mean_tpot_ms": state.tpot_s * 1000,
                }
            )
        )
    return records


def test_a_refit_recovers_known_factors_from_synthetic_records() -> None:
    """Done when: records built from known factors give those factors back within 5 %: the refit's fit, its
    record predictions and its parameters agree, so a real project's records move the factors to the truth."""
    start = Params(
        families=(
            ("gpu", FamilyFactors(compute=0.3, bandwidth=0.5, step_ms=0.5)),
            ("tpu", FamilyFactors(compute=0.3, bandwidth=0.6, step_ms=2.0)),
        ),
        clients=(("A", 0.15), (RECORDS_CLIENT, 0.1)),
        host_us_per_token=30.0,
        sweep_output_tokens=3,
    )
    found = fit(record_targets(_synthetic()), start=start)
    gpu, truth = found.family("gpu"), KNOWN.family("gpu")
    assert gpu.compute == pytest.approx(truth.compute, rel=0.05)
    assert gpu.bandwidth == pytest.approx(truth.bandwidth, rel=0.05)
    assert gpu.step_ms == pytest.approx(truth.step_ms, rel=0.05)
    assert found.host_us_per_token == pytest.approx(KNOWN.host_us_per_token, rel=0.05)
    assert found.client(RECORDS_CLIENT) == pytest.approx(KNOWN.client(RECORDS_CLIENT), rel=0.05)
    assert found.family("tpu") == start.family("tpu"), "no TPU record: the TPU factors are left as they were"


def test_refit_writes_its_provenance_where_every_estimate_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refit's result is the file every estimate reads, with what it was fitted to (the records' files and
    their SHA-256), and the report names what moved."""
    source = tmp_path / "results" / "synthetic.jsonl"
    source.parent.mkdir()
    source.write_text("{}\n", encoding="utf-8")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    save_speed_records(tmp_path, [r.model_copy(update={"source_sha256": digest}) for r in _synthetic()])
    (tmp_path / "Pulumi.yaml").write_text("name: gemma-serving\nruntime: python\n", encoding="utf-8")
    target = tmp_path / "latency-efficiency.json"
    target.write_text(speed_facts.EFFICIENCY_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(speed_facts, "EFFICIENCY_FILE", target)
    speed_facts.fitted_efficiency.cache_clear()
    try:
        answer = run_refit(tmp_path, with_leave_one_out=False, priors=False)
        stored = json.loads(target.read_text(encoding="utf-8"))
        assert stored["provenance"]["command"] == "gemma-verify calibrate --refit"
        sources = stored["provenance"]["records"]
        assert sum(source["cells"] for source in sources) == len(CELLS)
        assert all(len(source["sha256"]) == 64 and source["file"].startswith("calibration/") for source in sources)
        assert speed_facts.fitted_efficiency().families["gpu"].compute == answer.after.family("gpu").compute
        text = render(answer)
        assert "speed records" in text
        assert "wrote" in text
    finally:
        speed_facts.fitted_efficiency.cache_clear()


def test_advise_drafts_at_the_acceptance_a_record_measured() -> None:
    """Where the project measured the checkpoints' MTP counters, advise weighs MTP at that acceptance, not the
    default: a quantized target that accepts 5 % must not be ranked as if it accepted 74 %."""
    from verify.advise.options import AdviseOptions
    from verify.advise.run import _Excluded, candidates, measured_counters

    record = _synthetic()[0].model_copy(
        update={"variant": "bf16", "speculative_tokens": 3, "spec_decode_drafts": 1000.0, "spec_decode_accepted": 60.0}
    )
    counters = measured_counters([record], "gemma-4-12b-it", "bf16")
    assert counters is not None
    assert (counters.drafts, counters.accepted, counters.draft_tokens) == (1000.0, 60.0, 3)
    options = AdviseOptions(
        prompt_tokens=512,
        output_tokens=256,
        users=4,
        models=("gemma-4-12b-it",),
        variants=("bf16",),
        platforms=("gke",),
        draft_tokens=(0, 2),
    )
    found = candidates(options, _Excluded(), [record])
    drafted = [c for c in found if c.speculative_tokens]
    default = [c for c in candidates(options, _Excluded()) if c.speculative_tokens]
    assert all(
        c.replica.speculation is not None and c.replica.speculation.source.startswith("measured") for c in drafted
    )
    assert len(drafted) < len(default), "at 6 % accepted MTP no longer pays where the default said it would"
