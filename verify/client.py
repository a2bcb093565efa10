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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

from remote.tls import default_tls
from verify.auth import IdTokenFetcher, auth_for_target
from verify.target import DEFAULT_CONNECT_TIMEOUT_S, DEFAULT_READ_TIMEOUT_S, EndpointOptions, Target, TimeoutOptions

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


def client_for(
    target: Target,
    *,
    api_key_env: str | None,
    timeouts: TimeoutOptions,
    transport: httpx.AsyncBaseTransport | None = None,
    env: Mapping[str, str] | None = None,
    fetch_id_token: IdTokenFetcher | None = None,
) -> httpx.AsyncClient:
    """The client for a resolved target: its credential (``api_key_env`` names the variable holding an API
    key) and ``timeouts``.

    Raises ``UsageError`` (exit 2) before any request when the credential's source is missing.
    """
    auth = auth_for_target(target, api_key_env=api_key_env, env=env, fetch_id_token=fetch_id_token)
    return make_client(target.base_url, auth, transport=transport, timeout=http_timeout(timeouts))


@dataclass(frozen=True)
class Reach:
    """How a command reaches its target besides its options: the transport, the environment an API key is
    read from and the ID-token source. Tests pass fakes; None: the real ones."""

    transport: httpx.AsyncBaseTransport | None = None
    env: Mapping[str, str] | None = None
    fetch_id_token: IdTokenFetcher | None = None


def endpoint_client(target: Target, options: EndpointOptions, reach: Reach | None = None) -> httpx.AsyncClient:
    """``client_for`` with a command's options (its timeouts and API-key variable) and ``reach``."""
    how = reach or Reach()
    return client_for(
        target,
        api_key_env=options.api_key_env,
        timeouts=options.timeouts,
        transport=how.transport,
        env=how.env,
        fetch_id_token=how.fetch_id_token,
    )


def http_timeout(timeouts: TimeoutOptions) -> httpx.Timeout:
    """httpx's timeouts for ``timeouts`` (the whole-request deadline is enforced per request, not here)."""
    return default_timeout(connect_s=timeouts.connect_s, read_s=timeouts.read_s)
