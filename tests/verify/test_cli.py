"""`gemma-verify health` as users run it: exit codes and messages, against real sockets.

One test runs `python -m verify` as a child process, and one the installed `gemma-verify` script: the process
boundary itself (the module's `__main__`, the exit status, stdout and stderr as a shell sees them). The others
run the command's own `main` in this process (a worker thread, so its `asyncio.run` leaves this test's loop
serving the fake server): each child paid the CLI's imports again, some 0.8 s of CPU for the same exit code
and the same text.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from tests.fake_vllm import FakeVllm, FakeVllmConfig, free_port
from verify import UsageError, cli
from verify.health import cli as health_cli
from verify.version import project_version

ROOT = Path(__file__).resolve().parents[2]
# The width a child was given (COLUMNS=200), so that a table row is never wrapped mid-word.
WIDE = {"COLUMNS": "200"}


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


async def verify(*argv: str, env: dict[str, str] | None = None) -> Run:
    """`python -m verify <argv>` by the command's `main`, in a worker thread while this test's loop serves."""

    def run() -> Run:
        out, err = io.StringIO(), io.StringIO()
        with (
            mock.patch.dict(os.environ, {**WIDE, **(env or {})}),
            contextlib.chdir(ROOT),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                code = cli.main(list(argv))
            except SystemExit as exit_:  # argparse's usage errors
                code = exit_.code if isinstance(exit_.code, int) else 1
        return Run(code, out.getvalue(), err.getvalue())

    return await asyncio.wait_for(asyncio.to_thread(run), timeout=60)


async def verify_process(*argv: str) -> Run:
    """`python -m verify <argv>` in a child process, while this test's event loop keeps serving the fake."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "verify",
        *argv,
        cwd=ROOT,
        env={**os.environ, **WIDE},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return Run(process.returncode, out.decode(), err.decode())


async def test_healthy_server_exit_0_with_a_table() -> None:
    """`python -m verify health` as a shell runs it: a table on stdout and exit status 0 from the process."""
    async with FakeVllm() as server:
        run = await verify_process("health", "--url", server.url, "--model", "tiny-gemma")
    assert run.code == 0, run.err
    for name in ("readiness", "models", "version", "chat", "chat-stream", "metrics"):
        assert name in run.out
    assert "all 6 checks passed" in run.out


async def test_json_prints_the_same_facts_as_one_document() -> None:
    """--json must be machine-readable on stdout alone: one document, the same checks and exit code."""
    async with FakeVllm() as server:
        run = await verify("health", "--url", server.url, "--model", "tiny-gemma", "--json")
    assert run.code == 0, run.err
    document = json.loads(run.out)
    assert [check["name"] for check in document["checks"]] == [
        "readiness",
        "models",
        "version",
        "chat",
        "chat-stream",
        "metrics",
    ]
    assert {check["status"] for check in document["checks"]} == {"pass"}
    assert document["exit_code"] == 0
    assert document["vllm_version"] == "0.32.0"
    assert document["target"]["model"] == "tiny-gemma"


async def test_wrong_model_exit_1_naming_the_served_names() -> None:
    async with FakeVllm() as server:
        run = await verify("health", "--url", server.url, "--model", "gemma-4-12b")
    assert run.code == 1
    assert "'gemma-4-12b' not served" in run.out
    assert "tiny-gemma" in run.out
    assert "likely cause" in run.out


async def test_stopped_server_exit_2_naming_connection_refused() -> None:
    run = await verify("health", "--url", f"http://127.0.0.1:{free_port()}", "--wait", "0.2")
    assert run.code == 2
    assert "connection refused" in run.out
    assert "not started" in run.out
    assert "waiting for readiness" in run.err  # progress goes to stderr, keeping stdout for results


async def test_unauthorised_exit_2_with_the_fix() -> None:
    """vLLM with --api-key and no key given: exit 2, telling the user how to pass one."""
    async with FakeVllm(FakeVllmConfig(api_key="right")) as server:
        run = await verify("health", "--url", server.url, "--model", "tiny-gemma", "--json")
    assert run.code == 2
    document = json.loads(run.out)
    models = document["checks"][1]
    assert models["status"] == "unauthorised"
    assert "--api-key-env" in models["cause"]


async def test_wrong_api_key_is_never_printed() -> None:
    secret = "sk-verify-test-7f3a9c"
    async with FakeVllm(FakeVllmConfig(api_key="right")) as server:
        run = await verify("health", "--url", server.url, "--api-key-env", "TEST_KEY", env={"TEST_KEY": secret})
        sent = [seen.headers.get("Authorization") for seen in server.requests if seen.path == "/v1/models"]
    assert run.code == 2
    assert sent == [f"Bearer {secret}"]
    assert secret not in run.out + run.err
    assert "$TEST_KEY" in run.out


async def test_unset_api_key_variable_is_a_usage_error_naming_it() -> None:
    env = {key: value for key, value in os.environ.items() if key != "NOT_SET_ANYWHERE"}
    run = await verify(
        "health",
        "--url",
        "http://10.0.0.5:8000",
        "--allow-private-url",
        "--auth",
        "api-key",
        "--api-key-env",
        "NOT_SET_ANYWHERE",
        env=env,
    )
    assert run.code == 2
    assert "NOT_SET_ANYWHERE" in run.err
    assert run.out == ""


async def test_stack_without_pulumi_is_a_usage_error(tmp_path: Path) -> None:
    run = await verify("health", "--stack", "l4", env={"PATH": str(tmp_path)})
    assert run.code == 2
    assert "`pulumi` is not on PATH" in run.err


async def test_bad_flag_value_names_the_flag() -> None:
    run = await verify("health", "--url", "http://127.0.0.1:1", "--wait", "soon")
    assert run.code == 2
    assert "--wait" in run.err


def test_subcommands_register_through_one_call() -> None:
    """Adding a subcommand (bench, compare) must take only a register(subparsers) call."""
    parser = cli.build_parser()
    args = parser.parse_args(["health", "--url", "http://127.0.0.1:8000"])
    assert callable(args.handler)
    assert args.wait == 900.0

    calls: list[argparse.Namespace] = []

    def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        sub = subparsers.add_parser("probe")

        def handle(ns: argparse.Namespace) -> int:
            calls.append(ns)
            return 0

        sub.set_defaults(handler=handle)

    extended = cli.build_parser()
    register(next(a for a in extended._actions if isinstance(a, argparse._SubParsersAction)))
    assert extended.parse_args(["probe"]).handler(argparse.Namespace()) == 0
    assert len(calls) == 1


def test_usage_errors_from_handlers_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Any subcommand raising UsageError must print one line on stderr and exit 2, no traceback."""

    def handler(_args: argparse.Namespace) -> int:
        raise UsageError("--thing must be one of a, b")

    monkeypatch.setattr(health_cli, "run_health_command", handler)
    assert cli.main(["health", "--url", "http://127.0.0.1:1", "--wait", "0"]) == 2
    assert "--thing must be one of a, b" in capsys.readouterr().err


def test_console_script_runs_outside_the_project_and_the_venv(tmp_path: Path) -> None:
    """Guards against `python -m verify` being the only way in: it fails with ModuleNotFoundError unless
    the venv is active. `make venv` installs .venv/bin/gemma-verify, which runs from any directory."""
    script = Path(sys.executable).with_name("gemma-verify")
    if not script.exists():
        pytest.skip("gemma-verify is installed by `make venv` / `make test` (pip install --no-deps -e .)")
    completed = subprocess.run(
        [str(script), "--version"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == f"gemma-verify {project_version()}"


def test_version_is_the_projects() -> None:
    """Guards against --version printing a number nobody maintains: it is pyproject.toml's."""
    with (ROOT / "pyproject.toml").open("rb") as handle:
        assert project_version() == tomllib.load(handle)["project"]["version"]


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_each_subcommand_is_found_when_only_its_module_is_loaded() -> None:
    """A row of the lazy table pointing at the wrong module would make that subcommand an 'invalid choice'."""
    everything = _choices(cli.build_parser())
    assert everything == list(cli._REGISTRARS)
    for command in everything:
        assert command in _choices(cli.build_parser(command))


def test_a_subcommand_starts_without_the_other_subcommands_dependencies() -> None:
    """`gemma-verify health` paid 0.65 s importing bench, ops, alerts, memory and promote's flags (Google auth, the
    settings models) before it sent a request; `--version` paid the same to print one line."""
    # One fresh interpreter for both: `--version` first, since what it loads is part of what `health` loads,
    # so `health`'s list is the same whether `--version` ran before it or not.
    probe = (
        "import sys; from verify.cli import build_parser\n"
        "for command in sys.argv[1:]:\n"
        "    build_parser(command)\n"
        "    print(' '.join(sorted(m for m in sys.modules if m.startswith(('verify.', 'stacks')))))"
    )
    commands = ("--version", "health")
    printed = subprocess.run(
        [sys.executable, "-c", probe, *commands], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    loaded = {command: line.split() for command, line in zip(commands, printed, strict=True)}
    others = ("verify.bench", "verify.ops", "verify.alerts", "verify.memory", "verify.promote.cli", "stacks")
    assert not [m for m in loaded["health"] if m.startswith(others)]
    assert "verify.health.cli" in loaded["health"]
    assert not [m for m in loaded["--version"] if m.endswith(".cli") and m != "verify.cli"]
