"""Every command a user or developer can type answers `--help` with exit 0 and a usage line.

Why: a `%` in one help text made `gemma-verify bench --help` crash with a ValueError traceback (argparse
formats every help string with `%`), and nothing ran `--help` of every command. The `gemma-verify` tree is
walked from its own parser, so a new subcommand (or sub-subcommand) is covered without editing this test;
the other commands are every file of the repository that runs as a program (`if __name__ == "__main__"`),
found by scanning the tree, so a new script is covered too.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

from verify.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]

# Files that run as programs but are test fixtures a test starts (fake servers, children), not commands.
FIXTURES = ("tests/gemma_mcp/", "tests/verify/")


def _command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    paths = []
    for action in parser._actions:  # argparse keeps its subcommands here only
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.append((*prefix, name))
                paths += _command_paths(sub, (*prefix, name))
    return paths


def gemma_verify_commands() -> list[tuple[str, ...]]:
    """Every subcommand path, each subcommand's parser built as `main` builds it for that command."""
    top = [path[0] for path in _command_paths(build_parser(None), ())]
    found: list[tuple[str, ...]] = []
    for command in top:
        found += [path for path in _command_paths(build_parser(command), ()) if path[0] == command]
    return sorted(set(found))


def test_the_walk_finds_the_commands_users_type() -> None:
    """Guards against a walk that passes because it found nothing to ask."""
    commands = gemma_verify_commands()
    for expected in [("health",), ("bench",), ("advise",), ("adapters",), ("alerts", "suggest")]:
        assert expected in commands
    assert len(commands) >= 18


def test_every_gemma_verify_command_answers_help() -> None:
    """`gemma-verify <command> [<sub>] --help` exits 0 with its usage for every command, nested ones too."""
    failed: dict[str, str] = {}
    for path in gemma_verify_commands():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([*path, "--help"])
            except SystemExit as exited:
                code = exited.code if isinstance(exited.code, int) else 1
            except Exception as exc:  # noqa: BLE001 - the finding is which command raised what
                code, err = 1, io.StringIO(f"{type(exc).__name__}: {exc}")
        if code != 0 or "usage:" not in out.getvalue():
            failed[" ".join(path)] = f"exit {code}: {err.getvalue().strip()[-300:]}"
    assert failed == {}


def program_files() -> list[str]:
    """Every file of the tree that runs as a program, as a path relative to the root."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if any(part.startswith(".") for part in path.relative_to(ROOT).parts):
            continue  # .venv, .ci's own checkouts, caches
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(FIXTURES) or (relative.startswith("tests/") and path.name.startswith("test_")):
            continue
        if '__name__ == "__main__"' in path.read_text(encoding="utf-8"):
            found.append(relative)
    return sorted(found)


# Runs each program as its docs say to start it, with `--help`, in one child process (so that a program that
# turns the garbage collector off, or patches a module, does not change this test process): a module of a
# package as `python -m package.module`, any other file as `python FILE`. An alarm turns a program that does
# not answer within seconds into a finding instead of a hung test. Prints {file: [exit code, whether a usage
# line was printed, the output's end]}.
_RUN_EACH = """
import contextlib, io, json, os, runpy, signal, sys

class Hung(Exception):
    pass

def hung(signum, frame):
    raise Hung("did not answer --help within 20 s")

signal.signal(signal.SIGALRM, hung)
results = {}
for relative in sys.argv[1:]:
    out = io.StringIO()
    folder, name = os.path.split(relative)
    in_package = os.path.isfile(os.path.join(folder, "__init__.py"))
    module = (folder if name == "__main__.py" else relative[: -len(".py")]).replace("/", ".")
    sys.argv = [relative, "--help"]
    signal.alarm(20)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            if in_package:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(relative, run_name="__main__")
            code = 0
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else (0 if exited.code is None else 1)
        except BaseException as exc:
            code = 1
            print(f"{type(exc).__name__}: {exc}")
    signal.alarm(0)
    text = out.getvalue()
    results[relative] = [code, "usage" in text.lower(), text[-400:]]
print(json.dumps(results))
"""


def test_the_scan_finds_every_kind_of_program() -> None:
    """Guards against a scan that passes because it found no program."""
    programs = program_files()
    for expected in ["preview/__main__.py", "preview/matrix.py", "gemma_mcp/__main__.py", "benchmarks/accuracy.py"]:
        assert expected in programs
    assert "tests/gemma_mcp/sleeper.py" not in programs


def test_every_program_answers_help() -> None:
    """`python FILE --help` (or `python -m PACKAGE --help`) exits 0 and says how to use it, for every program
    of the repository: benchmarks, the preview, the MCP server, the policy pack, job and data scripts."""
    programs = program_files()
    done = subprocess.run(
        [sys.executable, "-c", _RUN_EACH, *programs],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        check=True,
    )
    results = json.loads(done.stdout.strip().splitlines()[-1])
    failed = {
        file: f"exit {code}, usage printed: {usage}: {text.strip()}"
        for file, (code, usage, text) in results.items()
        if code != 0 or not usage
    }
    assert failed == {}
    assert sorted(results) == programs
