"""One TLS context per process, shared by every HTTPS client the project opens.

Why: building a context loads certifi's CA bundle, some 20 ms of CPU; httpx builds one for each client and
each transport it is not handed one for, and a command (a test run much more so) opens many. A context is
built to be shared: clients, threads and event loops may all wrap their sockets with the same one.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def default_tls() -> ssl.SSLContext:
    """What httpx uses by default: certifi's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR when one is set."""
    return httpx.create_ssl_context()
