"""How much of the public internet a set of source ranges lets in, judged as a union.

Why a union: `0.0.0.0/0` is easy to refuse string by string, but `0.0.0.0/1` plus `128.0.0.0/1` opens
a port to the same whole internet, as do sixteen /4s. What matters is the public address space the
ranges cover together, private and reserved space (RFC 1918, CGNAT, loopback, documentation, ...)
left out. Standard library only, so the policy pack and the stack settings share it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The most public address space one allowed set may cover: a /8 of IPv4 (16,777,216 addresses, a large
# organisation's whole allocation) and a /32 of IPv6 (a whole ISP's allocation). Anything wider is "the
# internet" for the purpose of a model server whose /metrics and /tokenize need no key.
MAX_PUBLIC_PREFIX = {4: 8, 6: 32}

# Address space that is not reachable from the public internet: IANA's special-purpose registries
# (RFC 6890 and updates; https://www.iana.org/assignments/iana-ipv4-special-registry,
# https://www.iana.org/assignments/iana-ipv6-special-registry), plus IPv4 multicast and class E. For
# IPv6 only 2000::/3 is allocated global unicast today, so everything outside it counts as not public.
_NOT_PUBLIC_V4 = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/3",
)
_PUBLIC_V6 = ipaddress.IPv6Network("2000::/3")
_NOT_PUBLIC_V6 = ("2001::/23", "2001:db8::/32", "2002::/16")

_NOT_PUBLIC: dict[int, list[Network]] = {
    4: list(ipaddress.collapse_addresses(ipaddress.IPv4Network(n) for n in _NOT_PUBLIC_V4)),
    6: list(ipaddress.collapse_addresses(ipaddress.IPv6Network(n) for n in _NOT_PUBLIC_V6)),
}


@dataclass(frozen=True)
class Exposure:
    """Public addresses one IP version of a range set lets in, against what is allowed."""

    version: int
    public_addresses: int
    union: tuple[Network, ...]

    @property
    def whole_internet(self) -> bool:
        everything = 2**32 if self.version == 4 else _PUBLIC_V6.num_addresses
        return self.public_addresses >= everything - _not_public_total(self.version)

    @property
    def allowed(self) -> int:
        bits = 32 if self.version == 4 else 128
        return int(2 ** (bits - MAX_PUBLIC_PREFIX[self.version]))

    @property
    def too_wide(self) -> bool:
        return self.public_addresses > self.allowed


def _not_public_total(version: int) -> int:
    return sum(n.num_addresses for n in _NOT_PUBLIC[version])


def _overlap(a: Network, b: Network) -> int:
    """Addresses two CIDR blocks share: blocks are nested or disjoint, so it is the smaller's size."""
    if not a.overlaps(b):  # type: ignore[arg-type]
        return 0
    return min(a.num_addresses, b.num_addresses)


def public_addresses(networks: Iterable[Network], version: int) -> int:
    """How many public addresses the union of `networks` (one IP version) covers."""
    union = list(ipaddress.collapse_addresses(n for n in networks if n.version == version))  # type: ignore[misc]
    if version == 6:
        union = [n for n in union if n.overlaps(_PUBLIC_V6)]  # type: ignore[arg-type]
        clipped: list[Network] = []
        for n in union:
            clipped.append(n if n.subnet_of(_PUBLIC_V6) else _PUBLIC_V6)  # type: ignore[arg-type]
        union = list(ipaddress.collapse_addresses(clipped))  # type: ignore[arg-type]
    total = sum(n.num_addresses for n in union)
    return total - sum(_overlap(n, p) for n in union for p in _NOT_PUBLIC[version])


def exposure(ranges: Sequence[str]) -> list[Exposure]:
    """The public exposure of each IP version present in `ranges` (strings that are not CIDRs are skipped)."""
    networks: list[Network] = []
    for text in ranges:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            continue
    found = []
    for version in (4, 6):
        mine = [n for n in networks if n.version == version]
        if mine:
            union = tuple(ipaddress.collapse_addresses(mine))  # type: ignore[type-var]
            found.append(Exposure(version, public_addresses(mine, version), union))
    return found


def too_wide(ranges: Sequence[str]) -> list[Exposure]:
    """The IP versions in which `ranges` together let in more public space than MAX_PUBLIC_PREFIX allows."""
    return [item for item in exposure(ranges) if item.too_wide]


def describe(item: Exposure) -> str:
    """`the whole public IPv4 internet (together 0.0.0.0/0)`, for messages."""
    union = ", ".join(str(n) for n in item.union[:4]) + (", ..." if len(item.union) > 4 else "")
    if item.whole_internet:
        return f"the whole public IPv{item.version} internet (their union: {union})"
    bits = 32 if item.version == 4 else 128
    size = bits - (item.public_addresses.bit_length() - 1)
    return f"public IPv{item.version} space the size of a /{size} (their union: {union})"


def allowed_text() -> str:
    return (
        f"at most a /{MAX_PUBLIC_PREFIX[4]}'s worth of public IPv4 and a /{MAX_PUBLIC_PREFIX[6]}'s worth of public "
        "IPv6 space in all (private ranges such as 10.0.0.0/8 do not count)"
    )
