"""Every call the server makes to Pulumi, through the Automation API (`pulumi.automation`).

Why the Automation API: it drives the same engine and state as `pulumi up` in a terminal, takes its
arguments as data (never a shell string), reports a typed summary of what changed, and marks secret
outputs as secret so they can be left out. Secrets are never shown (`show_secrets=False`) and the
engine's own output is captured, never printed (stdout belongs to the MCP transport).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp.server.mcpserver.exceptions import ToolError

from serving.naming import StackNames

# The weight import of a checkpoint re-runs by replacing the pulumi-command resource that executes the job.


@dataclass(frozen=True, slots=True)
class StackOutputValues:
    values: dict[str, Any]
    secret_names: list[str]


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    result: str
    resource_changes: dict[str, int]
    outputs: StackOutputValues


class PulumiGateway(Protocol):
    def outputs(self, stack: str) -> StackOutputValues: ...

    def up(self, stack: str, *, replace: Sequence[str] = (), target: Sequence[str] = ()) -> ChangeSummary: ...

    def destroy(self, stack: str) -> ChangeSummary: ...

    def resource_urns(self, stack: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class AutomationGateway:
    """The real gateway: a local workspace in the project root, one stack selected per call.

    `policy_packs` run with every update, as in the deploy workflow (`policyPacks: policy`): the server's
    `pulumi up` is held to the same guardrails as CI's (the pack needs its virtualenv, policy/.venv).
    """

    root: Path
    policy_packs: tuple[str, ...] = ()

    def _stack(self, stack: str) -> Any:  # noqa: ANN401 - pulumi.automation.Stack
        try:
            from pulumi import automation  # noqa: PLC0415 - the CLI check happens here, not at import

            return automation.select_stack(stack_name=stack, work_dir=str(self.root))
        except FileNotFoundError as error:
            raise ToolError(
                "this tool needs the Pulumi CLI, which is not on PATH: install it (https://www.pulumi.com/docs/install/)"
            ) from error
        except Exception as error:  # noqa: BLE001 - the Automation API raises CommandError and friends
            raise ToolError(f"pulumi could not select stack {stack!r}: {_first_line(error)}") from None

    def outputs(self, stack: str) -> StackOutputValues:
        return _output_values(self._stack(stack).outputs())

    def up(self, stack: str, *, replace: Sequence[str] = (), target: Sequence[str] = ()) -> ChangeSummary:
        selected = self._stack(stack)
        result = selected.up(
            replace=list(replace) or None,
            target=list(target) or None,
            policy_packs=list(self.policy_packs) or None,
            show_secrets=False,
            suppress_outputs=True,
            color="never",
        )
        return ChangeSummary(
            result=str(result.summary.result),
            resource_changes=dict(result.summary.resource_changes or {}),
            outputs=_output_values(result.outputs),
        )

    def destroy(self, stack: str) -> ChangeSummary:
        result = self._stack(stack).destroy(show_secrets=False, suppress_outputs=True, color="never")
        return ChangeSummary(
            result=str(result.summary.result),
            resource_changes=dict(result.summary.resource_changes or {}),
            outputs=StackOutputValues(values={}, secret_names=[]),
        )

    def resource_urns(self, stack: str) -> list[str]:
        deployment = self._stack(stack).export_stack().deployment or {}
        return [str(resource["urn"]) for resource in deployment.get("resources", []) if "urn" in resource]


def _output_values(outputs: dict[str, Any]) -> StackOutputValues:
    values: dict[str, Any] = {}
    secret_names: list[str] = []
    for name, output in sorted(outputs.items()):
        if getattr(output, "secret", False):
            secret_names.append(name)
            values[name] = "[secret]"
        else:
            values[name] = getattr(output, "value", output)
    return StackOutputValues(values=values, secret_names=secret_names)


def import_run_urn(urns: Sequence[str], stack: str, role: str) -> str:
    """The URN of the command that runs a checkpoint's import job (serving/naming.py, `import_run`)."""
    names = StackNames(stack)
    matches = [urn for urn in urns if urn.endswith(f"::{names.import_run(role)}")]
    if not matches:
        roles = sorted(
            {found for urn in urns if (found := names.import_role_of_run(urn.rsplit("::", 1)[-1])) is not None}
        )
        raise ToolError(
            f"stack {stack!r} has no weight import {role!r} in its state; imports it has: {', '.join(roles) or 'none'}"
        )
    return matches[0]


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[-1] if text else type(error).__name__
