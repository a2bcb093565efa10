"""`verify memory --stack NAME`: vLLM's start-up memory lines beside the plan; ``--save`` calibrates.

Exit codes: 0 the lines were found (and saved, with --save); 1 none found in --since (the server has not
started, or started longer ago); 2 could not read the logs, or --save without the lines it needs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from remote.text import escape_controls
from verify import UsageError
from verify.memory.layout import MemoryLayout
from verify.memory.run import LogsUnreadableError, MemoryOptions, read_memory, save_calibration
from verify.numbers import readable, signed_percent
from verify.ops.logs import parse_since
from verify.ops.stack import load_ops_stack
from verify.stack_settings import load_stack_file


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "memory",
        help="vLLM's start-up memory lines (weights, KV cache) beside the planner's prediction",
        description="Read vLLM's start-up memory lines from Cloud Logging (weights loaded, available KV cache "
        "memory, KV cache size in tokens, maximum concurrency) for the stack's newest start-up, beside the "
        "planner's prediction with the error. --save writes them as a calibration record the planner then "
        "uses for this accelerator and checkpoint. Exit codes: 0 found, 1 no lines found, 2 could not read.",
    )
    parser.add_argument("--stack", required=True, metavar="NAME", help="the stack (Pulumi.<NAME>.yaml)")
    parser.add_argument("--project", metavar="ID", help="the Google Cloud project (default: the stack's gcp:project)")
    parser.add_argument("--since", default="7d", metavar="AGE", help="look this far back (30m, 12h, 7d; default 7d)")
    parser.add_argument(
        "--save", action="store_true", help="write the lines as a calibration record (calibration/<accel>/...)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.set_defaults(handler=_memory)


def _memory(args: argparse.Namespace) -> int:
    try:
        options = MemoryOptions(since_s=parse_since(str(args.since)))
    except ValueError as error:
        raise UsageError(str(error)) from None
    stack = load_ops_stack(str(args.stack), project=args.project)
    loaded = load_stack_file(str(args.stack))
    try:
        layout = read_memory(stack, loaded, options)
    except LogsUnreadableError as error:
        print(escape_controls(f"memory: {error}"), file=sys.stderr)
        return 2
    if args.json:
        print(layout.model_dump_json(indent=2))
    else:
        print_layout(layout, sys.stdout)
    if args.save and layout.exit_code == 0:
        saved = save_calibration(layout, loaded)
        record = saved.record
        print(f"saved {saved.shown}: the planner now uses these figures for {record.accelerator} + {record.checkpoint}")
        return 0 if saved.path.is_file() else 2
    return layout.exit_code


def print_layout(layout: MemoryLayout, out: TextIO) -> None:
    lines = [f"memory of {layout.stack} ({layout.accelerator}, {layout.checkpoint})"]
    if not layout.measured.lines:
        lines.append("no vLLM start-up memory lines found in the logs (not started yet, or before --since)")
    else:
        lines.append(f"from {layout.source}, start-up at {layout.first_line_at}")
        lines.append(f"  {'':<40} {'planned':>12} {'measured':>12} {'error':>8}")
        for row in layout.rows:
            error = "-" if row.error is None else signed_percent(row.error)
            measured = "not logged" if row.measured is None else readable(row.measured)
            lines.append(
                f"  {row.quantity + ' (' + row.unit + ')':<40} {readable(row.planned):>12} {measured:>12} {error:>8}"
            )
        lines.extend(f"  | {line}" for line in layout.measured.lines)
    if layout.plan_note:
        lines.append(layout.plan_note)
    # The log lines, their source and the plan's note: one escaped line each (a log line is anyone's text).
    out.write("".join(escape_controls(line, keep_newlines=False) + "\n" for line in lines))
