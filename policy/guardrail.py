"""One guardrail: which resource types it reads and the check that lists what is wrong with one resource.

Why checks return messages instead of calling ``report_violation`` themselves: a check is then a plain
function of the properties, which tests call with crafted inputs and the offline plan calls for every
captured resource, and the policy pack only adapts it to pulumi-policy's callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

# A check gets the resource type, its input properties and the policy's configuration.
Check = Callable[[str, Mapping[str, Any], Mapping[str, Any]], Iterable[str]]


@dataclass(frozen=True)
class Guardrail:
    """A rule the project promises for every stack, whoever wrote the code that breaks it."""

    name: str
    description: str
    resource_types: frozenset[str]
    check: Check
    # Type-token prefixes also read, for resource families such as Python dynamic resources, whose token
    # carries the module and class chosen by the program (`pulumi-python:dynamic/tpu:QueuedResource`).
    type_prefixes: tuple[str, ...] = ()
    # JSON schema properties of the policy's configuration (pulumi-policy PolicyConfigSchema).
    config_schema: Mapping[str, Any] | None = None

    def applies_to(self, resource_type: str) -> bool:
        return resource_type in self.resource_types or resource_type.startswith(self.type_prefixes)

    def violations(
        self, resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
    ) -> list[str]:
        """Every way the resource breaks this rule (empty when it complies or the rule does not apply)."""
        if not self.applies_to(resource_type):
            return []
        return list(self.check(resource_type, props, config or {}))

    def validate(self, args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        """The callback pulumi-policy calls for each resource."""
        for message in self.violations(args.resource_type, args.props, args.get_config()):
            report_violation(message, None)
