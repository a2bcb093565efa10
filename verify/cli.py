"""`gemma-verify <subcommand>` (or `python -m verify ...`): one argparse parser, one module per subcommand.

Adding a subcommand is one row in ``_REGISTRARS``: its module exposes a ``register(subparsers) -> None``,
which adds its parser (usually with ``verify.endpoint.cli.add_target_arguments``) and sets ``handler``, a
function ``(args) -> exit code``. Only the module of the subcommand that runs is imported (the others pull in
aiohttp, Google's auth and the settings models: 0.65 s before a `verify health` could start); `--help`, no
subcommand or an unknown one registers them all, so argparse lists every choice as before.

Exit codes for every subcommand: 0 all checks pass, 1 a check or SLO failed, 2 a usage error or an
endpoint that is unreachable or refuses our credential.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from preview.closed_pipe import run_until_reader_leaves
from remote.text import escape_controls
from verify import UsageError
from verify.version import project_version

EXIT_USAGE = 2
CONSOLE_SCRIPT = "gemma-verify"  # [project.scripts] in pyproject.toml
EXIT_INTERRUPTED = 130


Register = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

# Each subcommand and the (module, function) that registers it, in the order `--help` lists them. A function
# that registers several subcommands (bench: bench, compare, bench-task, bench-collect) is named once per each.
_REGISTRARS: dict[str, tuple[str, str]] = {
    "health": ("verify.health.cli", "register"),
    "bench": ("verify.bench.cli", "register"),
    "compare": ("verify.bench.cli", "register"),
    "bench-task": ("verify.bench.cli", "register"),
    "bench-collect": ("verify.bench.cli", "register"),
    "preflight": ("verify.ops.cli", "register_preflight"),
    "status": ("verify.ops.cli", "register_status"),
    "logs": ("verify.ops.cli", "register_logs"),
    "promote": ("verify.promote.cli", "register"),
    "query": ("verify.query.cli", "register"),
    "metrics": ("verify.metrics.cli", "register"),
    "models": ("verify.models.cli", "register"),
    "memory": ("verify.memory.cli", "register"),
    "alerts": ("verify.alerts.cli", "register"),
    "adapters": ("verify.adapters.cli", "register"),
    "advise": ("verify.advise.cli", "register"),
    "calibrate": ("verify.advise.cli", "register_calibrate"),
}


# What `_command_of` answers for `gemma-verify --version`: no subcommand needs registering to print it.
VERSION_ONLY = "--version"


def two_word_alias(argv: Sequence[str]) -> list[str]:
    """``bench collect ...`` / ``bench task ...`` -> ``bench-collect ...`` / ``bench-task ...``."""
    words = list(argv)
    if len(words) >= 2 and words[0] == "bench" and words[1] in {"collect", "task"}:
        return [f"bench-{words[1]}", *words[2:]]
    return words


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every subcommand, with ``command``'s alone when it names one, or (``VERSION_ONLY``) none."""
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Post-deploy checks and benchmarks for a vLLM OpenAI-compatible endpoint.",
        epilog="exit codes: 0 pass, 1 a check or SLO failed, 2 usage error or endpoint unreachable/unauthorised",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {project_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    if command == VERSION_ONLY:
        wanted = []
    elif command in _REGISTRARS:
        wanted = [_REGISTRARS[command]]
    else:
        wanted = list(dict.fromkeys(_REGISTRARS.values()))
    for module, function in wanted:
        register = cast(
            "Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]",
            getattr(importlib.import_module(module), function),
        )
        register(subparsers)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand argv names first; ``VERSION_ONLY`` for a bare `--version`; else None (help lists all)."""
    if list(argv) == ["--version"]:
        return VERSION_ONLY
    return argv[0] if argv and not argv[0].startswith("-") else None


def _prog() -> str:
    """Messages name the command as the user typed it: the console script, or the module."""
    return CONSOLE_SCRIPT if Path(sys.argv[0]).name == CONSOLE_SCRIPT else "python -m verify"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run the subcommand's handler, and turn expected errors into messages and exit codes."""
    return run_until_reader_leaves(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    # argparse itself exits 2 on bad flags, naming them; `bench collect`/`bench task` are two-word names.
    words = two_word_alias(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command_of(words))
    args = parser.parse_args(words)
    try:
        code: int = args.handler(args)
    except UsageError as exc:
        # A message may quote what a server or a file said (a model name, a body): shown escaped.
        print(f"{parser.prog} {args.command}: error: {escape_controls(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{parser.prog} {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code
