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

_NOT_PUBLIC_V4_NETS = list(ipaddress.collapse_addresses(ipaddress.IPv4Network(n) for n in _NOT_PUBLIC_V4))
_NOT_PUBLIC_V6_NETS = list(ipaddress.collapse_addresses(ipaddress.IPv6Network(n) for n in _NOT_PUBLIC_V6))
# Every public address there is, per version (what 0.0.0.0/0 or ::/0 lets in).
_ALL_PUBLIC = {
    4: 2**32 - sum(n.num_addresses for n in _NOT_PUBLIC_V4_NETS),
    6: _PUBLIC_V6.num_addresses - sum(n.num_addresses for n in _NOT_PUBLIC_V6_NETS),
}


@dataclass(frozen=True)
class Exposure:
    """Public addresses one IP version of a range set lets in, against what is allowed."""

    version: int
    public_addresses: int
    union: tuple[Network, ...]

    @property
    def whole_internet(self) -> bool:
        return self.public_addresses >= _ALL_PUBLIC[self.version]

    @property
    def allowed(self) -> int:
        bits = 32 if self.version == 4 else 128
        return int(2 ** (bits - MAX_PUBLIC_PREFIX[self.version]))

    @property
    def too_wide(self) -> bool:
        return self.public_addresses > self.allowed


def _shared(union: Sequence[Network], others: Sequence[Network]) -> int:
    """Addresses two sets of CIDR blocks share: two blocks are nested or disjoint, so a pair shares the
    smaller one's size (each set is collapsed, so no address is counted twice)."""
    shared = 0
    for a in union:
        for b in others:
            if a.version == b.version and (a.subnet_of(b) or b.subnet_of(a)):  # type: ignore[arg-type]
                shared += min(a.num_addresses, b.num_addresses)
    return shared


def public_addresses(networks: Iterable[Network], version: int) -> int:
    """How many public addresses the union of `networks` (one IP version) covers."""
    if version == 4:
        v4 = list(ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv4Network)))
        return sum(n.num_addresses for n in v4) - _shared(v4, _NOT_PUBLIC_V4_NETS)
    v6 = [n for n in networks if isinstance(n, ipaddress.IPv6Network)]
    # Only 2000::/3 is public: clip wider blocks to it, drop blocks outside it.
    inside = list(ipaddress.collapse_addresses(_PUBLIC_V6 if _PUBLIC_V6.subnet_of(n) else n for n in v6))
    public = [n for n in inside if n.subnet_of(_PUBLIC_V6)]
    return sum(n.num_addresses for n in public) - _shared(public, _NOT_PUBLIC_V6_NETS)


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
            union = tuple(_collapse(mine))
            found.append(Exposure(version, public_addresses(mine, version), union))
    return found


def _collapse(networks: Sequence[Network]) -> list[Network]:
    v4 = ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv4Network))
    v6 = ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv6Network))
    return [*v4, *v6]


def checked_cidr(value: str) -> str:
    """One source range as a stack file names it, normalised (`203.0.113.0/24`); a ValueError that says why when
    it is not a CIDR range (host bits set included) or is a /0."""
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError as error:
        raise ValueError(f"{value!r} is not a CIDR range such as 203.0.113.0/24 ({error})") from None
    if network.prefixlen == 0:
        raise ValueError(
            f"{value!r} would open the vLLM port to the whole internet; vLLM's --api-key guards only /v1/*, "
            "so /metrics, /tokenize and the engine itself would be exposed. Name the networks that call it."
        )
    return str(network)


def too_wide(ranges: Sequence[str]) -> list[Exposure]:
    """The IP versions in which `ranges` together let in more public space than MAX_PUBLIC_PREFIX allows."""
    return [item for item in exposure(ranges) if item.too_wide]


def describe(item: Exposure) -> str:
    """`the whole public IPv4 internet (together 0.0.0.0/0)`, for messages."""
    union = ", ".join(str(n) for n in item.union[:4]) + (", ..." if len(item.union) > 4 else "")
    if item.whole_internet:
        return f"the whole public IPv{item.version} internet (their union: {union})"
    share = 100 * item.public_addresses / _ALL_PUBLIC[item.version]
    if share >= 1:
        return f"{share:.0f}% of the public IPv{item.version} internet (their union: {union})"
    bits = 32 if item.version == 4 else 128
    size = bits - (item.public_addresses.bit_length() - 1)
    return f"public IPv{item.version} space the size of a /{size} (their union: {union})"


def allowed_text() -> str:
    return (
        f"at most a /{MAX_PUBLIC_PREFIX[4]}'s worth of public IPv4 and a /{MAX_PUBLIC_PREFIX[6]}'s worth of public "
        "IPv6 space in all (private ranges such as 10.0.0.0/8 do not count)"
    )
