"""The one module of the project that talks to Pulumi: stack outputs, `up`, `destroy`, the state's URNs.

Why one module: Pulumi was called from four places (two subprocesses, one without the other's advice
when the CLI is missing, and two Automation API paths); each reader and writer now comes here, so the
working folder, the policy packs and the failure messages are said once. The MCP server imports it
(`AutomationGateway`, with its own error type); `verify` never imports the server.

Two ways in, one engine: reading outputs runs `pulumi stack output --json` (tests replace the runner,
`PulumiRunner`, never the arguments); updates go through the Automation API (`pulumi.automation`, which
drives the same CLI), because it takes config and arguments as data and reports a typed summary.
Secrets are never shown (`show_secrets=False`) and the engine's output is captured, never printed by the
MCP server (stdout belongs to its transport).

The bench job's outputs come back as the contract's typed model (`serving.outputs.BenchJobOutputs`).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pydantic

from preview.stack_file import StackFileError, project_root
from serving.outputs import BenchJobOutputs
from verify import UsageError
from verify.promote.shifter import (
    CANDIDATE_PERCENT_KEY,
    PREVIOUS_REVISION_KEY,
    PROMOTION_RUN_ENV,
    PROMOTION_RUN_KEY,
    SERVING_REVISION_KEY,
    SERVING_TRACK_KEY,
    ShiftFailedError,
    TrafficChange,
)
from verify.responses import body_excerpt

# A stack's outputs are read with this command; tests replace the runner, never the arguments.
PulumiRunner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]

# What a command that can also work without Pulumi tells a user who has no Pulumi CLI.
WITHOUT_PULUMI_USE_URL = "or pass --url URL [--model NAME] instead"


def read_stack_outputs(
    stack: str, *, run_pulumi: PulumiRunner | None = None, without_cli: str = WITHOUT_PULUMI_USE_URL
) -> object:
    """The stack's outputs as `pulumi stack output --json` prints them; ``UsageError`` when unreadable.

    ``without_cli`` ends the advice when the Pulumi CLI is missing: each command says what works for it
    (health can take --url; promote cannot, so it must not suggest it).
    """
    run_pulumi = run_pulumi or run_pulumi_cli
    command = ["pulumi", "stack", "output", "--json", "--stack", stack]
    try:
        completed = run_pulumi(command)
    except FileNotFoundError as exc:
        raise UsageError(
            "--stack needs the Pulumi CLI, but `pulumi` is not on PATH; install it "
            f"(https://www.pulumi.com/docs/install/) {without_cli}"
        ) from exc
    if completed.returncode != 0:
        raise UsageError(
            f"`{' '.join(command)}` failed with exit code {completed.returncode}: "
            f"{body_excerpt(completed.stderr or completed.stdout, 300)} (is {stack!r} a stack of this project, "
            "and are you logged in to its backend?)"
        )
    return _parse_outputs_json(stack, completed.stdout)


def bench_job_of(outputs: object, stack: str) -> BenchJobOutputs:
    """The stack's `benchJob` output, typed; ``UsageError`` saying how to add one when it has none.

    Tolerated, for stacks deployed by older versions: `project`, `tasks` and `cpuPerTask` may be absent
    (the job then runs in gcloud's default project); `name`, `region`, `resultsBucket` and
    `resultsPrefix` are what starting the job and fetching its files need, so they are required.
    """
    raw = outputs.get("benchJob") if isinstance(outputs, dict) else None
    try:
        return BenchJobOutputs.model_validate(raw)
    except pydantic.ValidationError:
        raise UsageError(
            f"stack {stack!r} exports no benchJob: add a gemma-serving:bench block (image, tasks, cpuPerTask; "
            "see docs/benchmarking.md) and run `pulumi up`, or benchmark from here without --on-cloud-run"
        ) from None


def run_pulumi_cli(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """The Pulumi CLI run in the project folder (not wherever verify was started), as Pulumi needs."""
    return subprocess.run(
        list(command), cwd=pulumi_project_dir(), capture_output=True, text=True, check=False, timeout=120
    )


def pulumi_project_dir() -> Path:
    """The project folder the Pulumi CLI runs in (preview.stack_file.project_root); UsageError if none."""
    try:
        return project_root()
    except StackFileError as error:
        raise UsageError(str(error)) from None


def _parse_outputs_json(stack: str, stdout: str) -> object:
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        raise UsageError(
            f"`pulumi stack output --json --stack {stack}` did not print JSON: {body_excerpt(stdout, 300)}"
        ) from None


# --- updates, through the Automation API ----------------------------------------------------------


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
    # What a failure is raised as: the MCP server passes its tool error, so a tool's error reads as before.
    error: Callable[[str], Exception] = UsageError

    def _stack(self, stack: str) -> Any:  # noqa: ANN401 - pulumi.automation.Stack
        try:
            from pulumi import automation  # noqa: PLC0415 - the CLI check happens here, not at import

            return automation.select_stack(stack_name=stack, work_dir=str(self.root))
        except FileNotFoundError as error:
            raise self.error(
                "this tool needs the Pulumi CLI, which is not on PATH: install it (https://www.pulumi.com/docs/install/)"
            ) from error
        except Exception as error:  # noqa: BLE001 - the Automation API raises CommandError and friends
            raise self.error(f"pulumi could not select stack {stack!r}: {_first_line(error)}") from None

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


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[-1] if text else type(error).__name__


class PulumiAutomationShifter:
    """Runs `pulumi up` for the stack through the Automation API with the change as stack config.

    ``policy_packs`` are passed to every update, like the deploy workflow's `pulumi up`.
    """

    def __init__(
        self,
        stack: str,
        *,
        work_dir: Path,
        policy_packs: Sequence[str] = (),
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self._stack_name = stack
        self._work_dir = work_dir
        self._policy_packs = list(policy_packs)
        self._on_output = on_output or _print_to_stderr

    def apply(self, change: TrafficChange) -> None:
        from pulumi import automation as auto  # noqa: PLC0415 - the CLI is needed only when traffic moves

        run_id = secrets.token_hex(16)
        try:
            stack = auto.select_stack(
                stack_name=self._stack_name,
                work_dir=str(self._work_dir),
                opts=auto.LocalWorkspaceOptions(env_vars={PROMOTION_RUN_ENV: run_id}),
            )
        except (auto.CommandError, FileNotFoundError) as exc:
            raise UsageError(
                f"cannot select stack {self._stack_name!r} with the Pulumi CLI ({exc}); promotion moves traffic "
                "with `pulumi up`, so it needs the CLI logged in to the stack's backend"
            ) from None
        config = {
            SERVING_REVISION_KEY: auto.ConfigValue(change.serving_revision),
            CANDIDATE_PERCENT_KEY: auto.ConfigValue(str(change.candidate_percent)),
            PROMOTION_RUN_KEY: auto.ConfigValue(run_id),
        }
        if change.previous_revision is not None:
            config[PREVIOUS_REVISION_KEY] = auto.ConfigValue(change.previous_revision)
        keys = list(config)
        try:
            # Killed anywhere from here on (SIGKILL, a cancelled job), the keys stay behind but stay inert.
            stack.set_all_config(config, path=True)
            stack.up(
                message=f"verify promote: {change.reason}",
                on_output=self._on_output,
                policy_packs=self._policy_packs or None,
            )
        except auto.CommandError as exc:
            raise ShiftFailedError(f"`pulumi up` failed: {exc}") from None
        finally:
            # The update's outputs carry the split forward; the keys are removed whatever happened.
            with contextlib.suppress(auto.CommandError):
                stack.remove_all_config(keys, path=True)


class PulumiTrackShifter:
    """Sets gke.rollout.servingTrack and runs `pulumi up` (Automation API); restores the old value on failure."""

    def __init__(self, stack: str, *, work_dir: Path, policy_packs: tuple[str, ...] = ()) -> None:
        self._stack_name = stack
        self._work_dir = work_dir
        self._policy_packs = list(policy_packs)

    def serve(self, track: str, *, reason: str) -> None:
        from pulumi import automation as auto  # noqa: PLC0415 - the CLI is needed only when traffic moves

        try:
            stack = auto.select_stack(stack_name=self._stack_name, work_dir=str(self._work_dir))
        except (auto.CommandError, FileNotFoundError) as exc:
            raise UsageError(
                f"cannot select stack {self._stack_name!r} with the Pulumi CLI ({exc}); promotion moves users "
                "with `pulumi up`, so it needs the CLI logged in to the stack's backend"
            ) from None
        before: str | None = None
        with contextlib.suppress(auto.CommandError):
            before = stack.get_config(SERVING_TRACK_KEY, path=True).value
        try:
            stack.set_config(SERVING_TRACK_KEY, auto.ConfigValue(track), path=True)
            stack.up(
                message=f"verify promote: {reason}", on_output=_print_to_stderr, policy_packs=self._policy_packs or None
            )
        except auto.CommandError as exc:
            with contextlib.suppress(auto.CommandError):
                if before is None:
                    stack.remove_config(SERVING_TRACK_KEY, path=True)
                else:
                    stack.set_config(SERVING_TRACK_KEY, auto.ConfigValue(before), path=True)
            raise ShiftFailedError(f"`pulumi up` failed: {exc}") from None


def _print_to_stderr(line: str) -> None:
    print(line, end="" if line.endswith("\n") else "\n", file=sys.stderr)
