"""One run that puts load on an endpoint at a time, per server: the caps hold for the server, not per call.

Why: each `bench` call is capped (users, requests, wall time), but three calls in parallel put three
times the cap in flight (384 requests against the 128-user cap). A second load run while one is going
is refused at once, naming what runs, rather than queued (a queued call would hold the agent waiting).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mcp.server.mcpserver.exceptions import ToolError


class LoadSlot:
    def __init__(self) -> None:
        self._holder: str | None = None

    @contextlib.contextmanager
    def hold(self, what: str) -> Iterator[None]:
        if self._holder is not None:
            raise ToolError(
                f"refused: {self._holder} is still running on this server, and only one run that loads an "
                "endpoint may run at a time; wait for its result (or cancel that call), then call again"
            )
        self._holder = what
        try:
            yield
        finally:
            self._holder = None
