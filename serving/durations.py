"""How stack files and flags write a span of time: a whole number and a unit, `90m`, `4h`, `7d`, `3600s`.

Why one parser: `tpu.maxRunDuration` in a stack file and `verify logs --since` take the same form, and two
copies of the rule would drift (one accepting `1 h`, the other not). Each caller words its own error,
naming its key or flag.
"""

from __future__ import annotations

import re

_WRITTEN = re.compile(r"^(\d+)\s*([smhd])$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(text: str) -> int | None:
    """Seconds from `<whole number><s|m|h|d>` (spaces around allowed), or None when not written so."""
    found = _WRITTEN.match(text.strip())
    return int(found.group(1)) * UNIT_SECONDS[found.group(2)] if found else None
