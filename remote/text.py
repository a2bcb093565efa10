"""Text a remote service supplied, made safe to show: control characters as visible escapes.

Why below every layer: Google's error messages, a revision's condition, a log line and an endpoint's body
all reach a terminal, a CI log or an agent's transcript; the Google client escapes what it parses and
verify's redaction (verify/redact.py: scrub, escape, cut) uses the same escape, so one surface cannot
escape differently from another.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# The same with tab and newline: for a value shown inside one line (a name, a label, a table cell).
_CONTROLS_IN_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str, *, keep_newlines: bool = True) -> str:
    """Control characters as visible escapes: a terminal shows `\\x1b[2J` instead of clearing itself.

    This is the one escape for every surface that prints remote text (verify's commands, the MCP server's
    results). ``keep_newlines=False`` escapes newline and tab too, for a value the renderer places inside a
    line of its own (a model name, a label, a status field): a newline there would forge the next line.
    """
    return (_CONTROLS if keep_newlines else _CONTROLS_IN_LINE).sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
