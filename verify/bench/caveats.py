"""Which cells a reader should not take at face value, the same in every report, chart and comparison.

A cell needs a look when its record carries warnings (a stalled load generator, prompts of the wrong
length, a platform limit, a rate above the physical ceiling) or when the sweep marked it untrusted.
The ``trusted`` flag (and its ``untrusted_reason``) is newer than the results format: files written
before it count as trusted, so old sweeps keep rendering as they did.
"""

from __future__ import annotations

from verify.bench.results import CellRecord


def trusted(record: CellRecord) -> bool:
    """The sweep's own per-cell trust flag; a record without one is trusted."""
    return getattr(record, "trusted", True) is not False


def untrusted_reason(record: CellRecord) -> str | None:
    """Why the sweep did not trust the cell (its recorded reason, or a generic one); None when trusted."""
    if trusted(record):
        return None
    reason = getattr(record, "untrusted_reason", None)
    return reason if isinstance(reason, str) and reason else "untrusted: the sweep marked this cell untrusted"


def untrusted_note(record: CellRecord) -> str | None:
    """The untrusted reason unless it is already among the cell's warnings (the sweep records it there
    too), so a report listing both does not say it twice."""
    reason = untrusted_reason(record)
    return None if reason is None or reason in record.warnings else reason


def needs_a_look(record: CellRecord) -> bool:
    """True when the cell's numbers come with a caveat the reader must see next to them."""
    return record.measured and (bool(record.warnings) or not trusted(record))
