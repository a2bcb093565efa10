"""Text a server supplies never drives the terminal.

A model's answer (or an error body) holding `ESC[2J` cleared the screen, cursor movements hid lines, and
OSC 52 wrote the user's clipboard: `verify query` printed the answer raw, and error excerpts in `health`
and `bench` output carried the body's control characters through.
"""

from __future__ import annotations

import io

from verify.query.cli import live_printer
from verify.query.run import ReasoningDisplay
from verify.responses import body_excerpt, error_message

CLEAR_SCREEN = "\x1b[2J"
CLIPBOARD_WRITE = "\x1b]52;c;ZXZpbA==\x07"


def test_a_streamed_answer_is_printed_with_its_controls_escaped() -> None:
    """`verify query` shows the answer as it arrives; an escape sequence in it shows as text."""
    out = io.StringIO()
    take = live_printer(out, ReasoningDisplay.SHOW)
    take(f"hello {CLEAR_SCREEN}world", False)
    take(CLIPBOARD_WRITE, False)
    printed = out.getvalue()
    assert "\x1b" not in printed
    assert "\x07" not in printed
    assert "hello \\x1b[2Jworld" in printed


def test_an_error_body_excerpt_escapes_controls_and_keeps_its_length() -> None:
    """Error bodies reach tables and messages through body_excerpt: no raw control character survives."""
    excerpt = body_excerpt(f"upstream error {CLEAR_SCREEN}{CLIPBOARD_WRITE} " + "x" * 500, limit=80)
    assert "\x1b" not in excerpt
    assert excerpt.startswith("upstream error \\x1b[2J\\x1b]52;c;")
    assert len(excerpt) == 80


def test_vllms_error_message_is_escaped() -> None:
    """The message of vLLM's JSON error shape is shown by health's diagnosis: escaped like the rest."""
    body = '{"error": {"message": "bad \\u001b[2J request", "type": "BadRequestError", "code": 400}}'
    assert error_message(body) == "bad \\x1b[2J request"
