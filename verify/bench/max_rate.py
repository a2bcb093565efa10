"""The highest request rate that meets the SLO: bracket it, then bisect (``verify bench --find-max-rate``).

Why a search and not a sweep: "how many requests per second can this stack serve within p95 TTFT 2 s"
is the capacity question, and a fixed list of rates answers it only as finely as the list. Each probe is
an open-loop cell (verify/bench/open_loop.py) at one rate, written to the results file like any cell.

The rule, stated once and printed with the answer:

1. Bracket: start at ``start`` req/s; while the probe passes, double the rate (up to ``ceiling``); while
   the first probes fail, halve it (down to ``start / 2**MAX_HALVINGS``). A probe *passes* when every
   ``--slo`` holds (the default success-rate gate included); one whose sends the in-flight cap held back
   (the server did not keep up with the rate) fails.
2. Bisect between the highest passing rate and the lowest failing one, at their midpoint.
3. Stop when the failing rate is within ``tolerance`` (default 10%) of the passing one, after
   ``max_probes`` probes, or at ``ceiling`` still passing. The answer is the highest passing rate; the
   true maximum lies between it and the lowest failing rate (the bracket), and it is *confident* when the
   upper end of the 95% interval of every percentile the SLO names also met it at that rate (see
   verify/bench/confidence.py), not only the point estimate.

A probe the client could not measure (its own CPU made the cell untrusted: a busy loop, or sends late
for the client's sake) stops the search unless ``--allow-untrusted``: a capacity figure from a saturated
client is the client's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from verify.bench.caveats import trusted
from verify.bench.open_loop import HELD_BY_CAP, SCHEDULE_BEHIND
from verify.bench.results import CellRecord
from verify.bench.slo import Slo, violations, with_default_gate

MAX_HALVINGS = 6


@dataclass(frozen=True, slots=True)
class SearchRule:
    start: float = 1.0
    ceiling: float = 1024.0
    tolerance: float = 0.10
    max_probes: int = 12

    def __post_init__(self) -> None:
        if not 0 < self.start <= self.ceiling:
            raise ValueError(f"--rate-start {self.start:g} must be above 0 and at most --rate-max {self.ceiling:g}")
        if not 0 < self.tolerance < 1:
            raise ValueError(f"--rate-tolerance must be between 0 and 1 (0.1 = 10%), got {self.tolerance:g}")
        if self.max_probes < 2:
            raise ValueError(f"--max-probes must be at least 2, got {self.max_probes}")

    def describe(self) -> str:
        return (
            f"start {self.start:g} req/s, double while passing (up to {self.ceiling:g}), halve while failing, then "
            f"bisect until the bracket is within {self.tolerance:.0%} or {self.max_probes} probes"
        )


@dataclass(frozen=True, slots=True)
class Probe:
    rate: float
    passed: bool
    confident: bool
    why: str  # what failed, or what met


@dataclass(frozen=True, slots=True)
class MaxRate:
    """The search's answer: the highest passing rate (None: even the lowest failed) and the bracket."""

    best: Probe | None
    lowest_failing: float | None
    probes: tuple[Probe, ...]
    stopped: str
    rule: str

    def describe(self) -> str:
        if self.best is None:
            return f"no rate met the SLO (lowest tried {min(p.rate for p in self.probes):g} req/s); {self.stopped}"
        bracket = (
            f"between {self.best.rate:g} and {self.lowest_failing:g} req/s"
            if self.lowest_failing is not None
            else f"at least {self.best.rate:g} req/s"
        )
        confidence = (
            "confident: the 95% interval of each SLO percentile met it too"
            if self.best.confident
            else "not confident: a 95% interval reaches past the SLO (more --requests narrows it)"
        )
        best = f"highest rate meeting the SLO: {self.best.rate:g} req/s"
        return f"{best} (the maximum is {bracket}; {confidence}); {self.stopped}"


class UnjudgedProbeError(Exception):
    """A probe's cell was untrusted because of the client, and untrusted cells may not be judged."""


def judge_probe(record: CellRecord, slos: Sequence[Slo], *, allow_untrusted: bool) -> Probe:
    """Pass or fail one probe; raises ``UnjudgedProbeError`` when the client, not the server, set its numbers."""
    rate = record.request_rate or 0.0
    reason = record.untrusted_reason or ""
    if not trusted(record) and SCHEDULE_BEHIND in reason and HELD_BY_CAP in reason:
        return Probe(rate, passed=False, confident=True, why=reason)  # the server could not take the rate
    if not trusted(record) and not allow_untrusted:
        raise UnjudgedProbeError(f"the probe at {rate:g} req/s is untrusted ({reason}); --allow-untrusted to judge it")
    found = violations(with_default_gate(slos), [record])
    if found:
        return Probe(rate, passed=False, confident=True, why="; ".join(v.describe_value() for v in found))
    confident = all(
        slo.is_lower_bound or slo.key not in record.ci or slo.holds(record.ci[slo.key][1]) for slo in slos
    ) and not any(slo.key in record.too_few_samples for slo in slos)
    return Probe(rate, passed=True, confident=confident, why="every SLO met")


def next_rate(probes: Sequence[Probe], rule: SearchRule) -> tuple[float | None, str]:
    """The next rate to probe, or None and why the search stops."""
    if not probes:
        return rule.start, ""
    if len(probes) >= rule.max_probes:
        return None, f"stopped after {rule.max_probes} probes (--max-probes)"
    passing = [p.rate for p in probes if p.passed]
    failing = [p.rate for p in probes if not p.passed]
    if not passing or not failing:
        return _bracket(passing, failing, rule)
    return _bisect(max(passing), [rate for rate in failing if rate > max(passing)], rule)


def _bracket(passing: Sequence[float], failing: Sequence[float], rule: SearchRule) -> tuple[float | None, str]:
    """Double from the highest pass, or halve from the lowest failure, until one of each is known."""
    if passing:
        if max(passing) >= rule.ceiling:
            return None, f"stopped at --rate-max {rule.ceiling:g} req/s, still meeting the SLO"
        return min(max(passing) * 2, rule.ceiling), ""
    if min(failing) <= rule.start / 2**MAX_HALVINGS:
        return None, f"stopped: even {min(failing):g} req/s failed"
    return min(failing) / 2, ""


def _bisect(low: float, above: Sequence[float], rule: SearchRule) -> tuple[float | None, str]:
    """The midpoint of the highest pass and the lowest failure above it, until they are within the tolerance."""
    if not above:  # a failure below a pass (a noisy probe): search upwards from the pass
        return _bracket([low], [], rule)
    high = min(above)
    if high <= low * (1 + rule.tolerance):
        return None, f"stopped: the bracket {low:g}-{high:g} req/s is within {rule.tolerance:.0%}"
    return float(f"{(low + high) / 2:.4g}"), ""


async def search(
    measure: Callable[[float], Awaitable[CellRecord]],
    slos: Sequence[Slo],
    rule: SearchRule,
    *,
    allow_untrusted: bool,
) -> MaxRate:
    """Probe rates by ``rule`` (``measure`` runs one open-loop cell and writes its line) until it stops."""
    probes: list[Probe] = []
    while True:
        rate, stopped = next_rate(probes, rule)
        if rate is None:
            break
        try:
            probes.append(judge_probe(await measure(rate), slos, allow_untrusted=allow_untrusted))
        except UnjudgedProbeError as exc:
            stopped = f"stopped: {exc}"
            break
    passing = [p for p in probes if p.passed]
    best = max(passing, key=lambda p: p.rate) if passing else None
    above = [p.rate for p in probes if not p.passed and (best is None or p.rate > best.rate)]
    return MaxRate(best, min(above) if above else None, tuple(probes), stopped, rule.describe())
