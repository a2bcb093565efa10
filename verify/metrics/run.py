"""`verify metrics` as a function: ``run_metrics(target, MetricsOptions) -> MetricsReport``.

One read of vLLM's /metrics (since the server started), or two ``window_s`` apart (that window only); raises
``MetricsReadError`` when the endpoint cannot be read (``unreachable``: exit 2) or does not serve vLLM's
metrics (exit 1). verify/metrics/cli.py maps flags onto the options and prints.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import httpx
import pydantic

from verify.auth import IdTokenFetcher
from verify.client import client_for
from verify.metrics.reading import MetricsReport, Sleep, read_metrics
from verify.target import Target, TimeoutOptions

# A window longer than this is a monitoring job, not a command someone waits for.
MAX_WINDOW_S = 3600.0


class MetricsOptions(pydantic.BaseModel):
    """``window_s`` None: one read; else two reads that far apart."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")

    window_s: float | None = pydantic.Field(default=None, gt=0, le=MAX_WINDOW_S)
    timeouts: TimeoutOptions = TimeoutOptions()
    # The environment variable holding vLLM's --api-key (None: VLLM_API_KEY with api-key auth).
    api_key_env: str | None = None


def run_metrics(
    target: Target,
    options: MetricsOptions,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    env: Mapping[str, str] | None = None,
    fetch_id_token: IdTokenFetcher | None = None,
    sleep: Sleep = asyncio.sleep,
) -> MetricsReport:
    """Read ``target``'s metrics for the target's model. Runs its own event loop."""

    async def read() -> MetricsReport:
        async with client_for(
            target,
            api_key_env=options.api_key_env,
            timeouts=options.timeouts,
            transport=transport,
            env=env,
            fetch_id_token=fetch_id_token,
        ) as client:
            return await read_metrics(
                client, target.base_url, model=target.model, window_s=options.window_s, sleep=sleep
            )

    return asyncio.run(read())
