"""Remote text as a rich table cell or title: controls escaped by the one escape (`verify.redact`), never markup.

Why a helper and not `Text(value)`: rich keeps ESC and CSI in a `Text` (it strips only a few C0 codes), so a
zone name, a node's metadata or a log line could still clear the terminal; and a plain string handed to
`Table.add_row` is parsed as markup, so `[blink]` in Google's answer styled the table. A cell is one line of
the renderer's, so newlines are escaped too: a value cannot forge the next row.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from remote.text import escape_controls


def cell(value: object, style: str = "") -> Text:
    """``value`` as text for one cell: control characters and newlines shown as escapes, brackets literal."""
    return Text(escape_controls(str(value), keep_newlines=False), style=style)


def markup_safe(value: object) -> str:
    """``value`` for a place rich reads as markup (a table's title): escaped, brackets literal."""
    return escape(escape_controls(str(value), keep_newlines=False))
