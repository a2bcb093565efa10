"""``--find-max-rate``: the bracket-and-bisect rule, judged probes, and the answer with its bracket."""

from __future__ import annotations

import pytest

from verify.bench.max_rate import MAX_HALVINGS, Probe, SearchRule, UnjudgedProbeError, judge_probe, next_rate, search
from verify.bench.results import CellRecord
from verify.bench.slo import parse_slo

RULE = SearchRule(start=1.0, ceiling=64.0, tolerance=0.1, max_probes=12)


def _probe(rate: float, *, passed: bool) -> Probe:
    return Probe(rate, passed=passed, confident=True, why="")


def test_the_rule_doubles_then_bisects_then_stops_within_the_tolerance() -> None:
    """Guards against a search that never ends or stops at a bracket wider than it says."""
    capacity = 13.0
    probes: list[Probe] = []
    rates = []
    while True:
        rate, stopped = next_rate(probes, RULE)
        if rate is None:
            break
        rates.append(rate)
        probes.append(_probe(rate, passed=rate <= capacity))
    assert rates[:5] == [1.0, 2.0, 4.0, 8.0, 16.0]  # the bracket: 8 passes, 16 fails
    assert rates[5] == 12.0  # then the midpoint
    best = max(p.rate for p in probes if p.passed)
    lowest_failing = min(p.rate for p in probes if not p.passed and p.rate > best)
    assert best <= capacity < lowest_failing
    assert lowest_failing <= best * 1.1
    assert "within 10%" in stopped


def test_the_rule_halves_when_the_start_fails_and_gives_up_at_the_floor() -> None:
    probes = [_probe(1.0, passed=False)]
    assert next_rate(probes, RULE) == (0.5, "")
    probes = [_probe(1.0 / 2**k, passed=False) for k in range(MAX_HALVINGS + 1)]
    rate, stopped = next_rate(probes, RULE)
    assert rate is None
    assert "even" in stopped


def test_the_rule_stops_at_the_ceiling_and_after_max_probes() -> None:
    rate, stopped = next_rate([_probe(64.0, passed=True)], RULE)
    assert rate is None
    assert "--rate-max 64" in stopped
    rate, stopped = next_rate([_probe(float(k), passed=True) for k in range(1, 13)], RULE)
    assert rate is None
    assert "12 probes" in stopped


def test_bad_rules_name_the_flag() -> None:
    with pytest.raises(ValueError, match="--rate-tolerance"):
        SearchRule(tolerance=1.5)
    with pytest.raises(ValueError, match="--rate-start"):
        SearchRule(start=10, ceiling=5)


def _record(rate: float, p95_ttft_ms: float, *, reason: str | None = None, ci_high: float | None = None) -> CellRecord:
    return CellRecord.model_validate(
        {
            "status": "measured",
            "timestamp": "2026-11-26T00:00:00+00:00",
            "model": "m",
            "api": "chat",
            "requested_context": 64,
            "max_concurrency": 256,
            "max_tokens": 8,
            "num_prompts": 100,
            "completed": 100,
            "success_rate": 1.0,
            "p95_ttft_ms": p95_ttft_ms,
            "request_rate": rate,
            "trusted": reason is None,
            "untrusted_reason": reason,
            "ci": {} if ci_high is None else {"p95_ttft_ms": [p95_ttft_ms * 0.9, ci_high]},
            "confidence_level": 0.95,
        }
    )


def test_a_probe_passes_on_the_slo_fails_on_a_schedule_not_kept_and_refuses_a_saturated_client() -> None:
    """Guards against a capacity answer from a rate the client never sent, or from the client's own delays."""
    slos = [parse_slo("p95_ttft_ms=500")]
    passed = judge_probe(_record(4.0, 300.0, ci_high=450.0), slos, allow_untrusted=False)
    assert passed.passed
    assert passed.confident
    shaky = judge_probe(_record(4.0, 300.0, ci_high=650.0), slos, allow_untrusted=False)
    assert shaky.passed
    assert not shaky.confident
    assert not judge_probe(_record(8.0, 900.0), slos, allow_untrusted=False).passed
    starved = _record(8.0, 300.0, reason="untrusted, schedule not kept: 50 of 100 sends late; the in-flight cap of 8")
    assert not judge_probe(starved, slos, allow_untrusted=False).passed
    late_client = _record(8.0, 300.0, reason="untrusted, schedule not kept: 5 of 40 sends late; the client's own loop")
    with pytest.raises(UnjudgedProbeError):
        judge_probe(late_client, slos, allow_untrusted=False)
    saturated = _record(8.0, 300.0, reason="untrusted, client CPU-bound: +30 ms")
    with pytest.raises(UnjudgedProbeError, match="--allow-untrusted"):
        judge_probe(saturated, slos, allow_untrusted=False)
    assert judge_probe(saturated, slos, allow_untrusted=True).passed


async def test_search_reports_the_highest_passing_rate_with_its_bracket() -> None:
    """The done-when's "highest rate meeting the SLO with its confidence", against a server whose p95 TTFT
    grows with the rate (100 ms per req/s)."""
    measured: list[float] = []

    async def measure(rate: float) -> CellRecord:
        measured.append(rate)
        return _record(rate, 100.0 * rate, ci_high=100.0 * rate + 20)

    result = await search(measure, [parse_slo("p95_ttft_ms=1000")], RULE, allow_untrusted=False)
    assert result.best is not None
    assert result.lowest_failing is not None
    assert result.best.rate <= 10.0 < result.lowest_failing <= result.best.rate * 1.1
    assert len(result.probes) == len(measured) <= RULE.max_probes
    assert "highest rate meeting the SLO" in result.describe()
    assert "between" in result.describe()
