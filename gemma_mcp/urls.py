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

The addresses are judged by verify's own guard (verify/url_guard.py, which the CLI's `--url` uses too), so
the metadata server is refused in every spelling (`0xa9fea9fe`, `[::ffff:169.254.169.254]`, NAT64, 6to4)
here as in the CLI; this module adds only the server's allow-list on top.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from mcp.server.mcpserver.exceptions import ToolError

from verify.url_guard import (
    LOOPBACK_NAMES,
    METADATA_HOSTS,
    Resolve,
    embedded,
    is_metadata_name,
    literal_address,
    never_allowed,
    resolve_host,
)
from verify.url_guard import is_loopback as _is_loopback_address

__all__ = ["LOOPBACK_NAMES", "METADATA_HOSTS", "check_url", "is_loopback"]


def is_loopback(host: str) -> bool:
    address = literal_address(host)
    return host.lower() in LOOPBACK_NAMES if address is None else _is_loopback_address(address)


def _refused(host: str, address_text: str | None = None) -> str | None:
    """Why verify's guard never lets a request go to ``host`` (or to what it resolved to)."""
    if is_metadata_name(host):
        return "the metadata server"
    address = literal_address(address_text or host)
    if address is None:
        return None
    never = never_allowed(address)
    if never is not None:
        return never
    return "a link-local address" if embedded(address).is_link_local else None


def check_url(
    url: str,
    *,
    stack_endpoints: Callable[[], Iterable[str]],
    allow_any: bool = False,
    resolve: Resolve = resolve_host,
) -> str:
    """The URL unchanged when the tools may call it; otherwise a ToolError saying why and what is allowed.

    The addresses are judged by verify's guard (verify/url_guard.py: every form of the metadata server's
    address, mapped and embedded IPv4 included); this adds the server's own allow-list on top. The tools then
    pass `--allow-private-url` to verify, since a URL that got here is loopback, a stack's own endpoint or one
    the server was started to allow (`--allow-any-url`).
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        return url  # verify refuses it with its own message (exit 2), before any request
    if parts.username is not None or parts.password is not None:
        raise ToolError("url: a URL with user:password@ in it is refused; give the endpoint's base URL only")
    host = parts.hostname.rstrip(".").lower()
    why = _refused(host)
    if why is not None:
        raise ToolError(f"url: {host} is {why} (the metadata server or a link-local address); refused")
    if is_loopback(host):
        return url
    if allow_any:
        found = [] if literal_address(host) is not None else resolve(host)
        if any(_refused(host, address) for address in found):
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
