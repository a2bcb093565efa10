"""Fixtures for the MCP server's tests: a server over this repository with fakes where the cloud would be.

The server's tools run the project's CLIs as child processes (gemma_mcp/runner.py). Here `verify` and
`preview.matrix` run by their own `main` in a worker thread instead (`InProcessCommands`): what a tool test
checks is the arguments the tool passes and what it makes of the exit code and the printed text, and each
child paid the CLI's imports again (about 1 s of CPU). The process boundary itself (process groups, caps,
cancellation, the real `python -m verify`) is tested with `SubprocessRunner` in test_children.py and
test_tools_verify.py. The root conftest's Pulumi mocks are not needed in this process: ``pulumi_capture`` is
overridden by one that installs nothing (as in tests/verify).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import io
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest
from mcp import Client
from mcp_types import CallToolResult, ReadResourceResult, TextContent, TextResourceContents

from gemma_mcp.context import ServerContext
from gemma_mcp.redact import Redactor
from gemma_mcp.runner import Completed, ModuleRunner, SubprocessRunner
from gemma_mcp.server import build_server
from tests.fake_pulumi import reading
from tests.gemma_mcp import sdk_once
from tests.preview_cli import shipped_plan
from tests.xdist_groups import group_folder
from verify.pulumi_gateway import ChangeSummary, StackReading

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def pulumi_capture() -> None:
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The MCP tests run on one pytest-xdist worker (`--dist loadgroup`, as `make test` runs): what the SDK
    derives once per process (sdk_once.py: each tool, each output-schema validator, ~1.5 s of CPU) and the
    verify commands the tools run in-process are then paid once per run, not once per worker."""
    group_folder(items, Path(__file__).parent, "mcp-server")


@pytest.fixture(autouse=True, scope="session")
def _sdk_derivations_once() -> Iterator[None]:
    """Tool models, tool schemas and output-schema validators derived once per process (tests/gemma_mcp/sdk_once.py)."""
    with sdk_once.installed():
        yield


@dataclass
class FakePulumi:
    """Stands in for the Automation API; records every call so a test can prove none was made."""

    # Each stack's outputs as exported (a secret one as "[secret]").
    outputs_by_stack: dict[str, dict[str, object]] = field(default_factory=dict)
    urns: list[str] = field(default_factory=list)
    calls: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)

    def outputs(self, stack: str) -> StackReading:
        self.calls.append(("outputs", stack, ()))
        return reading(stack, self.outputs_by_stack[stack])

    def up(self, stack: str, *, replace: Sequence[str] = (), target: Sequence[str] = ()) -> ChangeSummary:
        self.calls.append(("up", stack, tuple(replace)))
        return ChangeSummary(
            result="succeeded",
            resource_changes={"create": 2, "same": 20},
            outputs=reading(stack, {"endpoint": "https://x.run.app", "apiKey": "[secret]"}),
        )

    def destroy(self, stack: str) -> ChangeSummary:
        self.calls.append(("destroy", stack, ()))
        return ChangeSummary(result="succeeded", resource_changes={"delete": 22}, outputs=reading(stack, {}))

    def resource_urns(self, stack: str) -> list[str]:
        self.calls.append(("urns", stack, ()))
        return self.urns


@dataclass(frozen=True)
class SessionPlans:
    """The real runner, except that a shipped stack's JSON plan is the test session's (tests/preview_cli.py):
    the same `python -m preview --stack <stack> --format json`, run once instead of once per tool call."""

    runner: ModuleRunner

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        match module, list(args):
            case "preview", ["--stack", stack, "--format", "json"] if (ROOT / f"Pulumi.{stack}.yaml").is_file():
                plan = await asyncio.to_thread(shipped_plan, stack, "json")
                return Completed(plan.returncode, plan.stdout, plan.stderr)
        return await self.runner(module, args, timeout_s=timeout_s)


def _run_main(main: Callable[[list[str]], int], module: str, args: list[str], root: Path) -> Completed:
    """`python -m <module> <args>` as SubprocessRunner starts it (NO_COLOR, the root as working directory)."""
    out, err = io.StringIO(), io.StringIO()
    with (
        _ONE_COMMAND,
        mock.patch.dict(os.environ, {"NO_COLOR": "1"}),
        contextlib.chdir(root),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            code = main(args)
        except SystemExit as exit_:  # argparse's usage errors
            code = exit_.code if isinstance(exit_.code, int) else 1
    return Completed(code, out.getvalue(), err.getvalue())


def _verify_main(args: list[str]) -> int:
    from verify.cli import main

    return main(args)


def _matrix_main(args: list[str]) -> int:
    from preview.closed_pipe import run_until_reader_leaves
    from preview.matrix import main

    return run_until_reader_leaves(lambda: main(args))


@dataclass(frozen=True)
class InProcessCommands:
    """The runner the tools get in these tests: `verify` and `preview.matrix` in-process, anything else by
    `runner`. One command at a time (stdout, stderr, the environment and the working directory are the
    process's); a call that outlives `timeout_s` is reported as the real runner reports a stopped child."""

    runner: ModuleRunner
    root: Path = ROOT
    mains: tuple[tuple[str, Callable[[list[str]], int]], ...] = (
        ("verify", _verify_main),
        ("preview.matrix", _matrix_main),
    )

    async def __call__(self, module: str, args: Sequence[str], *, timeout_s: float) -> Completed:
        main = dict(self.mains).get(module)
        if main is None:
            return await self.runner(module, args, timeout_s=timeout_s)
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(_run_main, main, module, list(args), self.root), timeout=timeout_s
            )
        except TimeoutError:
            return Completed(-1, "", f"{module} did not finish within {timeout_s} s", timed_out=True)


# Held by the worker thread that runs a command: two at once would share stdout, the environment and the cwd.
_ONE_COMMAND = threading.Lock()


@functools.cache
def session_results_dir() -> Path:
    """One bench results folder per test process, outside the checkout: a bench run through the server must not
    leave files in the repository (or race another worker's over the newest report). Removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="gemma-mcp-results-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def make_context(
    *,
    allow_changes: bool = False,
    pulumi: FakePulumi | None = None,
    root: Path = ROOT,
    redactor: Redactor | None = None,
    results_dir: Path | None = None,
) -> ServerContext:
    return ServerContext(
        root=root,
        results_dir=results_dir if results_dir is not None else (session_results_dir() if root == ROOT else None),
        run_module=SessionPlans(InProcessCommands(SubprocessRunner(ROOT))),
        pulumi=pulumi or FakePulumi(),
        redactor=redactor or Redactor(),
        allow_changes=allow_changes,
    )


@contextlib.asynccontextmanager
async def connect(ctx: ServerContext | None = None) -> AsyncIterator[Client]:
    """An in-process client session (entered and left in the test's own task, as anyio requires)."""
    async with Client(build_server(ctx or make_context())) as connected:
        yield connected


def text_of(result: CallToolResult) -> str:
    """The text block every tool result starts with (the short summary, or the error message)."""
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def resource_text(read: ReadResourceResult) -> str:
    contents = read.contents[0]
    assert isinstance(contents, TextResourceContents), contents
    return contents.text


def is_file(path: Path) -> bool:
    return path.is_file()


def remove_files(paths: Sequence[str | Path]) -> None:
    """Remove what a test's bench run wrote under bench-results/ (a sync helper: async tests must not block)."""
    for path in paths:
        Path(path).unlink(missing_ok=True)
