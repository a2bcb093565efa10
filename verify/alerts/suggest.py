"""Alert thresholds derived from the stack's own bench sweep, written as the stack file's `monitoring` block.

Why from the sweep: vLLM's generic values (TTFT 1 s, TPOT 100 ms) say nothing about where this stack,
with this model and this accelerator, stops meeting its SLO. The sweep measured it: the highest
concurrency whose every cell met the SLO ("held") and the first one above it that did not ("broke").
The alerts should then warn while live traffic still looks like the held load:

- `ttftSeconds` / `tpotSeconds`: the smallest bucket bound of vLLM's TTFT / TPOT histogram at or above the
  held cells' worst value at the SLO's percentile (p99 unless ``--percentile`` says otherwise; attainment is
  read from a bucket), never above the SLO's own bound. An SLO bound that is not a bucket bound (2 s: vLLM's
  TTFT buckets go 1.0, 2.5) cannot be read from the histogram, so the threshold is the bound below it, and
  the snippet says so instead of silently alerting at 1 s;
- `maxQueueSeconds`: that TTFT threshold less the unloaded TTFT (the lowest concurrency's median): the
  time a request may queue before the TTFT threshold is spent;
- `maxWaitingRequests` (with `--max-num-seqs`): requests beyond vLLM's batch at the concurrency that broke
  (at least 1): a closed-loop sweep at concurrency C keeps C requests in the server, maxNumSeqs of them running.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from serving.alert_rules import TPOT_HISTOGRAM, TTFT_HISTOGRAM
from serving.vllm_metrics import recorded_metrics
from verify import UsageError
from verify.bench.caveats import too_few_samples
from verify.bench.confidence import judgeable_percentiles, min_samples
from verify.bench.results import CellRecord, load_results


class NoUsableCellsError(ValueError):
    """The results hold nothing to derive thresholds from (no measured, trusted cell)."""


class SloMissedEverywhereError(ValueError):
    """Even the lowest concurrency measured missed the SLO: no load the stack handles to derive from."""


PERCENTILES = (50, 90, 95, 99)
# The widest SLO bounds taken: a TTFT above 10 minutes or a TPOT above a minute is a typo (or `inf`), not an SLO,
# and would turn every cell into "held".
MAX_TTFT_MS = 600_000.0
MAX_TPOT_MS = 60_000.0


@dataclass(frozen=True)
class Slo:
    """The stack's latency SLO: TTFT and TPOT bounds at one percentile (p99 by default); finite and sane, or
    refused naming the flag (the MCP tool and the CLI build it alike)."""

    ttft_ms: float = 1000.0
    tpot_ms: float = 100.0
    percentile: int = 99

    @property
    def statistic(self) -> str:
        """The results file's name for the percentile: ``p95``, or ``median`` for 50."""
        return "median" if self.percentile == 50 else f"p{self.percentile}"

    def ttft(self, cell: CellRecord) -> float | None:
        value: float | None = getattr(cell, f"{self.statistic}_ttft_ms")
        return value

    def tpot(self, cell: CellRecord) -> float | None:
        value: float | None = getattr(cell, f"{self.statistic}_tpot_ms")
        return value

    def describe(self) -> str:
        return f"p{self.percentile} TTFT <= {self.ttft_ms:g} ms, p{self.percentile} TPOT <= {self.tpot_ms:g} ms"

    def __post_init__(self) -> None:
        for flag, value, ceiling in (
            ("--ttft-ms", self.ttft_ms, MAX_TTFT_MS),
            ("--tpot-ms", self.tpot_ms, MAX_TPOT_MS),
        ):
            if not math.isfinite(value) or not 0 < value <= ceiling:
                raise UsageError(
                    f"{flag} must be a finite number of milliseconds above 0 and at most {ceiling:g}, got {value!r}"
                )

    def met_by(self, cell: CellRecord) -> bool:
        ttft, tpot = self.ttft(cell), self.tpot(cell)
        succeeded = cell.success_rate is None or cell.success_rate >= 1
        return succeeded and ttft is not None and ttft <= self.ttft_ms and (tpot is None or tpot <= self.tpot_ms)


def _refuse_thin(cells: Sequence[CellRecord], slo: Slo) -> None:
    """A threshold read from a percentile of too few requests is the slowest few wearing a p99 label: refused
    (``NoUsableCellsError``), naming the count it needs and the percentile the sweep can support."""
    needed = min_samples(slo.percentile)
    thin = [cell for cell in cells if too_few_samples(cell, f"{slo.statistic}_ttft_ms") is not None]
    if not thin:
        return
    example = min(thin, key=lambda cell: cell.completed)
    judgeable = judgeable_percentiles(min(cell.completed for cell in cells))
    instead = f", or derive from --percentile {judgeable[-1][1]:g}, which they can judge" if judgeable else ""
    raise NoUsableCellsError(
        f"a p{slo.percentile} needs {needed} completed requests per cell (the fewest for which its 95% interval "
        f"exists); {len(thin)} of {len(cells)} cells have fewer (concurrency {example.max_concurrency}: "
        f"{example.completed}): rerun `gemma-verify bench` with --requests {needed}{instead}"
    )


@dataclass(frozen=True)
class Suggestion:
    # How many of the cells used were untrusted (their latencies include the load generator's own delay).
    untrusted: int
    held: int
    broke: int | None
    worst_ttft_ms: float
    worst_tpot_ms: float | None
    ttft_seconds: float
    tpot_seconds: float
    max_queue_seconds: float
    max_waiting_requests: int | None
    # Why a threshold is below the SLO's own bound (that bound is not a bucket bound of the histogram).
    notes: tuple[str, ...] = ()


def suggest(
    records: Sequence[CellRecord], slo: Slo, *, max_num_seqs: int | None = None, allow_untrusted: bool = False
) -> Suggestion:
    """Thresholds from the measured cells (trusted ones only, unless ``allow_untrusted``)."""
    cells = [cell for cell in records if cell.measured and (cell.trusted or allow_untrusted)]
    if not cells:
        raise NoUsableCellsError(
            "no measured, trusted cell in the results: run `gemma-verify bench` on the stack first (or pass "
            "--allow-untrusted to use cells whose load generator was short of CPU)"
        )
    _refuse_thin(cells, slo)
    by_concurrency: dict[int, list[CellRecord]] = defaultdict(list)
    for cell in cells:
        by_concurrency[cell.max_concurrency].append(cell)
    levels = sorted(by_concurrency)
    held: int | None = None
    broke: int | None = None
    for level in levels:
        if all(slo.met_by(cell) for cell in by_concurrency[level]):
            held = level
        else:
            broke = level
            break
    if held is None:
        raise SloMissedEverywhereError(
            f"every cell at the lowest concurrency measured ({levels[0]}) missed the SLO ({slo.describe()}, every "
            "request succeeded): fix the stack or the SLO before deriving alerts from it"
        )
    held_cells = by_concurrency[held]
    worst_ttft = max(slo.ttft(cell) or 0.0 for cell in held_cells)
    tpots = [tpot for cell in held_cells if (tpot := slo.tpot(cell)) is not None]
    worst_tpot = max(tpots) if tpots else None
    ttft_seconds = _bucket_at_or_above(TTFT_HISTOGRAM, worst_ttft / 1000, ceiling=slo.ttft_ms / 1000)
    tpot_seconds = _bucket_at_or_above(TPOT_HISTOGRAM, (worst_tpot or 0.0) / 1000, ceiling=slo.tpot_ms / 1000)
    unloaded = min(cell.median_ttft_ms or worst_ttft for cell in by_concurrency[levels[0]]) / 1000
    queue = max(round(ttft_seconds - unloaded, 3), 0.001)
    waiting = None
    if max_num_seqs is not None:
        load = broke if broke is not None else levels[-1]
        waiting = max(1, load - max_num_seqs)
    return Suggestion(
        untrusted=sum(not cell.trusted for cell in cells),
        held=held,
        broke=broke,
        worst_ttft_ms=worst_ttft,
        worst_tpot_ms=worst_tpot,
        ttft_seconds=ttft_seconds,
        tpot_seconds=tpot_seconds,
        max_queue_seconds=queue,
        max_waiting_requests=waiting,
        notes=tuple(
            note
            for note in (
                _off_bucket_note("TTFT", TTFT_HISTOGRAM, slo.ttft_ms / 1000, worst_ttft / 1000, ttft_seconds),
                _off_bucket_note("TPOT", TPOT_HISTOGRAM, slo.tpot_ms / 1000, (worst_tpot or 0.0) / 1000, tpot_seconds),
            )
            if note
        ),
    )


def _off_bucket_note(name: str, histogram: str, bound_s: float, worst_s: float, chosen_s: float) -> str | None:
    """Why the threshold is below what the sweep measured: the SLO's bound capped it and is not a bucket bound
    itself (None when the threshold is simply the measurement's bucket, or the SLO's bound is a bucket bound)."""
    bounds = recorded_metrics().buckets(histogram)
    natural = next((bound for bound in bounds if bound >= worst_s - 1e-12), bounds[-1])
    if any(abs(bound - bound_s) < 1e-9 for bound in bounds) or natural <= chosen_s:
        return None
    above = [bound for bound in bounds if bound > bound_s]
    nearest = f", {above[0]:g} s above" if above else ""
    return (
        f"the SLO's {name} bound {bound_s:g} s is not a bucket bound of {histogram} ({chosen_s:g} s below"
        f"{nearest}) and the held load measured {worst_s:.3g} s; attainment is read at a bound, so the alert uses "
        f"{chosen_s:g} s, the nearest within the SLO: it fires before the SLO itself is missed"
    )


@dataclass(frozen=True)
class SuggestOptions:
    """``verify alerts suggest``: the SLO, the stack's maxNumSeqs (for maxWaitingRequests) and whether untrusted
    cells count."""

    slo: Slo = Slo()
    max_num_seqs: int | None = None
    allow_untrusted: bool = False


def suggest_from_file(results: Path, options: SuggestOptions) -> Suggestion:
    """The thresholds a bench results file supports; ``UsageError`` when it cannot be used (named ``--from``),
    ``SloMissedEverywhereError`` when the sweep missed the SLO even at its lowest concurrency."""
    if not results.is_file():
        raise UsageError(f"--from {results}: no such file (a `gemma-verify bench --output` results file)")
    loaded = load_results(results)
    try:
        return suggest(
            loaded.records, options.slo, max_num_seqs=options.max_num_seqs, allow_untrusted=options.allow_untrusted
        )
    except NoUsableCellsError as exc:
        raise UsageError(f"--from {results}: {exc}") from None


def _bucket_at_or_above(histogram: str, value: float, *, ceiling: float) -> float:
    """The smallest bucket bound >= value, but not above the largest bound within the SLO's own bound."""
    bounds = recorded_metrics().buckets(histogram)
    within = [bound for bound in bounds if bound <= ceiling + 1e-12]
    above = [bound for bound in bounds if bound >= value - 1e-12]
    candidate = above[0] if above else bounds[-1]
    if within and candidate > within[-1]:
        return within[-1]
    return candidate if within else bounds[0]


def stack_snippet(suggestion: Suggestion, slo: Slo, *, source: str, project: str = "gemma-serving") -> str:
    """The `monitoring` block as it goes under `config:` in Pulumi.<stack>.yaml (two-space indented).

    Why built by the YAML emitter: the results file's name is the user's (or an attacker's) text, and a name
    holding a newline and `gemma-serving:monitoring:` wrote its own block into the snippet when lines were
    concatenated. The block is `yaml.safe_dump`ed from a mapping, and the name reaches the comment only as a
    double-quoted YAML scalar on one line (newlines and controls escaped).
    """
    s = suggestion
    broke = f"broke at {s.broke}" if s.broke is not None else "never broke (measure higher concurrency to sharpen this)"
    p = f"p{slo.percentile}"
    tpot = f", {p} TPOT {s.worst_tpot_ms:.3g} ms" if s.worst_tpot_ms is not None else ""
    bounds = f"SLO {slo.describe()}"
    comments = [
        f"# From {_quoted(source)} (gemma-verify alerts suggest): {bounds};",
        f"# held at concurrency {s.held} ({p} TTFT {s.worst_ttft_ms:.3g} ms{tpot}), {broke}.",
        *(f"# {note}." for note in s.notes),
        *(
            [f"# {s.untrusted} cell(s) untrusted: the load generator was short of CPU, so latencies read high."]
            if s.untrusted
            else []
        ),
    ]
    thresholds: dict[str, float | int] = {
        "ttftSeconds": float(s.ttft_seconds),
        "tpotSeconds": float(s.tpot_seconds),
        "maxQueueSeconds": float(s.max_queue_seconds),
    }
    if s.max_waiting_requests is not None:
        thresholds["maxWaitingRequests"] = int(s.max_waiting_requests)
    block = yaml.safe_dump({f"{project}:monitoring": {"thresholds": thresholds}}, sort_keys=False, indent=2)
    lines = [*comments, *block.splitlines()]
    if s.max_waiting_requests is None:
        lines.append("    # maxWaitingRequests: pass --max-num-seqs (the stack's vllm.maxNumSeqs) to derive it")
    return "".join(f"  {line}\n" for line in lines)


def _quoted(text: str) -> str:
    """``text`` as one double-quoted YAML scalar: no newline or control character survives into a comment."""
    return yaml.safe_dump(text, default_style='"', width=float("inf"), allow_unicode=False).split("\n", 1)[0]
