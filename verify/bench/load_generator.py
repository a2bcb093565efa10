"""Make sure the load generator is not the bottleneck: the transport and the file-descriptor limit.

Why it matters: with httpx's own transport the client, not the server, sets the numbers from about
64 concurrent streams up (encode/httpx#3215), and a default soft limit of 1024 open files makes a
2048-user cell fail on the client with "too many open files". benchmarks/client_overhead.py shows
the difference between the transports on this machine.
"""

from __future__ import annotations

import enum

import httpx

from remote.tls import default_tls
from verify.client import UNLIMITED, aiohttp_transport

# Sockets per user plus headroom for the interpreter's own files.
FD_HEADROOM = 256


class TransportKind(enum.StrEnum):
    """``--transport``: aiohttp (default, keeps up at thousands of streams) or httpx's own."""

    AIOHTTP = "aiohttp"
    HTTPX = "httpx"


def make_transport(kind: TransportKind) -> httpx.AsyncBaseTransport:
    if kind is TransportKind.AIOHTTP:
        return aiohttp_transport()
    return httpx.AsyncHTTPTransport(verify=default_tls(), limits=UNLIMITED, http1=True, http2=False, retries=0)


def raise_fd_limit(concurrency: int) -> str | None:
    """Lift the soft open-files limit towards the hard one when ``concurrency`` needs it.

    Returns a warning when the limit stays too low (the user must raise the hard limit), else None.
    """
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:
        return None
    needed = concurrency + FD_HEADROOM
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, max(needed, soft))
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            target = soft
        if target < needed:
            return (
                f"the open-files limit is {target} but concurrency {concurrency} needs about {needed}; "
                "raise it (ulimit -n) or the client will fail with 'too many open files'"
            )
    return None
