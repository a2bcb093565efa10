"""`gemma-verify <subcommand>` (or `python -m verify ...`): one argparse parser, one module per subcommand.

Adding a subcommand is one import and one call in ``build_parser``: the module exposes
``register(subparsers) -> None``, which adds its parser (usually with
``verify.target.cli.add_target_arguments``) and sets ``handler``, a function ``(args) -> exit code``.

Exit codes for every subcommand: 0 all checks pass, 1 a check or SLO failed, 2 a usage error or an
endpoint that is unreachable or refuses our credential.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from preview.closed_pipe import run_until_reader_leaves
from verify import UsageError
from verify.alerts import cli as alerts_cli
from verify.bench import cli as bench_cli
from verify.bench.cli import two_word_alias
from verify.health import cli as health_cli
from verify.memory import cli as memory_cli
from verify.metrics import cli as metrics_cli
from verify.models import cli as models_cli
from verify.ops import cli as ops_cli
from verify.promote import cli as promote_cli
from verify.query import cli as query_cli
from verify.version import project_version

EXIT_USAGE = 2
CONSOLE_SCRIPT = "gemma-verify"  # [project.scripts] in pyproject.toml
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Post-deploy checks and benchmarks for a vLLM OpenAI-compatible endpoint.",
        epilog="exit codes: 0 pass, 1 a check or SLO failed, 2 usage error or endpoint unreachable/unauthorised",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {project_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    health_cli.register(subparsers)
    bench_cli.register(subparsers)
    ops_cli.register_preflight(subparsers)
    ops_cli.register_status(subparsers)
    ops_cli.register_logs(subparsers)
    promote_cli.register(subparsers)
    query_cli.register(subparsers)
    metrics_cli.register(subparsers)
    models_cli.register(subparsers)
    memory_cli.register(subparsers)
    alerts_cli.register(subparsers)
    return parser


def _prog() -> str:
    """Messages name the command as the user typed it: the console script, or the module."""
    return CONSOLE_SCRIPT if Path(sys.argv[0]).name == CONSOLE_SCRIPT else "python -m verify"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, run the subcommand's handler, and turn expected errors into messages and exit codes."""
    return run_until_reader_leaves(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    # argparse itself exits 2 on bad flags, naming them; `bench collect`/`bench task` are two-word names.
    args = parser.parse_args(two_word_alias(sys.argv[1:] if argv is None else argv))
    try:
        code: int = args.handler(args)
    except UsageError as exc:
        print(f"{parser.prog} {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{parser.prog} {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code
