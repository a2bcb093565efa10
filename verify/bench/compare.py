"""`gemma-verify compare A.jsonl B.jsonl`: did a change (MTP on/off, QAT, another GPU) help?

Why per cell: a change often helps at one concurrency and hurts at another (speculative decoding
shines with few users and can cost throughput with many), so one headline number would mislead.
Cells are matched on context x concurrency. Why a noise band: each cell is a sample of a few dozen
requests, so a change smaller than the two runs' own spread (see ``verify.bench.spread``) is
reported as noise, not as a win or a regression.

The two files must have asked the same question. Output tokens per request and the API change
every latency and throughput number, so a difference there is refused unless the caller says it is
intended (``--allow-mismatch``). The model, requests per cell and client transport may differ on
purpose (a QAT checkpoint or an MTP variant is served under its own name) and are warned about.

Cells a sweep marked untrusted (its load generator was CPU-bound) are not judged: their latencies
include the client's own delay. On a busy machine that can be every cell, so ``allow_untrusted``
(``--allow-untrusted``) shows the verdicts they would get, each marked ``*`` and counted apart.
A value that is not a finite number is never judged (the files' reader refuses them anyway).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from verify.bench import spread
from verify.bench.caveats import cell_note, needs_a_look, too_few_samples, trusted, untrusted_summary
from verify.bench.results import CellRecord
from verify.bench.workload import Workload
from verify.numbers import percent, readable, signed_percent

# A change is noise while |B - A| <= this many combined standard errors (about 95% two-sided).
NOISE_SIGMAS = 2.0


@dataclass(frozen=True, slots=True)
class Metric:
    field: str
    heading: str
    higher_is_better: bool
    standard_error: spread.StandardError


COMPARED: tuple[Metric, ...] = (
    Metric("request_throughput", "req/s", True, spread.of_throughput("request_throughput")),
    Metric("output_throughput", "out tok/s", True, spread.of_throughput("output_throughput")),
    Metric("median_ttft_ms", "p50 TTFT ms", False, spread.of_quantile("ttft", 0.5)),
    Metric("p99_ttft_ms", "p99 TTFT ms", False, spread.of_quantile("ttft", 0.99)),
    Metric("mean_tpot_ms", "mean TPOT ms", False, spread.of_mean("tpot")),
    Metric("p99_e2el_ms", "p99 E2EL ms", False, spread.of_quantile("e2el", 0.99)),
    Metric("success_rate", "success", True, spread.rate_se),
)


_SLO_FIELD = re.compile(r"^(p\d+|median|mean)_(ttft|tpot|itl|e2el)_ms$")


def metrics_for(slo_keys: Sequence[str]) -> tuple[Metric, ...]:
    """COMPARED, plus a column for each latency an SLO names that it lacks: with `--slo p95_ttft_ms=2000` the
    p95 is shown and judged, not only the p50 and p99 around it."""
    have = {metric.field for metric in COMPARED}
    extra: list[Metric] = []
    for key in slo_keys:
        found = _SLO_FIELD.match(key)
        if found is None or key in have:
            continue
        statistic, name = found.groups()
        if statistic == "mean":
            error = spread.of_mean(name)
        else:
            error = spread.of_quantile(name, 0.5 if statistic == "median" else int(statistic[1:]) / 100)
        label = "p50" if statistic == "median" else statistic
        extra.append(Metric(key, f"{label} {name.upper()} ms", False, error))
        have.add(key)
    return (*COMPARED, *extra)


class Verdict(StrEnum):
    BETTER = "better"
    WORSE = "worse"
    NOISE = "noise"  # within the two runs' spread
    SAME = "same"
    UNKNOWN = "unknown"  # a side records no spread, so noise cannot be told from change
    UNTRUSTED = "untrusted"  # a side was marked untrusted by its sweep: not judged


MARKS = {
    Verdict.BETTER: "▲",
    Verdict.WORSE: "▼",
    Verdict.NOISE: "≈",
    Verdict.SAME: "=",
    Verdict.UNKNOWN: "?",
    Verdict.UNTRUSTED: "?",
}
# Appended to the mark of a verdict judged on an untrusted side (``allow_untrusted``).
WOULD_BE = "*"
LEGEND = (
    "▲ better, ▼ worse; ≈ within noise (|B - A| at most "
    f"{NOISE_SIGMAS:g} combined standard errors of the two cells, from their recorded spread and request "
    "count); ? not judged: a side is untrusted, records no spread, or has too few requests for that percentile "
    "(p99: 368); * would-be verdict on an untrusted "
    "cell; ⚠ a side has warnings or is untrusted (listed below)"
)


@dataclass(frozen=True, slots=True)
class Delta:
    field: str
    heading: str
    a: float | None
    b: float | None
    higher_is_better: bool
    a_se: float | None = None
    b_se: float | None = None
    judged: bool = True  # False when a side is untrusted
    would_be: bool = False  # judged although a side is untrusted (allow_untrusted): shown marked

    @property
    def change(self) -> float | None:
        """Relative change from A to B (0.1 = +10%); None when either side is missing or A is 0."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return (self.b - self.a) / self.a

    @property
    def noise_band(self) -> float | None:
        """The largest |B - A| that the two runs' spread explains, in the metric's unit."""
        if self.a_se is None or self.b_se is None:
            return None
        return NOISE_SIGMAS * math.hypot(self.a_se, self.b_se)

    @property
    def verdict(self) -> Verdict | None:
        """None when a side has no value (nothing to judge)."""
        if self.a is None or self.b is None:
            return None
        if not self.judged:
            return Verdict.UNTRUSTED
        if self.a == self.b:
            return Verdict.SAME
        band = self.noise_band
        if band is None:
            return Verdict.UNKNOWN
        if abs(self.b - self.a) <= band:
            return Verdict.NOISE
        return Verdict.BETTER if (self.b > self.a) == self.higher_is_better else Verdict.WORSE

    @property
    def mark(self) -> str:
        verdict = self.verdict
        if verdict is None:
            return ""
        return MARKS[verdict] + (WOULD_BE if self.would_be and verdict is not Verdict.UNTRUSTED else "")

    def shown_change(self) -> str:
        change = self.change
        return "-" if change is None else signed_percent(change)

    def render(self) -> str:
        """``0.5 → 0.8 (+60%) ▲``"""
        values = f"{self._value(self.a)} → {self._value(self.b)}"
        change = self.change
        shown = "" if change is None else f" ({signed_percent(change)})"
        mark = self.mark
        return values + shown + (f" {mark}" if mark else "")

    def _value(self, value: float | None) -> str:
        if value is not None and self.field == "success_rate":
            return percent(value)
        return readable(value)


@dataclass(frozen=True, slots=True)
class CellComparison:
    context: int
    concurrency: int
    a: CellRecord | None
    b: CellRecord | None
    deltas: tuple[Delta, ...]
    rate: float | None = None  # an open-loop cell's request rate (concurrency is then its in-flight cap)

    @property
    def label(self) -> str:
        return f"{self.context} x {self.concurrency}" if self.rate is None else f"{self.context} x {self.rate:g}/s"

    @property
    def caveat(self) -> bool:
        """A side has warnings or is untrusted: the reader must see that next to the numbers."""
        return any(record is not None and needs_a_look(record) for record in (self.a, self.b))

    def status(self) -> str:
        if self.a is None or self.b is None:
            return "only in " + ("B" if self.a is None else "A")
        if not (self.a.measured and self.b.measured):
            return "skipped in " + " and ".join(n for n, r in (("A", self.a), ("B", self.b)) if not r.measured)
        return ""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A workload setting that differs between A and B in cells the comparison matches."""

    setting: str
    a: tuple[str, ...]
    b: tuple[str, ...]
    refused: bool
    why: str

    def describe(self) -> str:
        return f"{self.setting}: A {', '.join(self.a)}; B {', '.join(self.b)} ({self.why})"


# (record field, what to call it, refused?, why it matters)
_WORKLOAD: tuple[tuple[str, str, bool, str], ...] = (
    ("max_tokens", "output tokens per request", True, "every latency and throughput number scales with it"),
    ("api", "API", True, "the chat template changes the prompt the server sees"),
    ("model", "model", False, "fine when the change under test is the model; otherwise not the same deployment"),
    ("num_prompts", "requests per cell", False, "the spread and the tail percentiles depend on the sample size"),
    ("transport", "client transport", False, "the httpx transport is slower than aiohttp from ~64 users"),
)


def _value(record: CellRecord | None, field: str) -> float | None:
    """The number to compare; None when the cell has none (or one that is not finite: never judged)."""
    if record is None or not record.measured:
        return None
    value = getattr(record, field)
    return None if value is None or not math.isfinite(value) else float(value)


def _standard_error(record: CellRecord | None, metric: Metric) -> float | None:
    if record is None or not record.measured:
        return None
    return metric.standard_error(record)


_Cell = tuple[int, int, float]  # context, concurrency, request rate (0: closed loop)
_Matched = tuple[_Cell, CellRecord | None, CellRecord | None]


class DuplicateCellError(ValueError):
    """A side holds two records of one cell: which one to compare would be a guess."""


def _by_cell(records: Sequence[CellRecord], side: str) -> dict[_Cell, CellRecord]:
    cells: dict[_Cell, CellRecord] = {}
    for record in records:
        cell = (record.requested_context, record.max_concurrency, record.request_rate or 0.0)
        if cell in cells:
            rate = f" at {cell[2]:g} req/s" if cell[2] else ""
            raise DuplicateCellError(
                f"{side} holds two records of context {cell[0]} x concurrency {cell[1]}{rate}: compare takes one "
                "sweep per side"
            )
        cells[cell] = record
    return cells


def _matched(a: Sequence[CellRecord], b: Sequence[CellRecord]) -> list[_Matched]:
    """Every cell in A or B, by context, concurrency, then rate (open loop); a side with two records of a cell is
    refused."""
    by_a, by_b = _by_cell(a, "A"), _by_cell(b, "B")
    return [(cell, by_a.get(cell), by_b.get(cell)) for cell in sorted(by_a.keys() | by_b.keys())]


def _too_few(left: CellRecord | None, right: CellRecord | None, field: str) -> bool:
    return any(record is not None and too_few_samples(record, field) is not None for record in (left, right))


def compare(
    a: Sequence[CellRecord],
    b: Sequence[CellRecord],
    *,
    allow_untrusted: bool = False,
    metrics: Sequence[Metric] = COMPARED,
) -> list[CellComparison]:
    """One row per cell of A or B. Untrusted cells are not judged unless ``allow_untrusted``, which gives
    their would-be verdicts (``Delta.would_be``)."""
    rows = []
    for (context, concurrency, rate), left, right in _matched(a, b):
        untrusted = not all(record is None or trusted(record) for record in (left, right))
        deltas = tuple(
            Delta(
                metric.field,
                metric.heading,
                _value(left, metric.field),
                _value(right, metric.field),
                metric.higher_is_better,
                # A percentile from fewer requests than its interval needs (p99: 368) is not judged: "?".
                a_se=None if _too_few(left, right, metric.field) else _standard_error(left, metric),
                b_se=None if _too_few(left, right, metric.field) else _standard_error(right, metric),
                judged=not untrusted or allow_untrusted,
                would_be=untrusted and allow_untrusted,
            )
            for metric in metrics
        )
        rows.append(CellComparison(context, concurrency, left, right, deltas, rate or None))
    return rows


def workload_mismatches(a: Sequence[CellRecord], b: Sequence[CellRecord]) -> list[Mismatch]:
    """What differs between A and B in the cells both hold; the refused ones first."""
    found = []
    pairs = [(left, right) for _, left, right in _matched(a, b) if left is not None and right is not None]
    for field, setting, refused, why in _WORKLOAD:
        differing = [(left, right) for left, right in pairs if getattr(left, field) != getattr(right, field)]
        if differing:
            found.append(
                Mismatch(
                    setting,
                    tuple(sorted({str(getattr(left, field)) for left, _ in differing})),
                    tuple(sorted({str(getattr(right, field)) for _, right in differing})),
                    refused,
                    why,
                )
            )
    return sorted(found, key=lambda m: not m.refused)


def tally(rows: Sequence[CellComparison]) -> str:
    """``B is better in 3, worse in 1 and within noise in 17 of 21 comparisons``: the one line to read first."""
    compared = [row for row in rows if not row.status()]
    judged = [d for row in compared for d in row.deltas if d.verdict is not None]
    verdicts = [d.verdict for d in judged if not d.would_be]
    counts = {verdict: verdicts.count(verdict) for verdict in Verdict}
    parts = [
        f"better in {counts[Verdict.BETTER]}",
        f"worse in {counts[Verdict.WORSE]}",
        f"within noise in {counts[Verdict.NOISE] + counts[Verdict.SAME]}",
    ]
    if counts[Verdict.UNKNOWN]:
        parts.append(f"unknown (no spread recorded, or too few requests for a percentile) in {counts[Verdict.UNKNOWN]}")
    if counts[Verdict.UNTRUSTED]:
        parts.append(f"not judged (untrusted) in {counts[Verdict.UNTRUSTED]}")
    would_be = [d.verdict for d in judged if d.would_be]
    if would_be:
        parts.append(
            f"would-be (untrusted, marked {WOULD_BE}) in {len(would_be)}: better in {would_be.count(Verdict.BETTER)}, "
            f"worse in {would_be.count(Verdict.WORSE)}, within noise in "
            f"{would_be.count(Verdict.NOISE) + would_be.count(Verdict.SAME)}"
        )
    caveats = sum(row.caveat for row in compared)
    warned = f"; {caveats} of {len(compared)} cells have warnings (⚠)" if caveats else ""
    return f"B is {', '.join(parts)} of {len(judged)} comparisons{warned}"


def describe_side(records: Sequence[CellRecord]) -> str:
    """Model, endpoint, date and workload of one file, as the chart's title says them."""
    if not records:
        return "(no cells)"
    workload = Workload.of(records)
    return f"{workload.headline()}; {workload.requests()}"


def headings_of(rows: Sequence[CellComparison]) -> list[str]:
    """The metrics' column headings of a comparison (COMPARED's, plus any an SLO added)."""
    return [delta.heading for delta in rows[0].deltas] if rows else [metric.heading for metric in COMPARED]


def markdown(
    rows: Sequence[CellComparison],
    *,
    a_name: str,
    b_name: str,
    a_desc: str,
    b_desc: str,
    mismatches: Sequence[Mismatch] = (),
    estimates: Sequence[str] = (),
) -> str:
    headings = headings_of(rows)
    lines = [f"# {a_name} (A) vs {b_name} (B)", "", f"- A: {a_desc}", f"- B: {b_desc}"]
    lines += [f"- **workload differs**: {mismatch.describe()}" for mismatch in mismatches]
    lines += [
        f"- {tally(rows)}",
        f"- each cell: A → B (relative change); {LEGEND}",
        "",
        "| context x concurrency | " + " | ".join(headings) + " |",
        "| --- |" + " --- |" * len(headings),
    ]
    for row in rows:
        label = row.label + (" ⚠" if row.caveat else "")
        status = row.status()
        if status:
            lines.append(f"| {label} | {status} |" + " |" * (len(headings) - 1))
            continue
        lines.append(f"| {label} | " + " | ".join(d.render() for d in row.deltas) + " |")
    notes = caveat_notes(rows)
    if notes:
        lines += ["", "## Warnings", "", *(f"- {note}" for note in notes)]
    if estimates:
        lines += ["", "## Measured beside the estimate", "", *(f"- {line}" for line in estimates)]
    return "\n".join([*lines, ""])


def caveat_notes(rows: Sequence[CellComparison]) -> list[str]:
    """What the ⚠ marks point at: one line per cell and side with a caveat (the untrusted reason with its
    cause and size, then the other warnings), and one line counting the untrusted cells of each side."""
    notes = []
    for row in rows:
        for side, record in (("A", row.a), ("B", row.b)):
            if record is not None and needs_a_look(record):
                notes.append(f"{row.label} in {side}: {cell_note(record)}")
    for side, records in (("A", [row.a for row in rows]), ("B", [row.b for row in rows])):
        summary = untrusted_summary([record for record in records if record is not None])
        if summary is not None:
            notes.append(f"{side}: {summary}")
    return notes
