"""What a platform can keep running: no steady row without its restart gap, preemption risk or cold starts."""

from __future__ import annotations

from verify.advise.options import AdviseOptions, Slo
from verify.advise.run import run_advise

STEADY = AdviseOptions(
    prompt_tokens=2048,
    output_tokens=256,
    users=8,
    slo=Slo(p95_ttft_ms=5000),
    provisioning=("on-demand", "spot", "flex-start"),
    one_ranking=True,
    top=500,
)


def test_a_flex_start_row_never_meets_a_steady_slo_without_its_restart_gap() -> None:
    """A flex-start TPU was priced at 730 hours for a node Google deletes at its maxRunDuration: every flex-start
    row of a steady answer says it restarts, the gap each restart leaves and the availability that leaves."""
    rows = [row for row in run_advise(STEADY).rows if row.provisioning == "flex-start"]
    assert rows
    for row in rows:
        (gap,) = [c for c in row.caveats if c.startswith("flex-start: Google deletes")]
        assert "gap of at least" in gap
        assert "% of the month" in gap


def test_spot_rows_carry_their_preemption_risk_and_fallback() -> None:
    """Spot rows ignored preemption: each says Google can reclaim it and what the stack falls back on."""
    rows = [row for row in run_advise(STEADY).rows if row.provisioning == "spot"]
    assert rows
    for row in rows:
        assert any(c.startswith("spot: Google can reclaim") and "fallback" in c for c in row.caveats)


def test_machine_types_not_sold_on_demand_are_not_offered_on_demand() -> None:
    """a3-highgpu with 1, 2 or 4 GPUs is not sold on demand (the shapes table's machine family): no such row."""
    report = run_advise(STEADY.model_copy(update={"platforms": ("gke",)}))
    assert not [r for r in report.rows if r.shape.startswith("a3-highgpu") and r.provisioning == "on-demand"]
    assert any(r.shape.startswith("a3-highgpu") for r in report.rows)


def test_a_scale_to_zero_rows_p95_ttft_includes_the_cold_start_at_idle_gaps() -> None:
    """A sparse workload pays the ~minutes cold start at most requests: a Cloud Run row's p95 TTFT includes it (or
    the row is excluded for it), and the row says at what rate it stays warm."""
    sparse = AdviseOptions(
        prompt_tokens=1024,
        output_tokens=128,
        rate=0.0005,
        platforms=("cloud-run",),
        slo=Slo(p95_ttft_ms=600_000),
        one_ranking=True,
        top=50,
    )
    report = run_advise(sparse)
    assert report.rows
    for row in report.rows:
        assert row.cold_start_share is not None
        assert row.cold_start_share > 0.5
        assert row.p95_ttft_ms > 60_000  # minutes of weights and start, not the warm prefill's seconds
        assert any("stays warm above" in c for c in row.caveats)
    strict = run_advise(sparse.model_copy(update={"slo": Slo(p95_ttft_ms=5000)}))
    assert not strict.rows
    assert any(e.reason.startswith("scale to zero: the cold start") for e in strict.excluded)
