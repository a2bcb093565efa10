"""`gemma-verify preflight|status|logs --stack NAME`: flags, wiring and exit codes, nothing else.

The commands are functions that return typed reports (verify/ops/commands.py: `preflight`, `status`,
`logs`), so other callers (an MCP server) use them without argparse; this module maps flags onto their
options and renders.

Exit codes: preflight 0 all clear, 1 a blocker, 2 could not check; status 0 ready, 1 failed / not
deployed / not ready yet (or --watch timed out), 2 could not ask; logs 0 read and nothing recognised,
1 a known failure recognised, 2 could not read.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeVar

import pydantic
from rich.text import Text

from verify.argtypes import positive_int, positive_number
from verify.ops import commands, tpu_availability
from verify.ops.commands import (
    DEFAULT_LOGS_SINCE_S,
    DEFAULT_WATCH_INTERVAL_S,
    DEFAULT_WATCH_TIMEOUT_S,
    LogsOptions,
    StatusOptions,
)
from verify.ops.logs import DEFAULT_LIMIT, parse_since
from verify.ops.render import (
    print_json,
    print_logs,
    print_preflight,
    print_status,
    status_change_printer,
)
from verify.ops.stack import load_ops_stack
from verify.ops.status import StatusReport

_MAX_ZONES = tpu_availability.MAX_ZONES
PREFLIGHT_DESCRIPTION = f"""\
Read-only checks of a stack's project before `pulumi up` (nothing is enabled, requested or created):

  APIs         every API the stack needs is enabled, or you may enable it (services:batchGet)
  permissions  your account holds what `pulumi up` needs (testIamPermissions)
  quotas       Cloud Run: the stack's GPUs (with or without zonal redundancy), CPU and memory in its
               region, times maxInstances; GKE: the node pools' accelerators at maxNodes
  TPU zones    for a TPU stack's slice, in EVERY zone that offers its generation (the stack's placements,
               the zones serving/tpu_offers.py lists and the zones the project's quota names in those regions,
               at most {_MAX_ZONES}) and in every tier (flex-start, spot, guaranteed): the quota limit and
               usage, whether the zone lists the slice and the runtime version; ranked, grantable first,
               the stack's own placements first

Exit codes: 0 all clear, 1 a blocker found, 2 could not check (no credentials, an API disabled or
unreachable).
"""


def register_preflight(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "preflight",
        help="before `pulumi up`: APIs, permissions, quotas and (TPU) quota in every zone and tier, ranked",
        description=PREFLIGHT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _stack_arguments(parser)
    parser.set_defaults(handler=_preflight)


def register_status(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="after `pulumi up`: the deployment's state (Cloud Run revision or TPU queued resource/node)",
        description="Exit codes: 0 ready, 1 failed, not deployed or not ready yet (or --watch timed out), "
        "2 could not ask Google.",
    )
    _stack_arguments(parser)
    parser.add_argument("--watch", action="store_true", help="follow the rollout until it is ready or has failed")
    parser.add_argument(
        "--interval",
        type=positive_number("--interval", "seconds"),
        default=DEFAULT_WATCH_INTERVAL_S,
        metavar="S",
        help=f"seconds between looks with --watch (default {DEFAULT_WATCH_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_number("--timeout", "seconds"),
        default=DEFAULT_WATCH_TIMEOUT_S,
        metavar="S",
        help=f"give up watching after S seconds (default {DEFAULT_WATCH_TIMEOUT_S:g}: a queued TPU can wait hours)",
    )
    parser.set_defaults(handler=_status)


def register_logs(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "logs",
        help="the vLLM container's recent Cloud Logging lines, with known failures explained",
        description="Exit codes: 0 read, no known failure; 1 a known failure recognised; 2 could not read.",
    )
    _stack_arguments(parser)
    parser.add_argument(
        "--since",
        type=_since,
        default=DEFAULT_LOGS_SINCE_S,
        metavar="AGE",
        help="how far back (30m, 1h, 2d; default 1h)",
    )
    parser.add_argument("--errors", action="store_true", help="only errors and recognised failures")
    parser.add_argument(
        "--limit",
        type=positive_int("--limit"),
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N newest entries (default {DEFAULT_LIMIT})",
    )
    parser.set_defaults(handler=_logs)


def _stack_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stack", required=True, metavar="NAME", help="the stack file Pulumi.NAME.yaml (run from the project)"
    )
    parser.add_argument("--project", metavar="ID", help="the Google Cloud project (default: the stack's gcp:project)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")


def _since(value: str) -> int:
    try:
        return parse_since(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


Report = TypeVar("Report", bound=pydantic.BaseModel)


def _show(report: Report, args: argparse.Namespace, table: Callable[[Report], None]) -> None:
    if args.json:
        print_json(report)
    else:
        table(report)


def _preflight(args: argparse.Namespace) -> int:
    report = commands.preflight(load_ops_stack(args.stack, project=args.project))
    _show(report, args, print_preflight)
    return report.exit_code


def _status(args: argparse.Namespace) -> int:
    stack = load_ops_stack(args.stack, project=args.project)
    options = StatusOptions(watch=args.watch, interval_s=args.interval, timeout_s=args.timeout)
    on_change = None
    if args.watch:
        console = status_change_printer()

        def on_change(report: StatusReport) -> None:
            console.print(Text(f"{report.state.value}: {report.summary}"))

    report = commands.status(stack, options, on_change=on_change)
    _show(report, args, print_status)
    return report.exit_code


def _logs(args: argparse.Namespace) -> int:
    stack = load_ops_stack(args.stack, project=args.project)
    report = commands.logs(stack, LogsOptions(since_s=args.since, errors_only=args.errors, limit=args.limit))
    _show(report, args, print_logs)
    return report.exit_code
