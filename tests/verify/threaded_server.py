"""Serve a standard-library HTTP server from a thread, and stop it without waiting.

Why not ``serve_forever`` and ``shutdown``: ``shutdown`` returns only once the serving loop wakes from its next
poll (``poll_interval``, 0.5 s by default), a wait every test that starts a fake Google or Cloud Run API paid on
the way out (hundreds of tests). This loop also watches a socket that ``stop`` writes to, so it ends at once.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import socketserver
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def serving_in_thread(server: socketserver.TCPServer) -> Iterator[None]:
    """Answer ``server``'s requests in a thread while the block runs; close it when the block ends."""
    wake, wake_up = socket.socketpair()

    def loop() -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(server.fileno(), selectors.EVENT_READ, "request")
            selector.register(wake, selectors.EVENT_READ, "stop")
            while True:
                ready = {key.data for key, _events in selector.select()}
                if "stop" in ready:
                    return
                server.handle_request()  # a connection is waiting: accepted without blocking

    thread = threading.Thread(target=loop, name="threaded-server", daemon=True)
    thread.start()
    try:
        yield
    finally:
        wake_up.send(b"x")
        thread.join(10)
        wake.close()
        wake_up.close()
        server.server_close()
