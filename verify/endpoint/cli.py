"""The target, authentication and timeout flags every endpoint subcommand shares, and their typed options.

The argparse side of ``verify.endpoint``: each subcommand adds these flags with ``add_target_arguments``
(or ``add_timeout_arguments``) and turns what was parsed into ``TargetOptions`` / ``TimeoutOptions`` with
``target_options`` / ``timeout_options``; nothing past this module sees the parsed flags.
"""

from __future__ import annotations

import argparse

from verify.argtypes import env_var_name, positive_number
from verify.client import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_READ_TIMEOUT_S
from verify.endpoint import (
    DEFAULT_API_KEY_ENV,
    AuthKind,
    TargetOptions,
    TimeoutOptions,
)
from verify.streaming import SLOWEST_HEALTHY_TOKEN_S

AUTO = "auto"


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every subcommand that talks to an endpoint shares (health, bench)."""
    where = parser.add_argument_group("target (one of --stack or --url)")
    exclusive = where.add_mutually_exclusive_group(required=True)
    exclusive.add_argument(
        "--stack",
        metavar="NAME",
        help="read the endpoint from `pulumi stack output --json --stack NAME` (run from the project)",
    )
    exclusive.add_argument("--url", metavar="URL", help="base URL of a vLLM OpenAI-compatible server")
    where.add_argument(
        "--allow-private-url",
        action="store_true",
        help="let --url name a private or link-local address (your own server over a VPN); the metadata server "
        "stays refused, loopback is always allowed (docs/verifying.md)",
    )
    where.add_argument(
        "--model",
        metavar="NAME",
        help="served model name clients use (default: the stack's servedModelName, or the one name /v1/models lists)",
    )
    auth = parser.add_argument_group("authentication")
    auth.add_argument(
        "--auth",
        choices=[kind.value for kind in (AuthKind.GOOGLE, AuthKind.API_KEY, AuthKind.NONE)] + [AUTO],
        default=AUTO,
        help="auto: the stack's authKind; for --url, google for https://*.run.app, api-key when "
        "--api-key-env is given, else none",
    )
    auth.add_argument(
        "--audience",
        metavar="URL",
        help="with google auth, the service URL the ID token is for when it differs from the URL called "
        "(e.g. a tagged revision URL; default: the URL's scheme and host)",
    )
    auth.add_argument(
        "--api-key-env",
        type=env_var_name("--api-key-env"),
        metavar="VAR",
        help=f"environment variable holding the vLLM --api-key (default with api-key auth: {DEFAULT_API_KEY_ENV})",
    )
    add_timeout_arguments(parser)


def add_timeout_arguments(parser: argparse.ArgumentParser) -> None:
    """How long a connection, a silence and a whole request may take (every command that sends requests,
    including the bench job's task, which finds its endpoint in its environment)."""
    limits = parser.add_argument_group("timeouts")
    limits.add_argument(
        "--connect-timeout",
        type=positive_number("--connect-timeout", "seconds"),
        default=DEFAULT_CONNECT_TIMEOUT_S,
        metavar="S",
        help=f"seconds to open a connection (default {DEFAULT_CONNECT_TIMEOUT_S:g})",
    )
    limits.add_argument(
        "--timeout",
        type=positive_number("--timeout", "seconds"),
        default=DEFAULT_READ_TIMEOUT_S,
        metavar="S",
        help=f"longest silence within one request, e.g. between stream chunks (default {DEFAULT_READ_TIMEOUT_S:g})",
    )
    limits.add_argument(
        "--deadline",
        type=positive_number("--deadline", "seconds"),
        metavar="S",
        help="longest one request may take in all, however steadily the server answers (default: --timeout "
        f"+ {SLOWEST_HEALTHY_TOKEN_S:g} s per output token asked for)",
    )


def target_options(args: argparse.Namespace) -> TargetOptions:
    """The flags of ``add_target_arguments`` as options (``--auth auto`` is ``auth=None``)."""
    auth = str(args.auth)
    return TargetOptions(
        stack=args.stack,
        url=args.url,
        model=args.model,
        auth=None if auth == AUTO else AuthKind(auth),
        audience=args.audience,
        api_key_env=args.api_key_env,
        allow_private_url=bool(getattr(args, "allow_private_url", False)),
    )


def timeout_options(args: argparse.Namespace) -> TimeoutOptions:
    """The flags of ``add_timeout_arguments`` as options."""
    return TimeoutOptions(connect_s=args.connect_timeout, read_s=args.timeout, deadline_s=args.deadline)
