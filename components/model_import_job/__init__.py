"""The script the model import job runs, and its pure decision logic (importable by tests)."""

from __future__ import annotations

from pathlib import Path

SCRIPT_PATH = Path(__file__).resolve().with_name("job.py")


def script_source() -> str:
    """The job script's text: the container runs it as `python3 -c <text>` (it needs no install step)."""
    return SCRIPT_PATH.read_text(encoding="utf-8")
