"""`python -m gemma_mcp [--allow-changes] [--http --port N]`: serve this project's tools to an agent.

stdio by default (the agent CLI starts the server); `--http` serves streamable HTTP on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import atexit
import signal
from collections.abc import Sequence
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from gemma_mcp.context import ServerContext
from gemma_mcp.promotion import POLICY_PACK_DIR
from gemma_mcp.redact import Redactor
from gemma_mcp.runner import SubprocessRunner, kill_all
from gemma_mcp.server import build_server
from preview.stack_file import StackFileError, project_root
from verify.pulumi_gateway import AutomationGateway, missing_cli_message

LOOPBACK = "127.0.0.1"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gemma_mcp", description=__doc__)
    parser.add_argument(
        "--allow-changes",
        action="store_true",
        help="also offer deploy, destroy and run_weight_import (each still needs confirm=<stack>)",
    )
    parser.add_argument(
        "--allow-any-url",
        action="store_true",
        help="let health and bench call any URL (never the metadata server or link-local addresses); by default "
        "only loopback and this project's stacks' endpoints",
    )
    parser.add_argument(
        "--no-policy-pack",
        action="store_true",
        help="run `pulumi up` (deploy, weight import, promote) without the policy pack in policy/ (not advised)",
    )
    parser.add_argument("--http", action="store_true", help=f"serve streamable HTTP on {LOOPBACK} instead of stdio")
    parser.add_argument("--port", type=int, default=8765, help="port for --http (default 8765)")
    parser.add_argument(
        "--root", type=Path, default=None, help="project root (default: $GEMMA_SERVING_ROOT, else this checkout)"
    )
    args = parser.parse_args(argv)
    try:
        root = project_root(args.root)
    except StackFileError as error:
        parser.error(str(error))
    ctx = ServerContext(
        root=root,
        run_module=SubprocessRunner(root),
        pulumi=AutomationGateway(
            root,
            policy_packs=() if args.no_policy_pack else (str(root / POLICY_PACK_DIR),),
            error=ToolError,
            missing_cli=missing_cli_message("this tool needs"),
        ),
        redactor=Redactor.from_environment(),
        allow_changes=args.allow_changes,
        allow_any_url=args.allow_any_url,
        policy_pack=not args.no_policy_pack,
    )
    server = build_server(ctx)
    # No child outlives the server: its process groups are killed on every way out (stdin closed by a
    # disconnecting client, SIGTERM, Ctrl-C, an exception); SIGKILL of the server is the kernel's (runner).
    atexit.register(kill_all)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        if args.http:
            server.run("streamable-http", host=LOOPBACK, port=args.port)
        else:
            server.run("stdio")
    finally:
        kill_all()
    return 0


def _exit_on_sigterm(_signum: int, _frame: object) -> None:
    raise SystemExit(143)


if __name__ == "__main__":
    raise SystemExit(main())
