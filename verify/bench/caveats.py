"""Which cells a reader should not take at face value, the same in every report, chart and comparison.

A cell needs a look when its record carries warnings (a stalled load generator, prompts of the wrong
length, a platform limit, a rate above the physical ceiling) or when the sweep marked it untrusted.
The ``trusted`` flag (and its ``untrusted_reason``) is newer than the results format: files written
before it count as trusted, so old sweeps keep rendering as they did.
"""

from __future__ import annotations

from collections.abc import Sequence

from verify.bench.ceilings import ceiling_problem
from verify.bench.confidence import PERCENTILE_STATS, min_samples
from verify.bench.results import CellRecord
from verify.bench.stall import STALL_WARNING_START


def trusted(record: CellRecord) -> bool:
    """The sweep's own per-cell trust flag (a record without one is trusted), and the cell within the physical
    ceilings of the model and accelerator it claims (verify/bench/ceilings.py): a number that cannot be true is
    left out of every verdict like a saturated client's."""
    return getattr(record, "trusted", True) is not False and ceiling_problem(record) is None


def untrusted_reason(record: CellRecord) -> str | None:
    """Why the cell is not trusted (the sweep's recorded reason, or the ceiling it exceeds); None when trusted."""
    if getattr(record, "trusted", True) is False:
        reason = getattr(record, "untrusted_reason", None)
        return reason if isinstance(reason, str) and reason else "untrusted: the sweep marked this cell untrusted"
    return ceiling_problem(record)


def untrusted_note(record: CellRecord) -> str | None:
    """The untrusted reason unless it is already among the cell's warnings (the sweep records it there
    too), so a report listing both does not say it twice."""
    reason = untrusted_reason(record)
    return None if reason is None or reason in record.warnings else reason


def needs_a_look(record: CellRecord) -> bool:
    """True when the cell's numbers come with a caveat the reader must see next to them."""
    return record.measured and (bool(record.warnings) or not trusted(record))


def _cause(record: CellRecord) -> str:
    """What made the cell untrusted, in the few words a summary line counts it under."""
    reason = untrusted_reason(record) or ""
    if "physical ceiling" in reason:
        return "above its physical ceiling"
    if "CPU-bound" in reason or "ran out of CPU" in reason:
        return "load generator CPU-bound"
    if "schedule not kept" in reason:
        return "open-loop schedule not kept"
    if "load-generator tasks reported" in reason:
        return "a load-generator task missing"
    return "marked untrusted"


def other_warnings(record: CellRecord) -> list[str]:
    """The cell's warnings besides its untrusted reason. A stall warning is left out of an untrusted cell's:
    the reason already says the client was late (the record keeps both)."""
    reason = untrusted_reason(record)
    return [
        warning
        for warning in record.warnings
        if warning != reason and not (reason is not None and warning.startswith(STALL_WARNING_START))
    ]


def cell_note(record: CellRecord) -> str:
    """Everything a reader must know about one cell, on one line: the untrusted reason (cause and size)
    first, then the other warnings."""
    reason = untrusted_reason(record)
    return "; ".join([*([reason] if reason else []), *other_warnings(record)])


def untrusted_summary(records: Sequence[CellRecord]) -> str | None:
    """``4 of 6 cells untrusted (load generator CPU-bound)``; None when every measured cell is trusted."""
    measured = [record for record in records if record.measured]
    causes = [_cause(record) for record in measured if not trusted(record)]
    if not causes:
        return None
    kinds = sorted(set(causes))
    counted = ", ".join(f"{causes.count(cause)} {cause}" if len(kinds) > 1 else cause for cause in kinds)
    return f"{len(causes)} of {len(measured)} cells untrusted ({counted})"


def too_few_samples(record: CellRecord, field: str) -> int | None:
    """The samples ``field`` (a percentile such as ``p99_ttft_ms``) needs and the cell lacked, else None.

    A record says so itself (``too_few_samples``); one written before records did is judged by its count of
    completed requests (per-request metrics; the pooled ITL gaps are many more, so it is not judged)."""
    if field in record.too_few_samples:
        return record.too_few_samples[field]
    statistic, _, metric = field.partition("_")
    if record.confidence_level is not None or statistic not in PERCENTILE_STATS or metric.startswith("itl"):
        return None
    needed = min_samples(PERCENTILE_STATS[statistic])
    return needed if record.completed < needed else None
