"""Which hosts verify may send a request (and a credential) to: one guard for the CLI and the MCP server.

Why: `--url` sends the stack's credentials (vLLM's API key, or a Google ID token) to whatever host it names,
and from a VM, Cloud Shell or a pod the metadata server (169.254.169.254, metadata.google.internal) hands
out the machine's own credentials to anyone who can make it send a request. So:

- **never** the metadata server (its names and addresses, however written: `0xa9fea9fe`, `2852039166`,
  `::ffff:169.254.169.254`, `2002:a9fe:a9fe::`, `64:ff9b::a9fe:a9fe`), a URL with `user:password@`, an
  unspecified or multicast address; `--allow-private-url` does not lift this;
- link-local, private (RFC 1918, CGNAT 100.64/10, IPv6 ULA fc00::/7), reserved and other non-global
  addresses only with `--allow-private-url` (a TPU node's internal IP over a VPN is a real case);
- **loopback** (127.0.0.0/8, ::1, `localhost`) is allowed: the local vLLM server, `kubectl port-forward`
  and the `gcloud ... ssh -L` tunnel docs/tpu.md describes are on it, and a key sent there stays on the
  machine. A Google ID token still goes only to its own audience (the next rule);
- a Google ID token is sent only to the host it is minted for (its audience's host, or a tagged revision
  `TAG---host` of it) and only over https (or to loopback): `--audience https://victim.run.app --url
  http://elsewhere` would hand a stranger a token the victim's service accepts.

A name is resolved and every address it resolves to is judged like a literal one (a name such as
`169.254.169.254.nip.io` points at the metadata server). The check runs once, before the first request;
a name whose answer changes afterwards (DNS rebinding) is not caught: say `--url` with an address, or use
`--stack`, where that matters. A stack's own endpoint (`--stack`) is the stack's and is not judged.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

# The metadata server's names (Compute Engine, Cloud Run, GKE) and addresses (IPv4, and the IPv6 one GCE
# documents for IPv6-only VMs: fd20:ce::254).
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "metadata.goog"})
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd20:ce::254")})
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
# NAT64's well-known prefix (RFC 6052): the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# What inet_aton reads as an IPv4 address besides dotted quads: decimal, octal and hex parts.
_INET_ATON = re.compile(r"(?:0[xX][0-9a-fA-F]+|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]+|[0-9]+)){0,3}")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolve = Callable[[str], list[str]]


class UnsafeUrlError(ValueError):
    """A URL verify will not send a request to; the message says why and what would be allowed."""


def resolve_host(host: str) -> list[str]:
    """Every address ``host`` resolves to (none when it does not resolve: the request then fails anyway)."""
    try:
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except (OSError, UnicodeError):
        return []


def literal_address(host: str) -> Address | None:
    """``host`` as an address when it is one in any form a resolver accepts (IPv6 in brackets, a zone id,
    inet_aton's decimal/octal/hex IPv4 forms); None for a name."""
    bare = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if _INET_ATON.fullmatch(bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def embedded(address: Address) -> Address:
    """The IPv4 address inside an IPv4-mapped, 6to4 or NAT64 IPv6 one (what the packet really reaches)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def never_allowed(address: Address) -> str | None:
    """Why no flag lets a request (with a credential) go to ``address``; None when some rule may allow it."""
    target = embedded(address)
    if target in METADATA_ADDRESSES or address in METADATA_ADDRESSES:
        return "the metadata server (it hands out this machine's credentials)"
    if target.is_unspecified or target.is_multicast:
        return "an unspecified or multicast address"
    return None


def is_loopback(address: Address) -> bool:
    return embedded(address).is_loopback


def needs_private_flag(address: Address) -> str | None:
    """Why ``address`` needs ``--allow-private-url`` (link-local, private, reserved: not global); None if not."""
    target = embedded(address)
    if target.is_loopback or target.is_global:
        return None
    return "a link-local address" if target.is_link_local else "a private or reserved address"


def is_metadata_name(host: str) -> bool:
    return host in METADATA_HOSTS or host.endswith(".metadata.google.internal")


def check_host(
    host: str,
    *,
    flag: str,
    allow_private: bool,
    resolve: Resolve = resolve_host,
    private_flag: str = "--allow-private-url",
) -> None:
    """Raise ``UnsafeUrlError`` when ``host`` (a URL's hostname) may not be sent a request; see the module."""
    name = host.rstrip(".").lower()
    if is_metadata_name(name):
        raise UnsafeUrlError(
            f"{flag}: {name} is the metadata server (it hands out this machine's credentials); refused"
        )
    address = literal_address(name)
    if address is None and name in LOOPBACK_NAMES:
        return
    addresses = [address] if address is not None else [a for a in map(literal_address, resolve(name)) if a]
    for found in addresses:
        where = name if address is not None else f"{name} (resolves to {found})"
        never = never_allowed(found)
        if never is not None:
            raise UnsafeUrlError(f"{flag}: {where} is {never}; refused")
        private = needs_private_flag(found)
        if private is not None and not allow_private:
            raise UnsafeUrlError(
                f"{flag}: {where} is {private}; the stack's credentials would go there. Pass {private_flag} "
                "if this is your own server (a TPU node's internal IP over a VPN), or use --stack"
            )


def check_url(url: str, *, flag: str, allow_private: bool, resolve: Resolve = resolve_host) -> None:
    """``check_host`` for a URL's host (a URL without a host is left to the URL's own parsing)."""
    parts = urlsplit(url.strip())
    if parts.hostname:
        check_host(parts.hostname, flag=flag, allow_private=allow_private, resolve=resolve)


def google_api_problem(url: str, *, flag: str) -> str | None:
    """Why ``url`` may not be sent Google OAuth access tokens (None when it may): only Google's own APIs
    (https, a `*.googleapis.com` host) or a local fake on loopback (what the tests point it at)."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").rstrip(".").lower()
    found = literal_address(host)
    if (found is not None and is_loopback(found)) or host in LOOPBACK_NAMES:
        return None
    if parts.scheme == "https" and (host == "googleapis.com" or host.endswith(".googleapis.com")):
        return None
    return (
        f"{flag}: {host or url!r} is not a Google API (https://*.googleapis.com) nor loopback; it would be sent "
        "your Google access token"
    )


def id_token_problem(base_url: str, audience: str) -> str | None:
    """Why a Google ID token for ``audience`` must not be sent to ``base_url``; None when it may.

    It may go to its audience's own host or a tagged revision of it (`TAG---host`, Cloud Run's tag URLs), over
    https (http only to loopback, where nothing leaves the machine).
    """
    called, minted = urlsplit(base_url), urlsplit(audience)
    host, audience_host = (called.hostname or "").lower(), (minted.hostname or "").lower()
    local = ((found := literal_address(host)) is not None and is_loopback(found)) or host in LOOPBACK_NAMES
    if called.scheme != "https" and not local:
        return f"a Google ID token is sent only over https (or to loopback), not to {called.scheme}://{host}"
    if host == audience_host or host.endswith(f"---{audience_host}"):
        return None
    return (
        f"a Google ID token minted for {audience_host} would be sent to {host}, which could replay it at "
        f"{audience_host}: call {audience_host} (or a tagged revision TAG---{audience_host}) or drop --audience"
    )
