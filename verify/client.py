"""The one HTTP client every subcommand uses, built once by the CLI and passed to each check.

Why these settings:
- ``httpx.Limits(max_connections=None, max_keepalive_connections=None)``: httpx's defaults cap a
  client at 100 connections and quietly queue the rest, which turns a 256-user benchmark into a
  100-user one with inflated latencies.
- The aiohttp transport (httpx-aiohttp) over a ``TCPConnector(limit=0)``: httpx's own transport
  stops scaling from about 64 concurrent streams on a small machine (encode/httpx#3215), while the
  same httpx API over aiohttp keeps up; ``limit=0`` because aiohttp's connector has its own default
  cap of 100 that the transport does not lift when httpx's limit is None.
- HTTP/1.1 only: what vLLM speaks, what Cloud Run's startup probes use, and what `vllm bench serve`
  measures with, so numbers compare.

It knows nothing of targets or credentials (verify/reach.py builds a command's client from those): a bench
worker process imports only this, and starts in a fraction of the time the stack-reading modules cost.
"""

from __future__ import annotations

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

from remote.tls import default_tls

DEFAULT_CONNECT_TIMEOUT_S = 10.0
# The longest silence tolerated inside one request (between two stream chunks, or before a
# non-streamed answer). A cold Cloud Run instance can take minutes, but readiness polling absorbs
# that; once /health answers, two minutes of silence means something is wrong.
DEFAULT_READ_TIMEOUT_S = 120.0

UNLIMITED = httpx.Limits(max_connections=None, max_keepalive_connections=None)


def default_timeout(
    *, connect_s: float = DEFAULT_CONNECT_TIMEOUT_S, read_s: float = DEFAULT_READ_TIMEOUT_S
) -> httpx.Timeout:
    """Connect and pool bounded by ``connect_s``; read and write by ``read_s`` (silence, not total)."""
    return httpx.Timeout(read_s, connect=connect_s, pool=connect_s)


def aiohttp_transport() -> AiohttpTransport:
    """httpx's API over aiohttp, without aiohttp's own 100-connection cap."""
    ssl_context = default_tls()

    def session() -> aiohttp.ClientSession:
        # Called lazily on the first request, i.e. inside the running event loop aiohttp requires.
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, ssl=ssl_context))

    # The transport builds a context of its own unless handed one (certifi's bundle, ~40 ms of CPU each time).
    return AiohttpTransport(verify=ssl_context, limits=UNLIMITED, client=session)


def make_client(
    base_url: str,
    auth: httpx.Auth | None,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    timeout: httpx.Timeout | None = None,
) -> httpx.AsyncClient:
    """An ``AsyncClient`` for ``base_url``; pass ``transport`` to use httpx's own or a mock one."""
    return httpx.AsyncClient(
        base_url=base_url,
        auth=auth,
        transport=transport if transport is not None else aiohttp_transport(),
        timeout=timeout if timeout is not None else default_timeout(),
        limits=UNLIMITED,
        http1=True,
        http2=False,
        follow_redirects=False,
        headers={"User-Agent": "gemma-serving-verify"},
    )
