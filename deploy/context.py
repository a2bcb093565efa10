"""What every component of one stack shares: its name, project and labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class StackContext:
    stack: str
    project: str
    labels: Mapping[str, str]

    @property
    def base(self) -> str:
        """The prefix of every component name (`gemma-<stack>`)."""
        return f"gemma-{self.stack}"
