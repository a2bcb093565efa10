"""`verify models`: flags to ``ModelsOptions``, the bucket's checkpoints as a table or JSON, and the exit code.

The bucket is the stack's ``modelBucket`` output (`pulumi stack output`), or ``--bucket``; the paths the
stack serves (its model and drafter directories) come from its stack file, as the program reads it.
Exit codes: 0 every served path holds a complete import, 1 one does not, 2 could not read (no
credentials, no such bucket, the stack's outputs unreadable).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from remote.text import escape_controls
from verify.models.inventory import BucketInventory
from verify.models.run import BucketUnreadableError, ModelsOptions, list_models
from verify.numbers import readable

EXIT_CANNOT_READ = 2


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "models",
        help="what the model bucket holds: complete and partial imports, and the path the stack serves",
        description="List the stack's model bucket: every completed import (source, revision, files, bytes from "
        "its completion marker), imports without a marker or whose files changed, and which path the stack "
        "serves. Exit codes: 0 the served paths are complete, 1 one is not, 2 could not read.",
    )
    parser.add_argument("--stack", required=True, metavar="NAME", help="the stack (Pulumi.<NAME>.yaml)")
    parser.add_argument("--bucket", metavar="NAME", help="list this bucket instead of the stack's modelBucket output")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.set_defaults(handler=_models)


def _models(args: argparse.Namespace) -> int:
    try:
        found = list_models(str(args.stack), ModelsOptions(bucket=args.bucket))
    except BucketUnreadableError as error:
        print(escape_controls(f"models: {error}"), file=sys.stderr)
        return EXIT_CANNOT_READ
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        print_inventory(found, sys.stdout)
    return found.exit_code


def print_inventory(found: BucketInventory, out: TextIO) -> None:
    lines = [f"gs://{found.bucket}"]
    for checkpoint in found.checkpoints:
        origin = f"{checkpoint.source}@{checkpoint.revision}" if checkpoint.source else "-"
        serving = f"  <- served by {', '.join(checkpoint.served_by)}" if checkpoint.served_by else ""
        lines.append(
            f"  {checkpoint.path or '(bucket root)'}: {checkpoint.state.value}, {origin}, {checkpoint.files} files, "
            f"{readable(checkpoint.bytes / 2**30)} GiB"
            + (f", completed {checkpoint.completed_at}" if checkpoint.completed_at else "")
            + serving
        )
        lines.extend(f"      {problem}" for problem in checkpoint.problems)
    if not found.checkpoints:
        lines.append("  (empty)")
    # Object names, paths and the marker's fields are the bucket's text: one line each, escaped.
    out.write("".join(escape_controls(line, keep_newlines=False) + "\n" for line in lines))
