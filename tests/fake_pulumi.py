"""A stand-in for the Pulumi gateway's reads (verify/pulumi_gateway.py): each stack's outputs as exported.

Tests replace the gateway, never the commands it runs: what a reader does with a stack's outputs is tested
against this fake; the gateway's own transport is tested once, against a `pulumi` on PATH
(tests/verify/test_pulumi_gateway.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from verify import UsageError
from verify.pulumi_gateway import SECRET, StackReading


def reading(stack: str, values: Mapping[str, object]) -> StackReading:
    """What the gateway returns for outputs exported as ``values`` (a secret one as "[secret]")."""
    return StackReading(stack, dict(values), tuple(name for name, value in values.items() if value == SECRET))


@dataclass
class FakeStackOutputs:
    """Each stack's outputs as `pulumi stack output --json` prints them; a stack it lacks fails as Pulumi would."""

    by_stack: dict[str, Mapping[str, object]] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)

    def outputs(self, stack: str) -> StackReading:
        self.read.append(stack)
        if stack not in self.by_stack:
            raise UsageError(
                f"`pulumi stack output --json --stack {stack}` failed with exit code 255: error: no stack named "
                f"{stack!r} found (is {stack!r} a stack of this project, and are you logged in to its backend?)"
            )
        return reading(stack, self.by_stack[stack])
