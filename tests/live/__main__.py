"""``python -m tests.live install|serve``: build the vLLM CPU environment, or serve until Ctrl-C.

``install`` is what CI runs before ``make test-live`` (idempotent; the first build takes 2-4 minutes);
``serve [--port N]`` starts the same server the tests start, for a human to point verify at.
"""

from __future__ import annotations

import argparse
import sys
import time

from tests.live.server import Home, ServerError, install, start, stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.live", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("install", help="create $VLLM_CPU_HOME's vLLM environment and tiny model when missing")
    serve = commands.add_parser("serve", help="serve the tiny model on 127.0.0.1 until interrupted")
    serve.add_argument("--port", type=int, default=None, help="default: a free port")
    serve.add_argument("vllm_args", nargs="*", help="extra `vllm serve` arguments (after --)")
    args = parser.parse_args(argv)
    home = Home.from_env()
    try:
        if args.command == "install":
            install(home)
            print(f"vLLM CPU environment and model ready in {home.root}")
            return 0
        server = start(home, port=args.port, extra_args=tuple(args.vllm_args))
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"serving {server.model} at {server.base_url} (healthy after {server.started_in_s:.0f} s)")
    try:
        while server.process is not None and server.process.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        stop(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
