"""The one redactor (verify/redact.py) the CLI and the MCP server share: what it hides, in what order, how fast."""

from __future__ import annotations

import time

import pytest

from gemma_mcp.runner import STDERR_TAIL_CHARS, Completed
from policy.credentials import CREDENTIAL_SHAPES
from remote.text import escape_controls
from verify.redact import REDACTED, Redactor

TOKEN = "sk-" + "Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1"  # 35 characters, shaped like an API key
# Inputs that made a shape rescan one long run from each of its positions (two 200 KB lines took 38 s).
ADVERSARIAL = {
    "letters": "a" * 100_000,
    "dashed eyJ": "eyJ-" * 25_000,
    "AKIA run": "AKIA" * 25_000,
    "xoxb run": "xoxb-" * 20_000,
    "ya29 run": "ya29." * 20_000,
    "colons after ://": "x://" + "b:" * 50_000,
    "BEGIN headers": "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000,
}


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_every_shape_is_linear_on_adversarial_runs(text: str) -> None:
    """A quadratic credential regex turned a few long log lines into a hang of the CLI and the agent."""
    started = time.monotonic()
    for _kind, shape in CREDENTIAL_SHAPES:
        shape.search(text)
    Redactor().text(text)
    # Linear: milliseconds. Quadratic on these inputs: seconds to minutes. Loose for a loaded machine.
    assert time.monotonic() - started < 5


def test_scrub_then_cut_never_lets_half_a_token_through() -> None:
    """Output cut to a tail before it was scrubbed let a token cut in half escape (25 of its 39 characters)."""
    stderr = "x" * 5000 + TOKEN + "\n" + "y" * (STDERR_TAIL_CHARS - 25) + "\nfailed\n"
    # The attack: cut first, and the token's last characters no longer look like a token.
    assert TOKEN[-15:] in Redactor().text(stderr.strip()[-STDERR_TAIL_CHARS:])
    tail = Completed(1, "", stderr).stderr_tail(Redactor())
    assert TOKEN[-15:] not in tail
    assert tail.endswith("failed")


def test_known_values_shapes_pem_and_urls_are_hidden() -> None:
    """The shell's own secrets (by value) and anything shaped like a credential, with URLs kept readable."""
    own = "my-own-vllm-key-123"
    redactor = Redactor.from_environment({"VLLM_API_KEY": own, "HF_TOKEN": "short"})
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEv\nabc\n-----END PRIVATE KEY-----"
    text = redactor.text(f"key {own} tok {TOKEN} url https://u:hunter2@host/x {pem} after")
    assert own not in text
    assert TOKEN not in text
    assert "hunter2" not in text
    assert "MIIEv" not in text
    assert "https://[redacted]@host/x" in text
    assert text.endswith("after")
    assert redactor.text("a short answer") == "a short answer"  # values under 8 characters are not scrubbed
    assert text.count(REDACTED) == 4


def test_control_characters_are_escaped_but_newlines_and_tabs_stay() -> None:
    """Clear-screen, cursor movement, OSC 52 and C1 CSI become visible text; a traceback keeps its lines."""
    assert escape_controls("a\x1b[2Jb\x9b1Ac\x07\td\ne\u202e") == "a\\x1b[2Jb\\x9b1Ac\\x07\td\ne\\u202e"


def test_long_lines_are_cut_and_marked() -> None:
    text = Redactor().text("short\n" + "z" * 10_000)
    first, second = text.split("\n")
    assert first == "short"
    assert second == "z" * 4000 + " [... cut: 6000 more characters]"
