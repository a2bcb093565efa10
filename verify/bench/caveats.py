"""Which cells a reader should not take at face value, the same in every report, chart and comparison.

A cell needs a look when its record carries warnings (a stalled load generator, prompts of the wrong
length, a platform limit, a rate above the physical ceiling) or when the sweep marked it untrusted.
The ``trusted`` flag is newer than the results format: files written before it (and records
that do not carry it) count as trusted, so old sweeps keep rendering as they did.
"""

from __future__ import annotations

from verify.bench.results import CellRecord


def trusted(record: CellRecord) -> bool:
    """The sweep's own per-cell trust flag; a record without one is trusted."""
    return getattr(record, "trusted", True) is not False


def needs_a_look(record: CellRecord) -> bool:
    """True when the cell's numbers come with a caveat the reader must see next to them."""
    return record.measured and (bool(record.warnings) or not trusted(record))
