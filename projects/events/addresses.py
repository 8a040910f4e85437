"""Which IP addresses a webhook may be sent to (pure: no settings, no network).

The table is our own, from IANA's IPv4 and IPv6 special-purpose address registries (RFC 6890
and its updates), not Python's `ipaddress` flags: those change between Python versions
(3.12.1 calls 64:ff9b::a9fe:a9fe, ::7f00:1, fec0::1 and 3fff::1 global, and 100.64.0.1
neither private nor global).

An IPv6 address can carry an IPv4 address inside it, and some networks turn one into the
other: NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16), Teredo (2001::/32: the
server, and the client's address inverted), the deprecated IPv4-compatible ::/96, the
IPv4-mapped ::ffff:0:0/96, the IPv4-translated ::ffff:0:0:0/96 and ISATAP interface ids
(…:0:5efe:a.b.c.d). Every such address is unwrapped and the IPv4 address inside judged too:
64:ff9b::a9fe:a9fe is the cloud metadata service behind a NAT64 gateway. An IPv4-mapped
address is the IPv4 address itself (a dual-stack socket connects to it).

    judge(ipaddress.ip_address("64:ff9b::a9fe:a9fe"))
    -> [Finding(169.254.169.254, "link_local", "169.254.0.0/16", "NAT64 64:ff9b::/96")]
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Kinds of address a receiver may not have (the console words them: events/targets.py).
UNSPECIFIED = "unspecified"
LOOPBACK = "loopback"
PRIVATE = "private"
SHARED = "shared"  # carrier-grade NAT
LINK_LOCAL = "link_local"
SITE_LOCAL = "site_local"
UNIQUE_LOCAL = "unique_local"
MULTICAST = "multicast"
DOCUMENTATION = "documentation"
BENCHMARKING = "benchmarking"
RESERVED = "reserved"
PROTOCOL = "protocol"  # IETF protocol assignments (192.0.0.0/24, 2001::/23)
TUNNEL = "tunnel"  # an IPv4 address wrapped in IPv6 by a mechanism that is no receiver's
NUMERIC_SPELLING = "numeric_spelling"  # a host written as 2130706433, 0x7f.1, 0177.0.0.1


def _nets(rows):
    return tuple((ipaddress.ip_network(net), kind) for net, kind in rows)


# First match wins: more specific networks come before the ones that contain them.
V4_REFUSED = _nets(
    [
        ("0.0.0.0/8", UNSPECIFIED),  # "this network"; 0.0.0.0 reaches the local host on Linux
        ("10.0.0.0/8", PRIVATE),
        ("100.64.0.0/10", SHARED),
        ("127.0.0.0/8", LOOPBACK),
        ("169.254.0.0/16", LINK_LOCAL),  # cloud metadata services live here
        ("172.16.0.0/12", PRIVATE),
        ("192.0.0.0/24", PROTOCOL),
        ("192.0.2.0/24", DOCUMENTATION),
        ("192.88.99.0/24", RESERVED),  # the deprecated 6to4 relay anycast
        ("192.168.0.0/16", PRIVATE),
        ("198.18.0.0/15", BENCHMARKING),
        ("198.51.100.0/24", DOCUMENTATION),
        ("203.0.113.0/24", DOCUMENTATION),
        ("224.0.0.0/4", MULTICAST),
        ("240.0.0.0/4", RESERVED),  # and 255.255.255.255, the broadcast address
    ]
)

V6_REFUSED = _nets(
    [
        ("::/128", UNSPECIFIED),
        ("::1/128", LOOPBACK),
        ("::/96", TUNNEL),  # IPv4-compatible (deprecated)
        ("::ffff:0:0:0/96", TUNNEL),  # IPv4-translated (SIIT)
        ("64:ff9b:1::/48", PRIVATE),  # NAT64 for local use (RFC 8215)
        ("100::/64", RESERVED),  # discard-only
        ("2001::/32", TUNNEL),  # Teredo
        ("2001:2::/48", BENCHMARKING),
        ("2001:db8::/32", DOCUMENTATION),
        ("2001::/23", PROTOCOL),
        ("3fff::/20", DOCUMENTATION),
        ("fc00::/7", UNIQUE_LOCAL),
        ("fe80::/10", LINK_LOCAL),
        ("fec0::/10", SITE_LOCAL),
        ("ff00::/8", MULTICAST),
    ]
)
# Global unicast space: anything else outside it is reserved by IANA...
V6_GLOBAL = ipaddress.ip_network("2000::/3")
# ...except the NAT64 well-known prefix, which is as good as the IPv4 address it carries.
NAT64 = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
TEREDO = ipaddress.ip_network("2001::/32")
COMPATIBLE = ipaddress.ip_network("::/96")
TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
_ISATAP_IDS = (0x00005EFE, 0x02005EFE)  # the interface id's high half


@dataclass(frozen=True)
class Finding:
    """Why one address is refused: what it is (`kind`, in `network`), and `via`: the IPv6
    form it was found inside ("" for the address itself)."""

    address: IPAddress
    kind: str
    network: str
    via: str = ""


def parse(text: str) -> IPAddress:
    """An address as getaddrinfo or a URL gives it; a zone id (fe80::1%eth0) is dropped."""
    return ipaddress.ip_address(text.split("%", 1)[0])


def unmapped(ip: IPAddress) -> IPAddress:
    """::ffff:a.b.c.d is a.b.c.d."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _v4(value: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(value & 0xFFFFFFFF)


def embedded(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address carries, each with the form that carries it."""
    value = int(ip)
    found = []
    if ip in NAT64:
        found.append(("NAT64 64:ff9b::/96", _v4(value)))
    elif ip in NAT64_LOCAL:
        found.append(("NAT64 64:ff9b:1::/48", _v4(value)))
    elif ip in SIX_TO_FOUR:
        found.append(("6to4 2002::/16", _v4(value >> 80)))
    elif ip in TEREDO:
        found.append(("Teredo 2001::/32 (server)", _v4(value >> 64)))
        found.append(("Teredo 2001::/32 (client)", _v4(~value)))
    elif ip in TRANSLATED:
        found.append(("IPv4-translated ::ffff:0:0:0/96", _v4(value)))
    elif ip in COMPATIBLE and value > 1:
        found.append(("IPv4-compatible ::/96", _v4(value)))
    elif ((value >> 32) & 0xFFFFFFFF) in _ISATAP_IDS:
        found.append(("ISATAP interface id", _v4(value)))
    return found


def _first(ip: IPAddress, table) -> tuple[str, str] | None:
    return next(((kind, str(net)) for net, kind in table if ip in net), None)


def judge(ip: IPAddress) -> list[Finding]:
    """Why `ip` may not be a receiver's address; [] when it may (a public unicast address,
    and every IPv4 address inside it public too)."""
    ip = unmapped(ip)
    if isinstance(ip, ipaddress.IPv4Address):
        hit = _first(ip, V4_REFUSED)
        return [Finding(ip, *hit)] if hit else []
    findings = []
    hit = _first(ip, V6_REFUSED)
    if hit:
        findings.append(Finding(ip, *hit))
    elif ip not in V6_GLOBAL and ip not in NAT64:
        findings.append(Finding(ip, RESERVED, "outside 2000::/3"))
    for via, inner in embedded(ip):
        hit = _first(inner, V4_REFUSED)
        if hit:
            findings.append(Finding(inner, *hit, via=via))
    return findings


# --- Hosts written as numbers ---------------------------------------------------------------------

_NUMBER = re.compile(r"\A(0x[0-9a-f]*|[0-9]+)\Z", re.IGNORECASE)


def numeric_host(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host written in another numeric form means, as browsers
    (the WHATWG URL standard) and the C resolver (inet_aton) read it: 2130706433, 0x7f.1,
    017700000001 and 0177.0.0.1 are all 127.0.0.1. None for a name or a dotted-quad written
    the plain way. ValueError when the host ends in a number but is no address at all."""
    labels = host.split(".")
    if labels and labels[-1] == "" and len(labels) > 1:
        labels = labels[:-1]  # "127.0.0.1." is 127.0.0.1 too
    if not _NUMBER.match(labels[-1]):
        return None  # a name: its last label is not a number
    try:
        if str(ipaddress.IPv4Address(host)) == host:
            return None  # the plain spelling
    except ValueError:
        pass
    if len(labels) > 4 or not all(_NUMBER.match(label) for label in labels):
        raise ValueError(host)
    numbers = [_number(label) for label in labels]
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise ValueError(host)
    value = last
    for index, n in enumerate(head):
        value += n << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _number(label: str) -> int:
    if label[:2].lower() == "0x":
        return int(label[2:] or "0", 16)
    if len(label) > 1 and label.startswith("0"):
        return int(label, 8)  # ValueError for 08 or 09, as inet_aton refuses them
    return int(label)
