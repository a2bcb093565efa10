"""`verify health`: flags to ``HealthOptions``, the printed report and the exit code (0 all pass, 1 a check
failed, 2 could not check). The command itself is ``verify.health.run.run_health``."""

from __future__ import annotations

import argparse

from verify import UsageError
from verify.argtypes import non_negative_number, positive_int, positive_number
from verify.endpoint import resolve_target
from verify.endpoint.cli import add_target_arguments, target_options, timeout_options
from verify.health.console import print_health, print_json, waiting_printer
from verify.health.quality import QualityOptions
from verify.health.report import DEFAULT_MAX_TOKENS, DEFAULT_WAIT_S, HealthOptions
from verify.health.run import run_health


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``verify health`` to the CLI."""
    parser = subparsers.add_parser(
        "health",
        help="check that an endpoint is ready and really serves the intended model",
        description="Post-deploy checks: readiness, served model, version, chat (plain and streamed), "
        "metrics. Exit codes: 0 all pass, 1 a check failed, 2 usage error or endpoint "
        "unreachable/unauthorised.",
    )
    add_target_arguments(parser)
    parser.add_argument(
        "--wait",
        type=non_negative_number("--wait", "seconds"),
        default=DEFAULT_WAIT_S,
        metavar="S",
        help=f"how long to wait for /health to answer 200 (default {DEFAULT_WAIT_S:g}: cold starts load the model)",
    )
    parser.add_argument(
        "--max-tokens",
        type=positive_int("--max-tokens"),
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help=f"max_tokens of the chat checks (default {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    add_quality_arguments(parser)
    parser.set_defaults(handler=run_health_command)


def add_quality_arguments(parser: argparse.ArgumentParser) -> None:
    """``--quality`` and what the serving configuration promises (shared by ``health`` and ``promote``)."""
    group = parser.add_argument_group("quality gate (verify/health/quality.py)")
    group.add_argument(
        "--quality",
        action="store_true",
        help="also check that answers are right: exact arithmetic and JSON, and the checks below; fails closed",
    )
    group.add_argument(
        "--expect-tool-calls",
        action="store_true",
        help="the server runs a tool-call parser: a declared tool must be called with arguments matching its schema",
    )
    group.add_argument(
        "--expect-reasoning",
        action="store_true",
        help="the server runs a reasoning parser: answers must carry their reasoning apart",
    )
    group.add_argument(
        "--min-acceptance",
        type=positive_number("--min-acceptance"),
        metavar="F",
        help="speculative decoding is on: its draft acceptance rate must be at least F (e.g. 0.3)",
    )
    group.add_argument(
        "--needle-tokens",
        type=positive_int("--needle-tokens", minimum=64),
        metavar="N",
        help="recall a code hidden in N tokens of text (the stack's max length, e.g. max_model_len - 128)",
    )


def quality_options(args: argparse.Namespace) -> QualityOptions | None:
    """The quality flags as options; None without ``--quality`` (the other flags then say nothing alone)."""
    if not args.quality:
        if args.expect_tool_calls or args.expect_reasoning or args.needle_tokens:
            raise UsageError("--expect-tool-calls, --expect-reasoning and --needle-tokens need --quality")
        return None
    return QualityOptions(
        expect_tool_calls=args.expect_tool_calls,
        expect_reasoning=args.expect_reasoning,
        needle_tokens=args.needle_tokens,
    )


def health_options(args: argparse.Namespace) -> HealthOptions:
    """``verify health``'s flags as options (the target flags are resolved apart)."""
    return HealthOptions(
        wait_s=args.wait,
        max_tokens=args.max_tokens,
        timeouts=timeout_options(args),
        api_key_env=args.api_key_env,
        quality=quality_options(args),
    )


def run_health_command(args: argparse.Namespace) -> int:
    target = resolve_target(target_options(args))
    report = run_health(target, health_options(args), on_waiting=waiting_printer())
    if args.json:
        print_json(report)
    else:
        print_health(report)
    return report.exit_code
