"""How a command reaches its target: the HTTP client for a resolved target, with its credential and timeouts.

Why apart from verify/client.py: resolving a target and its credential reads stack outputs and Google's auth
libraries, which a bench worker process (it is handed a plain base URL and headers) never needs to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from verify.auth import IdTokenFetcher, auth_for_target
from verify.client import default_timeout, make_client
from verify.endpoint import EndpointOptions, Target, TimeoutOptions


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
