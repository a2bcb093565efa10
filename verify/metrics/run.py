"""`verify metrics` as a function: ``run_metrics(target, MetricsOptions) -> MetricsReport``.

One read of vLLM's /metrics (since the server started), or two ``window_s`` apart (that window only); raises
``MetricsReadError`` when the endpoint cannot be read (``unreachable``: exit 2) or does not serve vLLM's
metrics (exit 1). verify/metrics/cli.py maps flags onto the options and prints.
"""

from __future__ import annotations

import asyncio

import pydantic

from verify.endpoint import EndpointOptions, Target
from verify.metrics.reading import MetricsReport, Sleep, read_metrics
from verify.reach import Reach, endpoint_client

# A window longer than this is a monitoring job, not a command someone waits for.
MAX_WINDOW_S = 3600.0


class MetricsOptions(EndpointOptions):
    """``window_s`` None: one read; else two reads that far apart."""

    window_s: float | None = pydantic.Field(default=None, gt=0, le=MAX_WINDOW_S)


def run_metrics(
    target: Target,
    options: MetricsOptions,
    *,
    reach: Reach | None = None,
    sleep: Sleep = asyncio.sleep,
) -> MetricsReport:
    """Read ``target``'s metrics for the target's model. Runs its own event loop."""

    async def read() -> MetricsReport:
        async with endpoint_client(target, options, reach) as client:
            return await read_metrics(
                client, target.base_url, model=target.model, window_s=options.window_s, sleep=sleep
            )

    return asyncio.run(read())
