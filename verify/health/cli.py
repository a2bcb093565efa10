"""`verify health`: flags, wiring and the exit code (0 all pass, 1 a check failed, 2 could not check)."""

from __future__ import annotations

import argparse
import asyncio

from verify.argtypes import non_negative_number, positive_int
from verify.auth import auth_advice
from verify.client import client_for
from verify.health.checks import run_health
from verify.health.console import print_health, print_json, waiting_printer
from verify.health.report import DEFAULT_MAX_TOKENS, DEFAULT_WAIT_S, HealthOptions, HealthReport, ProgressCallback
from verify.target import Target, resolve_target
from verify.target.cli import add_target_arguments, target_options, timeout_options


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
    parser.set_defaults(handler=run_health_command)


def run_health_command(args: argparse.Namespace) -> int:
    where = target_options(args)
    timeouts = timeout_options(args)
    target = resolve_target(where)
    options = HealthOptions(
        wait_s=args.wait,
        max_tokens=args.max_tokens,
        deadline_s=timeouts.request_deadline_s(args.max_tokens),
        auth_help=auth_advice(target, api_key_env=args.api_key_env),
    )
    report = asyncio.run(_run(target, args, options, waiting_printer()))
    if args.json:
        print_json(report)
    else:
        print_health(report)
    return report.exit_code


async def _run(
    target: Target, args: argparse.Namespace, options: HealthOptions, on_waiting: ProgressCallback
) -> HealthReport:
    async with client_for(target, api_key_env=args.api_key_env, timeouts=timeout_options(args)) as client:
        return await run_health(client, target, options, on_waiting=on_waiting)
