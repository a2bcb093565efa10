"""The readiness line of `verify health` for `verify status`: one `/health` poll, never a wait.

Why reuse `verify.health.check_readiness` (with `wait_s=0`): the same classification of answers
(503 still starting, 401/403 credentials, 404 not vLLM, refused/timeouts) and the same auth as health.
"""

from __future__ import annotations

import asyncio

import httpx

from remote.tls import default_tls
from verify.auth import AuthError, auth_for_target
from verify.client import default_timeout, make_client
from verify.endpoint import AuthKind, Target
from verify.health import CheckOptions, check_readiness
from verify.ops.status import Readiness


def probe_readiness(endpoint: str, auth: str) -> Readiness:
    """One `/health` poll against `endpoint` with a Google ID token (Cloud Run) or nothing (TPU)."""
    target = Target(base_url=endpoint.rstrip("/"), model=None, auth_kind=AuthKind(auth), source="status")
    try:
        credential = auth_for_target(target, api_key_env=None)
    except AuthError as error:
        return Readiness(status="unauthorised", summary=str(error))
    return asyncio.run(_poll(target, credential))


async def _poll(target: Target, auth: httpx.Auth | None) -> Readiness:
    transport = httpx.AsyncHTTPTransport(verify=default_tls())  # one request: httpx's own transport is enough
    async with make_client(target.base_url, auth, transport=transport, timeout=default_timeout(read_s=15.0)) as client:
        result = await check_readiness(client, CheckOptions(wait_s=0.0, poll_timeout_s=15.0))
    return Readiness(status=result.status.value, summary=result.summary)
