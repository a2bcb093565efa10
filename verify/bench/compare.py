"""`python -m verify compare A.jsonl B.jsonl`: did a change (MTP on/off, QAT, another GPU) help?

Why per cell: a change often helps at one concurrency and hurts at another (speculative decoding
shines with few users and can cost throughput with many), so one headline number would mislead.
Cells are matched on context x concurrency; the workload (model, API, output tokens) may differ
between A and B on purpose (e.g. two served names) and is shown, not enforced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verify.bench.results import CellRecord

# (record field, heading, True when bigger is better)
COMPARED: tuple[tuple[str, str, bool], ...] = (
    ("request_throughput", "req/s", True),
    ("output_throughput", "out tok/s", True),
    ("median_ttft_ms", "p50 TTFT ms", False),
    ("p99_ttft_ms", "p99 TTFT ms", False),
    ("mean_tpot_ms", "mean TPOT ms", False),
    ("p99_e2el_ms", "p99 E2EL ms", False),
    ("success_rate", "success", True),
)


@dataclass(frozen=True, slots=True)
class Delta:
    field: str
    heading: str
    a: float | None
    b: float | None
    higher_is_better: bool

    @property
    def change(self) -> float | None:
        """Relative change from A to B (0.1 = +10%); None when either side is missing or A is 0."""
        if self.a is None or self.b is None or self.a == 0:
            return None
        return (self.b - self.a) / self.a

    @property
    def better(self) -> bool | None:
        if self.a is None or self.b is None or self.a == self.b:
            return None
        return (self.b > self.a) == self.higher_is_better

    def render(self) -> str:
        if self.a is None or self.b is None:
            return f"{_num(self.a)} → {_num(self.b)}"
        change = self.change
        shown = "" if change is None else f" ({change * 100:+.1f}%)"
        return f"{_num(self.a)} → {_num(self.b)}{shown}"


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

    def status(self) -> str:
        if self.a is None or self.b is None:
            return "only in " + ("B" if self.a is None else "A")
        if not (self.a.measured and self.b.measured):
            return "skipped in " + " and ".join(n for n, r in (("A", self.a), ("B", self.b)) if not r.measured)
        return ""


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _value(record: CellRecord | None, field: str) -> float | None:
    if record is None or not record.measured:
        return None
    value = getattr(record, field)
    return None if value is None else float(value)


def compare(a: Sequence[CellRecord], b: Sequence[CellRecord]) -> list[CellComparison]:
    """Every cell in A or B, by context then concurrency (the last line of a cell wins)."""
    by_a = {(r.requested_context, r.max_concurrency): r for r in a}
    by_b = {(r.requested_context, r.max_concurrency): r for r in b}
    rows = []
    for context, concurrency in sorted(by_a.keys() | by_b.keys()):
        left, right = by_a.get((context, concurrency)), by_b.get((context, concurrency))
        deltas = tuple(
            Delta(field, heading, _value(left, field), _value(right, field), higher)
            for field, heading, higher in COMPARED
        )
        rows.append(CellComparison(context, concurrency, left, right, deltas))
    return rows


def describe_side(records: Sequence[CellRecord]) -> str:
    if not records:
        return "(no cells)"
    first = records[0]
    return (
        f"{first.model} ({first.api}, {first.max_tokens} output tokens) on {first.accelerator or 'unknown'}, "
        f"vLLM {first.vllm_version or 'unknown'}"
    )


def markdown(rows: Sequence[CellComparison], *, a_name: str, b_name: str, a_desc: str, b_desc: str) -> str:
    headings = [heading for _, heading, _ in COMPARED]
    lines = [
        f"# {a_name} (A) vs {b_name} (B)",
        "",
        f"- A: {a_desc}",
        f"- B: {b_desc}",
        "- each cell: A → B (relative change); ▲ better, ▼ worse",
        "",
        "| context x concurrency | " + " | ".join(headings) + " |",
        "| --- |" + " --- |" * len(headings),
    ]
    for row in rows:
        status = row.status()
        if status:
            lines.append(f"| {row.label} | {status} |" + " |" * (len(headings) - 1))
            continue
        lines.append(f"| {row.label} | " + " | ".join(_marked(d) for d in row.deltas) + " |")
    return "\n".join([*lines, ""])


def _marked(delta: Delta) -> str:
    mark = {True: " ▲", False: " ▼", None: ""}[delta.better]
    return delta.render() + mark
