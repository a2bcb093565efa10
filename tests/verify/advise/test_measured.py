"""Measurements decide, and only trustworthy ones: a trusted record overrides advise's estimate for its very
deployment both ways, and forged, stale or unreadable records are refused with a message naming them."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from serving.speed_records import SPEED_DIR, SpeedRecord, save_speed_records
from serving.vllm_facts import vllm_facts
from tests.conftest import ROOT
from tests.verify.bench.test_ceilings import physical_12b_on_l4
from verify import UsageError
from verify.advise.calibrate import calibrate
from verify.advise.options import AdviseOptions, Slo
from verify.advise.report import AdviseReport, Row, render
from verify.advise.run import run_advise
from verify.bench.results import append_record

TPOTS = ("mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms")
# One deployment the tests measure: the QAT 12B on a Cloud Run L4, one replica, 4 users at 512 + 256 tokens.
BASE = AdviseOptions(
    prompt_tokens=512,
    output_tokens=256,
    users=4,
    platforms=("cloud-run",),
    models=("gemma-4-12b-it",),
    variants=("qat-w4a16-ct",),
    max_replicas=1,
    draft_tokens=(0,),
    slo=Slo(p95_ttft_ms=60_000),
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("Pulumi.yaml", "Pulumi.l4.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def _l4(report: AdviseReport) -> Row | None:
    return next((row for row in report.rows if row.shape == "l4"), None)


@pytest.fixture
def estimate(project: Path) -> Row:
    row = _l4(run_advise(BASE, root=project))
    assert row is not None
    assert row.latency_basis.kind == "estimated"
    return row


def _record(project: Path, **changes: object) -> SpeedRecord:
    """A record of the BASE deployment, its source file written (so it is traceable), with ``changes``."""
    source = project / "results" / "l4.jsonl"
    source.parent.mkdir(exist_ok=True)
    source.write_text('{"cell": 1}\n', encoding="utf-8")
    values: dict[str, object] = {
        "model": "gemma-4-12b-it",
        "variant": "qat-w4a16-ct",
        "shape": "l4",
        "accelerator": "nvidia-l4",
        "chips": 1,
        "vllm_version": vllm_facts().release,
        "serving_args": {"--kv-cache-dtype": "fp8"},
        "prompt_tokens": 512,
        "output_tokens": 256,
        "concurrency": 4,
        "request_throughput": 0.2,
        "output_throughput": 51.0,
        "p95_ttft_ms": 900.0,
        "mean_ttft_ms": 700.0,
        "mean_tpot_ms": 60.0,
        "p95_tpot_ms": 75.0,
        "measured_at": "2026-11-30T12:00:00+00:00",
        "source_file": "results/l4.jsonl",
        "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
    }
    merged = {**values, **changes}
    # A cell of 400 requests, its 95% intervals 5 % either side of its p95s, unless the test says otherwise.
    merged.setdefault("completed", 400)
    if "ci" not in merged:
        p95s = {k: v for k in ("p95_ttft_ms", "p95_tpot_ms") if isinstance(v := merged.get(k), float)}
        merged["ci"] = {k: [0.95 * v, 1.05 * v] for k, v in p95s.items()}
    record = SpeedRecord.model_validate(merged)
    save_speed_records(project, [record])
    return record


def test_a_record_meeting_the_slo_admits_a_row_the_estimate_excluded(project: Path, estimate: Row) -> None:
    """A probe sent a user to a dearer option where a measurement showed the cheaper one would do: the estimate
    said the L4 misses a TTFT SLO, the trusted record at this load says it meets it, and the record decides."""
    slo = Slo(p95_ttft_ms=estimate.p95_ttft_ms * 0.5)
    assert _l4(run_advise(BASE.model_copy(update={"slo": slo}), root=project)) is None
    _record(project, p95_ttft_ms=estimate.p95_ttft_ms * 0.4, mean_ttft_ms=estimate.p95_ttft_ms * 0.3)
    row = _l4(run_advise(BASE.model_copy(update={"slo": slo}), root=project))
    assert row is not None
    assert row.latency_basis.kind == "measured"
    assert row.measured is not None
    assert row.measured["p95_ttft_ms"] == pytest.approx(estimate.p95_ttft_ms * 0.4)


def test_a_record_missing_the_slo_excludes_a_row_the_estimate_admitted(project: Path, estimate: Row) -> None:
    """The estimate admits the L4; the trusted record at this load measured a p95 TTFT over the SLO: excluded,
    the exclusion naming the record."""
    slo = Slo(p95_ttft_ms=estimate.p95_ttft_ms * 2)
    _record(project, p95_ttft_ms=estimate.p95_ttft_ms * 3)
    report = run_advise(BASE.model_copy(update={"slo": slo}), root=project)
    assert _l4(report) is None
    (reason,) = [e for e in report.excluded if e.reason == "measured: misses the SLO"]
    assert "results/l4.jsonl" in reason.examples[0]


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"vllm_version": "0.30.1"}, "another vLLM release"),
        ({"speculative_tokens": 3}, "MTP on where the row has it off"),
        ({"serving_args": {"--kv-cache-dtype": "auto"}}, "a bf16 KV cache where the row's is fp8"),
        ({"serving_args": {"--kv-cache-dtype": "fp8", "--tensor-parallel-size": "2"}}, "another TP"),
    ],
)
def test_a_record_of_another_deployment_is_not_used(
    project: Path, estimate: Row, changes: dict[str, object], why: str
) -> None:
    """A record matched whatever the vLLM version and serving args: its figures then judged a deployment that was
    never measured. A record differing in any speed-changing argument leaves the estimate standing."""
    slo = Slo(p95_ttft_ms=estimate.p95_ttft_ms * 2)
    _record(project, p95_ttft_ms=estimate.p95_ttft_ms * 3, **changes)
    row = _l4(run_advise(BASE.model_copy(update={"slo": slo}), root=project))
    assert row is not None, why
    assert row.latency_basis.kind == "estimated", why


def test_a_p95_tpot_slo_is_judged_on_the_records_p95(project: Path, estimate: Row) -> None:
    """A p95 TPOT SLO was judged on the mean TPOT: a record whose mean meets it and whose p95 does not misses."""
    _record(project, mean_tpot_ms=60.0, p95_tpot_ms=120.0)
    report = run_advise(BASE.model_copy(update={"slo": Slo(p95_tpot_ms=100.0)}), root=project)
    assert _l4(report) is None
    assert any(e.reason == "measured: misses the SLO" for e in report.excluded)


def test_records_answer_rate_loads(project: Path, estimate: Row) -> None:
    """`--rate` loads never used records: a closed loop that sustained more than the rate answers it."""
    _record(project, request_throughput=0.35, output_throughput=89.0)
    options = BASE.model_copy(update={"users": None, "rate": 0.3})
    row = _l4(run_advise(options, root=project))
    assert row is not None
    assert row.latency_basis.kind == "measured"
    assert "sustained" in row.latency_basis.source


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"source_sha256": "0" * 64}, "sha256"),
        ({"source_file": "results/gone.jsonl"}, "is missing"),
        ({"p95_ttft_ms": 0.001, "mean_ttft_ms": 0.001, "prompt_tokens": 8000, "prefix_cache_hit_rate": 0.0}, "floor"),
        ({"mean_tpot_ms": 0.5, "p95_tpot_ms": 0.6}, "bandwidth ceiling"),
        ({"request_throughput": 1e9}, "bandwidth ceiling"),
    ],
)
def test_a_forged_record_is_refused_naming_it(project: Path, changes: dict[str, object], named: str) -> None:
    """A record whose sha256 was all zeros and whose source did not exist was shown as measured at 10^9 req/s; a
    1 us prefill of 8,000 tokens moved the answer. Each is refused, said in a note naming the record and why."""
    _record(project, **changes)
    report = run_advise(BASE, root=project)
    row = _l4(report)
    assert row is None or row.latency_basis.kind == "estimated"
    refused = [note for note in report.notes if note.startswith("speed record refused")]
    assert refused
    assert named in refused[0]
    assert "gemma-4-12b-it qat-w4a16-ct on l4" in refused[0]


def test_an_unreadable_record_file_is_an_error_naming_file_and_line(project: Path) -> None:
    """One unreadable record file broke every advise run with a traceback: a usage error naming file and line."""
    folder = project / SPEED_DIR
    folder.mkdir(parents=True)
    (folder / "broken.jsonl").write_text("\n{not json\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"broken\.jsonl:2"):
        run_advise(BASE, root=project)


def test_a_20_sample_p95_just_under_the_slo_does_not_admit_a_row(project: Path, estimate: Row) -> None:
    """A p95 from 20 requests is about their 19th-slowest: one just under the SLO brought back a row the estimate
    excluded, sending the user to a deployment whose real p95 may well miss. 20 samples are fewer than the 72 a
    p95 interval needs, so the record does not decide and the estimate's exclusion stands."""
    slo = Slo(p95_ttft_ms=estimate.p95_ttft_ms * 0.5)
    _record(project, p95_ttft_ms=estimate.p95_ttft_ms * 0.49, completed=20, ci={})
    assert _l4(run_advise(BASE.model_copy(update={"slo": slo}), root=project)) is None


def test_an_interval_straddling_the_slo_leaves_the_estimate_and_says_so(project: Path, estimate: Row) -> None:
    """A record whose p95 is over the SLO but whose interval reaches under it excluded a row on noise: it does not
    decide, the estimate's row stays, and the row says why ("not decided", the samples and the interval)."""
    slo = Slo(p95_ttft_ms=estimate.p95_ttft_ms * 2)
    p95 = estimate.p95_ttft_ms * 2.1
    _record(project, p95_ttft_ms=p95, completed=100, ci={"p95_ttft_ms": [p95 * 0.8, p95 * 1.2]})
    row = _l4(run_advise(BASE.model_copy(update={"slo": slo}), root=project))
    assert row is not None
    assert row.latency_basis.kind == "estimated"
    (note,) = [c for c in row.caveats if "not decided" in c]
    assert "100 samples, interval" in note
    assert "the estimate stands" in note


def test_a_record_without_a_sample_count_cannot_decide_a_percentile(project: Path, estimate: Row) -> None:
    """Records written before they kept a count carry no interval: such a record's p95 over the SLO excluded a row,
    however few requests it came from. It does not decide a percentile SLO, and the row says so."""
    slo = Slo(p95_ttft_ms=estimate.p95_ttft_ms * 2)
    _record(project, p95_ttft_ms=estimate.p95_ttft_ms * 3, completed=None, ci={})
    row = _l4(run_advise(BASE.model_copy(update={"slo": slo}), root=project))
    assert row is not None
    assert row.latency_basis.kind == "estimated"
    assert any("carries no sample count" in c for c in row.caveats)


def test_calibrate_refuses_another_models_run_as_the_stacks(project: Path) -> None:
    """`calibrate` recorded a tiny test model's run as the 12B on an L4 at 4.3 ms TPOT (about 9 times the 12B's
    bandwidth ceiling): a cell whose served name is not the stack's model is refused, and so is a cell
    impossible for the stack's model whatever its name."""
    results = project / "tiny.jsonl"
    tiny = physical_12b_on_l4().model_copy(
        update={"model": "hf-internal-testing/tiny-random-gpt2", "mean_tpot_ms": 4.3, "median_tpot_ms": 4.3}
    )
    append_record(results, tiny)
    answer = calibrate(results, "l4", root=project)
    assert not answer.records
    assert "is not the stack's model" in answer.refused[0]
    fast = project / "fast.jsonl"
    append_record(fast, physical_12b_on_l4().model_copy(update=dict.fromkeys(TPOTS, 4.3)))
    answer = calibrate(fast, "l4", root=project)
    assert not answer.records
    assert "ceiling" in answer.refused[0]


def test_no_slo_says_what_it_assumed_and_ranks_no_unusable_row() -> None:
    """With no SLO, 10^12 users got one replica at a predicted p95 TTFT of 23,000 years, "meeting" an SLO nobody
    stated. Advise assumes one, says so, and ranks no row its own prediction calls unusable."""
    report = run_advise(AdviseOptions(prompt_tokens=512, output_tokens=128, users=10**12))
    assert "assumed" in report.slo
    assert all(row.p95_ttft_ms <= 10_000 for row in report.rows)
    assert any("no SLO was given" in note for note in report.notes)
    assert "every row meets it" not in render(report)
