"""Which URLs the `health` and `bench` tools may be pointed at.

Why a check at all: an agent can be talked into anything, and these tools send requests (with a Google ID
token minted for the URL's audience, or the API key) from the user's machine. So:

- never the metadata server or a link-local address (169.254.0.0/16, fe80::/10): from a VM or Cloud
  Shell that is where credentials are handed out; nor a URL with `user:password@` in it;
- by default only loopback and the endpoints this project's stacks export (their `endpoint` and
  `candidateUrl` outputs, read from Pulumi's state), so neither a private host on the user's network nor
  a stranger's `*.run.app` service (which would receive an ID token) can be reached;
- a server started with `--allow-any-url` drops the allow-list, never the first rule (names are resolved
  and every address checked).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from mcp.server.mcpserver.exceptions import ToolError

METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "metadata.goog"})
LOOPBACK_NAMES = frozenset({"localhost"})

Resolve = Callable[[str], list[str]]


def _resolve(host: str) -> list[str]:
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except OSError:
        return []


def _forbidden(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    target = mapped or address
    return target.is_link_local or target.is_unspecified or target.is_multicast


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    address = _address(host)
    return host.lower() in LOOPBACK_NAMES if address is None else address.is_loopback


def check_url(
    url: str,
    *,
    stack_endpoints: Callable[[], Iterable[str]],
    allow_any: bool = False,
    resolve: Resolve = _resolve,
) -> str:
    """The URL unchanged when the tools may call it; otherwise a ToolError saying why and what is allowed."""
    parts = urlsplit(url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return url  # verify refuses it with its own message (exit 2), before any request
    if parts.username is not None or parts.password is not None:
        raise ToolError("url: a URL with user:password@ in it is refused; give the endpoint's base URL only")
    host = parts.hostname.rstrip(".").lower()
    address = _address(host)
    if host in METADATA_HOSTS or (address is not None and _forbidden(address)):
        raise ToolError(f"url: {host} is the metadata server or a link-local address; refused")
    if is_loopback(host):
        return url
    if allow_any:
        addresses = [_address(found) for found in resolve(host)] if address is None else [address]
        if any(found is not None and _forbidden(found) for found in addresses):
            raise ToolError(f"url: {host} resolves to a link-local or metadata address; refused")
        return url
    known = {(urlsplit(endpoint).hostname or "").lower() for endpoint in stack_endpoints()}
    if host not in known:
        raise ToolError(
            f"url: {host} is neither loopback nor an endpoint of this project's stacks "
            f"({', '.join(sorted(known - {''})) or 'none deployed that could be read'}); pass stack=<name> "
            "instead, or start the server with --allow-any-url"
        )
    return url
