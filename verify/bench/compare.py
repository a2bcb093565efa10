"""`python -m verify compare A.jsonl B.jsonl`: did a change (MTP on/off, QAT, another GPU) help?

Why per cell: a change often helps at one concurrency and hurts at another (speculative decoding
shines with few users and can cost throughput with many), so one headline number would mislead.
Cells are matched on context x concurrency. Why a noise band: each cell is a sample of a few dozen
requests, so a change smaller than the two runs' own spread (see ``verify.bench.spread``) is
reported as noise, not as a win or a regression.

The two files must have asked the same question. Output tokens per request and the API change
every latency and throughput number, so a difference there is refused unless the caller says it is
intended (``--allow-mismatch``). The model, requests per cell and client transport may differ on
purpose (a QAT checkpoint or an MTP variant is served under its own name) and are warned about.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from verify.bench import spread
from verify.bench.caveats import needs_a_look, trusted, untrusted_note
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
LEGEND = (
    "▲ better, ▼ worse; ≈ within noise (|B - A| at most "
    f"{NOISE_SIGMAS:g} combined standard errors of the two cells, from their recorded spread and request "
    "count); ? not judged: a side is untrusted or records no spread; ⚠ a side has warnings or is untrusted "
    "(listed below)"
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
        return "" if verdict is None else MARKS[verdict]

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

    @property
    def label(self) -> str:
        return f"{self.context} x {self.concurrency}"

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
    if record is None or not record.measured:
        return None
    value = getattr(record, field)
    return None if value is None else float(value)


def _standard_error(record: CellRecord | None, metric: Metric) -> float | None:
    if record is None or not record.measured:
        return None
    return metric.standard_error(record)


_Matched = tuple[int, int, CellRecord | None, CellRecord | None]


def _matched(a: Sequence[CellRecord], b: Sequence[CellRecord]) -> list[_Matched]:
    """Every cell in A or B, by context then concurrency (the last line of a cell wins)."""
    by_a = {(r.requested_context, r.max_concurrency): r for r in a}
    by_b = {(r.requested_context, r.max_concurrency): r for r in b}
    return [
        (context, concurrency, by_a.get((context, concurrency)), by_b.get((context, concurrency)))
        for context, concurrency in sorted(by_a.keys() | by_b.keys())
    ]


def compare(a: Sequence[CellRecord], b: Sequence[CellRecord]) -> list[CellComparison]:
    rows = []
    for context, concurrency, left, right in _matched(a, b):
        judged = all(record is None or trusted(record) for record in (left, right))
        deltas = tuple(
            Delta(
                metric.field,
                metric.heading,
                _value(left, metric.field),
                _value(right, metric.field),
                metric.higher_is_better,
                a_se=_standard_error(left, metric),
                b_se=_standard_error(right, metric),
                judged=judged,
            )
            for metric in COMPARED
        )
        rows.append(CellComparison(context, concurrency, left, right, deltas))
    return rows


def workload_mismatches(a: Sequence[CellRecord], b: Sequence[CellRecord]) -> list[Mismatch]:
    """What differs between A and B in the cells both hold; the refused ones first."""
    found = []
    pairs = [(left, right) for _, _, left, right in _matched(a, b) if left is not None and right is not None]
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
    verdicts = [d.verdict for row in compared for d in row.deltas if d.verdict is not None]
    counts = {verdict: verdicts.count(verdict) for verdict in Verdict}
    parts = [
        f"better in {counts[Verdict.BETTER]}",
        f"worse in {counts[Verdict.WORSE]}",
        f"within noise in {counts[Verdict.NOISE] + counts[Verdict.SAME]}",
    ]
    if counts[Verdict.UNKNOWN]:
        parts.append(f"unknown (no spread recorded) in {counts[Verdict.UNKNOWN]}")
    if counts[Verdict.UNTRUSTED]:
        parts.append(f"not judged (untrusted) in {counts[Verdict.UNTRUSTED]}")
    caveats = sum(row.caveat for row in compared)
    warned = f"; {caveats} of {len(compared)} cells have warnings (⚠)" if caveats else ""
    return f"B is {', '.join(parts)} of {len(verdicts)} comparisons{warned}"


def describe_side(records: Sequence[CellRecord]) -> str:
    """Model, endpoint, date and workload of one file, as the chart's title says them."""
    if not records:
        return "(no cells)"
    workload = Workload.of(records)
    return f"{workload.headline()}; {workload.requests()}"


def markdown(
    rows: Sequence[CellComparison],
    *,
    a_name: str,
    b_name: str,
    a_desc: str,
    b_desc: str,
    mismatches: Sequence[Mismatch] = (),
) -> str:
    headings = [metric.heading for metric in COMPARED]
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
    return "\n".join([*lines, ""])


def caveat_notes(rows: Sequence[CellComparison]) -> list[str]:
    """One line per warning of either side, and per untrusted cell: what the ⚠ marks point at."""
    notes = []
    for row in rows:
        for side, record in (("A", row.a), ("B", row.b)):
            if record is None or not needs_a_look(record):
                continue
            untrusted = untrusted_note(record)
            if untrusted:
                notes.append(f"{row.label} in {side}: {untrusted}")
            notes.extend(f"{row.label} in {side}: {warning}" for warning in record.warnings)
    return notes
