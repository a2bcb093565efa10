"""The one module of the project that talks to Pulumi: a deployed stack's outputs, `up`, `destroy`, its URNs.

Why one module: Pulumi was called from four places (two subprocesses, one without the other's advice
when the CLI is missing, and two Automation API paths); each reader and writer now comes here, so the
working folder, the policy packs, secrets and the failure messages are said once. The MCP server
imports it (`AutomationGateway`, with its own error type); `verify` never imports the server.

One transport, the Automation API (`pulumi.automation`): config and arguments go in as data, typed
summaries come out, and its CLI driver (`PulumiCommand`) finds the CLI, checks its version and raises
`CommandError` with the CLI's own words. Two of its defaults are not safe for a reader, so every call
goes through one workspace (`StackWorkspace`, a `LocalWorkspace`) that changes them:

- `select_stack` runs `pulumi stack select`, which changes the stack the user's own `pulumi` commands act
  on: a read-only `verify status` (or the MCP server's `deploy` of another stack) would leave their next
  `pulumi up` aimed elsewhere. Every command a `Stack` runs names `--stack`, so here nothing is selected.
- `stack_outputs` (what `Stack.outputs()` and `Stack.up()` read) runs `pulumi stack output --show-secrets`:
  every secret output's plaintext would reach this process, and a stack whose secrets provider needs a
  passphrase or a KMS key could not be read by someone who may read its state but not decrypt it. Here
  only the masked `pulumi stack output --json` runs: a secret output arrives as "[secret]" and is marked
  secret; its value never leaves the CLI. `export_stack` (the URNs) likewise leaves secrets encrypted.

Updates ask for no plaintext either (`show_secrets=False` for the summary, `suppress_outputs=True`), and
the engine's output is captured, never printed by the MCP server (stdout belongs to its transport).

What comes back is the contract's models: `StackReading.outputs` is `serving.outputs.DeployedOutputs`,
the tolerant reading of stacks deployed by any version, and `bench_job` the typed `BenchJobOutputs`.
Tests replace the gateway (`StackOutputsReader` / `PulumiGateway`, with a fake), never its arguments.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from preview.stack_file import StackFileError, project_root
from serving.outputs import BenchJobOutputs, DeployedOutputs, contract_problems
from serving.rollout_keys import (
    CANDIDATE_PERCENT_KEY,
    PREVIOUS_REVISION_KEY,
    PROMOTION_RUN_ENV,
    PROMOTION_RUN_KEY,
    SERVING_REVISION_KEY,
    SERVING_TRACK_KEY,
    TRACK_SHARE_KEY,
)
from verify import UsageError
from verify.responses import body_excerpt
from verify.traffic import ShiftFailedError, TrafficChange

if TYPE_CHECKING:
    # Imported where it runs, not here: `verify bench task` (the bench job's image) imports this module through
    # verify.endpoint and has no Pulumi SDK; only a command that reads or changes a stack needs it.
    from pulumi import automation

# What `pulumi stack output` prints in place of a secret output's value (the Automation API's own sentinel).
SECRET = "[secret]"  # noqa: S105 - the mask, not a credential
PULUMI_INSTALL = "https://www.pulumi.com/docs/install/"
# What a command that can also work without Pulumi tells a user who has no Pulumi CLI.
WITHOUT_PULUMI_USE_URL = "or pass --url URL [--model NAME] instead"


def missing_cli_message(needs: str, without_cli: str = "") -> str:
    """``needs`` ("--stack needs", "this tool needs") + where to get the CLI + what works without it."""
    advice = f" {without_cli}" if without_cli else ""
    return f"{needs} the Pulumi CLI, but `pulumi` is not on PATH; install it ({PULUMI_INSTALL}){advice}"


@dataclass(frozen=True)
class StackReading:
    """A deployed stack's outputs as the gateway read them, secrets masked.

    ``values`` are the outputs as exported, each secret one as "[secret]" (``secret_names`` lists them):
    for readers that show outputs as they are. ``outputs`` is the typed, tolerant reading every other
    reader takes (serving.outputs.DeployedOutputs: what may be missing there and what it reads as).
    """

    stack: str
    values: Mapping[str, object]
    secret_names: tuple[str, ...] = ()

    @cached_property
    def outputs(self) -> DeployedOutputs:
        return DeployedOutputs.read(self.values)

    @cached_property
    def other_values(self) -> dict[str, object]:
        """Outputs the contract does not declare (a newer program's, or a hand-added one), as exported."""
        known = {field.alias or name for name, field in DeployedOutputs.model_fields.items()}
        return {name: value for name, value in self.values.items() if name not in known}

    @cached_property
    def problems(self) -> list[str]:
        """Each output the contract misses or finds malformed (a stack deployed by an older version)."""
        return contract_problems(dict(self.values))

    def bench_job(self) -> BenchJobOutputs:
        """The stack's `benchJob` output, typed; ``UsageError`` saying how to add one when it has none.

        Tolerated, for stacks deployed by older versions: `project`, `tasks` and `cpuPerTask` may be absent
        (the job then runs in gcloud's default project); `name`, `region`, `resultsBucket` and
        `resultsPrefix` are what starting the job and fetching its files need, so they are required.
        """
        if self.outputs.bench_job is None:
            raise UsageError(
                f"stack {self.stack!r} exports no benchJob: add a gemma-serving:bench block (image, tasks, "
                "cpuPerTask; see docs/benchmarking.md) and run `pulumi up`, or benchmark from here without "
                "--on-cloud-run"
            )
        return self.outputs.bench_job


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    result: str
    resource_changes: dict[str, int]
    outputs: StackReading


class StackOutputsReader(Protocol):
    """What a reader of a deployed stack needs: its outputs (verify's commands take this, tests a fake)."""

    def outputs(self, stack: str) -> StackReading: ...


class PulumiGateway(StackOutputsReader, Protocol):
    def up(self, stack: str, *, replace: Sequence[str] = (), target: Sequence[str] = ()) -> ChangeSummary: ...

    def destroy(self, stack: str) -> ChangeSummary: ...

    def resource_urns(self, stack: str) -> list[str]: ...


@cache
def _stack_workspace() -> type[automation.LocalWorkspace]:
    """The workspace class every call uses (made on first use, as the SDK is imported then)."""
    from pulumi import automation  # noqa: PLC0415 - see the import under TYPE_CHECKING

    class StackWorkspace(automation.LocalWorkspace):
        """A LocalWorkspace that never selects a stack and never asks the CLI for a secret's plaintext (see above)."""

        def select_stack(self, stack_name: str) -> None:
            # `pulumi stack select` would change the user's selected stack; every command names --stack instead,
            # and one for a stack that does not exist fails with the CLI's "no stack named ... found".
            del stack_name

        def stack_outputs(self, stack_name: str) -> automation.OutputMap:
            values = self._json(["stack", "output", "--json", "--stack", stack_name])
            return {name: automation.OutputValue(value=value, secret=value == SECRET) for name, value in values.items()}

        def export_stack(self, stack_name: str) -> automation.Deployment:
            state = self._json(["stack", "export", "--stack", stack_name])
            return automation.Deployment(version=state.get("version"), deployment=state.get("deployment"))

        def _json(self, args: list[str]) -> dict[str, Any]:
            """The JSON object a read prints; _NotJsonError with what it printed instead."""
            stdout = self.pulumi_command.run(args, self.work_dir, dict(self.env_vars)).stdout
            try:
                found = json.loads(stdout)
            except json.JSONDecodeError:
                found = None
            if not isinstance(found, dict):
                raise _NotJsonError(stdout)
            return found

    return StackWorkspace


class _NotJsonError(Exception):
    def __init__(self, stdout: str) -> None:
        super().__init__(stdout)
        self.stdout = stdout


def open_stack(
    stack: str,
    work_dir: Path,
    env_vars: Mapping[str, str] | None = None,
    *,
    command: automation.PulumiCommand | None = None,
) -> automation.Stack:
    """The Automation API's Stack for ``stack`` in ``work_dir`` (nothing selected, no plaintext asked for);
    ``command`` is a CLI already found and version-checked (None: find it now, `pulumi version`).

    Raises FileNotFoundError without the CLI, `CommandError` / `InvalidVersionError` when it cannot be used.
    """
    from pulumi import automation  # noqa: PLC0415 - see the import under TYPE_CHECKING

    workspace = _stack_workspace()(work_dir=str(work_dir), env_vars=dict(env_vars or {}), pulumi_command=command)
    return automation.Stack.select(stack, workspace)


class AutomationGateway:
    """The real gateway: the project's Pulumi program and state, one stack named per call.

    ``root`` is the project folder (None: ``preview.stack_file.project_root()`` when a call needs it).
    ``policy_packs`` run with every update, as in the deploy workflow (`policyPacks: policy`): the server's
    `pulumi up` is held to the same guardrails as CI's (the pack needs its virtualenv, policy/.venv).
    A failure is raised as ``error`` (verify's UsageError, or the MCP server's tool error) with the CLI's
    words; without the CLI it says ``missing_cli``, which each command words for itself (health can take
    --url, promote cannot).
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        policy_packs: tuple[str, ...] = (),
        error: Callable[[str], Exception] = UsageError,
        missing_cli: str = missing_cli_message("--stack needs", WITHOUT_PULUMI_USE_URL),
    ) -> None:
        self.root = root
        self.policy_packs = policy_packs
        self.error = error
        self.missing_cli = missing_cli
        self._command: automation.PulumiCommand | None = None

    def outputs(self, stack: str) -> StackReading:
        command = f"pulumi stack output --json --stack {stack}"
        with self._failures(stack, command):
            return _reading(stack, self._open(stack).outputs())

    def up(self, stack: str, *, replace: Sequence[str] = (), target: Sequence[str] = ()) -> ChangeSummary:
        with self._failures(stack, f"pulumi up --stack {stack}"):
            result = self._open(stack).up(
                replace=list(replace) or None,
                target=list(target) or None,
                policy_packs=list(self.policy_packs) or None,
                show_secrets=False,
                suppress_outputs=True,
                color="never",
            )
        return ChangeSummary(
            result=str(result.summary.result),
            resource_changes=_resource_changes(result.summary),
            outputs=_reading(stack, result.outputs),
        )

    def destroy(self, stack: str) -> ChangeSummary:
        with self._failures(stack, f"pulumi destroy --stack {stack}"):
            result = self._open(stack).destroy(show_secrets=False, suppress_outputs=True, color="never")
        return ChangeSummary(
            result=str(result.summary.result),
            resource_changes=_resource_changes(result.summary),
            outputs=StackReading(stack, {}),
        )

    def resource_urns(self, stack: str) -> list[str]:
        with self._failures(stack, f"pulumi stack export --stack {stack}"):
            deployment = self._open(stack).export_stack().deployment or {}
        return [str(resource["urn"]) for resource in deployment.get("resources", []) if "urn" in resource]

    def _open(self, stack: str) -> automation.Stack:
        """The stack, with the CLI found and version-checked once per gateway (the MCP server reads every
        stack's outputs to know its endpoints: one `pulumi version` then, not one per stack)."""
        opened = open_stack(stack, self.root or pulumi_project_dir(), command=self._command)
        self._command = opened.workspace.pulumi_command
        return opened

    @contextlib.contextmanager
    def _failures(self, stack: str, command: str) -> Iterator[None]:
        """Each way the CLI can fail, as one message in the caller's error type."""
        from pulumi import automation  # noqa: PLC0415 - see the import under TYPE_CHECKING

        try:
            yield
        except FileNotFoundError as error:
            raise self.error(self.missing_cli) from error
        except _NotJsonError as error:
            raise self.error(f"`{command}` did not print JSON: {body_excerpt(error.stdout, 300)}") from None
        except automation.CommandError as error:
            code, said = _command_failure(error)
            raise self.error(
                f"`{command}` failed with exit code {code}: {body_excerpt(said, 300)} (is {stack!r} a stack of "
                "this project, and are you logged in to its backend?)"
            ) from None
        except (automation.InvalidVersionError, subprocess.CalledProcessError) as error:
            raise self.error(f"the Pulumi CLI cannot be used: {error}") from None


def pulumi_project_dir() -> Path:
    """The project folder the Pulumi CLI runs in (preview.stack_file.project_root); UsageError if none."""
    try:
        return project_root()
    except StackFileError as error:
        raise UsageError(str(error)) from None


def _reading(stack: str, outputs: Mapping[str, automation.OutputValue]) -> StackReading:
    """Masked values: a secret output is "[secret]" here whatever the map held."""
    values = {name: SECRET if output.secret else output.value for name, output in sorted(outputs.items())}
    return StackReading(stack, values, tuple(name for name, output in sorted(outputs.items()) if output.secret))


def _resource_changes(summary: automation.UpdateSummary) -> dict[str, int]:
    """Pulumi's count per operation (`create`, `same`, ...), keyed by the operation's name."""
    return {
        kind.value if isinstance(kind, Enum) else str(kind): count
        for kind, count in (summary.resource_changes or {}).items()
    }


# `CommandError`'s text is CommandResult's: "\n code: N\n stdout: ...\n stderr: ..." (automation/_cmd.py).
_COMMAND_RESULT = re.compile(r"code: (?P<code>-?\d+)\n stdout: (?P<stdout>.*)\n stderr: (?P<stderr>.*)", re.DOTALL)


def _command_failure(error: automation.CommandError) -> tuple[str, str]:
    """The exit code and what the CLI said (stderr, else stdout) of a failed command."""
    found = _COMMAND_RESULT.search(str(error))
    if found is None:
        return "?", str(error).strip()
    return found["code"], (found["stderr"].strip() or found["stdout"].strip())


# --- traffic moves of `verify promote` -------------------------------------------------------------


def _open_for_promotion(
    stack: str, work_dir: Path, moves: str, env_vars: Mapping[str, str] | None = None
) -> automation.Stack:
    from pulumi import automation  # noqa: PLC0415 - see the import under TYPE_CHECKING

    try:
        return open_stack(stack, work_dir, env_vars)
    except (automation.CommandError, automation.InvalidVersionError, FileNotFoundError) as exc:
        raise UsageError(
            f"cannot use stack {stack!r} with the Pulumi CLI ({exc}); promotion moves {moves} with `pulumi up`, "
            "so it needs the CLI logged in to the stack's backend"
        ) from None


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
        from pulumi import automation  # noqa: PLC0415 - see the import under TYPE_CHECKING

        run_id = secrets.token_hex(16)
        stack = _open_for_promotion(self._stack_name, self._work_dir, "traffic", {PROMOTION_RUN_ENV: run_id})
        config = {
            SERVING_REVISION_KEY: automation.ConfigValue(change.serving_revision),
            CANDIDATE_PERCENT_KEY: automation.ConfigValue(str(change.candidate_percent)),
            PROMOTION_RUN_KEY: automation.ConfigValue(run_id),
        }
        if change.previous_revision is not None:
            config[PREVIOUS_REVISION_KEY] = automation.ConfigValue(change.previous_revision)
        keys = list(config)
        try:
            # Killed anywhere from here on (SIGKILL, a cancelled job), the keys stay behind but stay inert.
            stack.set_all_config(config, path=True)
            stack.up(
                message=f"verify promote: {change.reason}",
                on_output=self._on_output,
                policy_packs=self._policy_packs or None,
                show_secrets=False,
            )
        except automation.CommandError as exc:
            raise ShiftFailedError(f"`pulumi up` failed: {exc}") from None
        finally:
            # The update's outputs carry the split forward; the keys are removed whatever happened.
            with contextlib.suppress(automation.CommandError):
                stack.remove_all_config(keys, path=True)


class PulumiTrackShifter:
    """Sets gke.rollout.servingTrack and runs `pulumi up` (Automation API); restores the old value on failure."""

    def __init__(self, stack: str, *, work_dir: Path, policy_packs: tuple[str, ...] = ()) -> None:
        self._stack_name = stack
        self._work_dir = work_dir
        self._policy_packs = list(policy_packs)

    def serve(self, track: str, *, reason: str) -> None:
        """The serving track becomes `track`, with no share left to the (new) candidate (a share a stepped
        promotion set is removed: it reads as 0)."""
        self._update({SERVING_TRACK_KEY: track}, reason=reason, reset=(TRACK_SHARE_KEY,))

    def split(self, percent: int, *, reason: str) -> None:
        """Behind the inference gateway: the candidate track's share of requests (the HTTPRoute's weights)."""
        self._update({TRACK_SHARE_KEY: str(percent)}, reason=reason)

    def _update(self, values: dict[str, str], *, reason: str, reset: tuple[str, ...] = ()) -> None:
        """Sets `values`, removes the `reset` keys that are set, runs `pulumi up`; puts every key back on failure."""
        from pulumi import automation  # noqa: PLC0415 - see the import under TYPE_CHECKING

        stack = _open_for_promotion(self._stack_name, self._work_dir, "users")
        before: dict[str, str | None] = {}
        for key in (*values, *reset):
            before[key] = None
            with contextlib.suppress(automation.CommandError):
                before[key] = stack.get_config(key, path=True).value
        try:
            for key, value in values.items():
                stack.set_config(key, automation.ConfigValue(value), path=True)
            for key in reset:
                if before[key] is not None:
                    stack.remove_config(key, path=True)
            stack.up(
                message=f"verify promote: {reason}",
                on_output=_print_to_stderr,
                policy_packs=self._policy_packs or None,
                show_secrets=False,
            )
        except automation.CommandError as exc:
            with contextlib.suppress(automation.CommandError):
                for key, old in before.items():
                    if old is not None:
                        stack.set_config(key, automation.ConfigValue(old), path=True)
                    elif key in values:
                        stack.remove_config(key, path=True)
            raise ShiftFailedError(f"`pulumi up` failed: {exc}") from None


def _print_to_stderr(line: str) -> None:
    print(line, end="" if line.endswith("\n") else "\n", file=sys.stderr)
