"""What every component of one stack shares: its name, project and labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from serving.naming import StackNames


@dataclass(frozen=True)
class StackContext:
    stack: str
    project: str
    labels: Mapping[str, str]

    @property
    def names(self) -> StackNames:
        """Every name the stack's resources get (serving/naming.py, which the readers use too)."""
        return StackNames(self.stack)

    @property
    def base(self) -> str:
        """The prefix of every component name (`gemma-<stack>`)."""
        return self.names.base
