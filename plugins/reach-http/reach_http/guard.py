"""The SSRF guard: decide, once per hop, whether an address may be contacted.

A model that can choose URLs (or a server that can choose redirects) could
otherwise make reach call the cloud metadata service, a database on localhost
or a router's admin page. The rules:

* only ``http`` and ``https``;
* a host is either a canonical IP literal or a name; numeric forms that some
  resolvers read as IPv4 (``2130706433``, ``0177.0.0.1``, ``0x7f.1``) are refused
  outright, because different parsers disagree on what they mean;
* a name is resolved **once**; if any address it resolves to is loopback,
  private, carrier-grade NAT, multicast, unspecified, reserved, IPv4-mapped
  IPv6 (or otherwise not globally routable) the hop is refused, unless the
  service sets ``allow_private = true`` for a host written in its config;
* cloud metadata addresses, the link-local ranges and metadata names are refused
  always, ``allow_private`` or not, in every spelling: each host is normalised
  first (percent-escapes, IDNA, case, trailing dots, ``inet_aton`` numeric forms)
  and each IPv6 address is judged by every IPv4 address it embeds (mapped,
  compatible, NAT64, 6to4, Teredo, ISATAP);
* the caller then connects to exactly the address returned here (see
  :mod:`reach_http.transport`), so a second DNS answer cannot swap it.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import re
import socket
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import unquote

__all__ = [
    "AddressGuard",
    "HostRefused",
    "HostUnresolved",
    "IPAddress",
    "Resolver",
    "StaticResolver",
    "SystemResolver",
    "always_refused_reason",
    "canonical_host",
    "embedded_ipv4",
    "metadata_name",
    "parse_host",
    "refusal_reason",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_net = ipaddress.ip_network

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle ... (IMDS)
        "169.254.170.2",  # AWS ECS task metadata and credentials
        "169.254.170.23",  # AWS EKS Pod Identity credentials
        "169.254.0.23",  # Tencent Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS EKS Pod Identity over IPv6
        "fd20:ce::254",  # GCP metadata over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "168.63.129.16",  # Azure WireServer (host agent, certificates)
    )
)
"""Cloud metadata and credential endpoints: never contacted, ``allow_private`` or not."""

ALWAYS_REFUSED_NETWORKS = (
    (_net("169.254.0.0/16"), "a link-local address (169.254.0.0/16, where cloud metadata and credential "
                             "services live)"),
    (_net("fe80::/10"), "a link-local address (fe80::/10)"),
    (_net("fd00:ec2::/64"), "an address in AWS's reserved service range fd00:ec2::/64 (metadata, credentials)"),
)
"""Whole ranges refused like metadata addresses: nothing legitimate for an agent lives there."""

METADATA_NAMES = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.azure.internal",
    }
)
"""Names of metadata services; refused before resolving (subdomains too)."""

SPECIAL_PURPOSE = (
    (_net("0.0.0.0/8"), "an address in 0.0.0.0/8 (\"this network\")"),
    (_net("10.0.0.0/8"), "a private address (10.0.0.0/8)"),
    (_net("100.64.0.0/10"), "a carrier-grade NAT address (100.64.0.0/10)"),
    (_net("127.0.0.0/8"), "a loopback address"),
    (_net("172.16.0.0/12"), "a private address (172.16.0.0/12)"),
    (_net("192.0.0.0/24"), "an IETF protocol assignment (192.0.0.0/24)"),
    (_net("192.0.2.0/24"), "a documentation address (192.0.2.0/24)"),
    (_net("192.88.99.0/24"), "a 6to4 relay anycast address (192.88.99.0/24, deprecated)"),
    (_net("192.168.0.0/16"), "a private address (192.168.0.0/16)"),
    (_net("198.18.0.0/15"), "a benchmarking address (198.18.0.0/15)"),
    (_net("198.51.100.0/24"), "a documentation address (198.51.100.0/24)"),
    (_net("203.0.113.0/24"), "a documentation address (203.0.113.0/24)"),
    (_net("224.0.0.0/4"), "a multicast address"),
    (_net("240.0.0.0/4"), "a reserved address (240.0.0.0/4)"),
    (_net("100::/64"), "a discard-only address (100::/64)"),
    (_net("100:0:0:1::/64"), "a dummy IPv6 prefix address (100:0:0:1::/64)"),
    (_net("2001::/23"), "an IETF protocol assignment (2001::/23)"),
    (_net("2001:db8::/32"), "a documentation address (2001:db8::/32)"),
    (_net("3fff::/20"), "a documentation address (3fff::/20)"),
    (_net("5f00::/16"), "a segment-routing SID (5f00::/16)"),
    (_net("fc00::/7"), "a unique-local (private) address (fc00::/7)"),
    (_net("fec0::/10"), "a site-local address (fec0::/10, deprecated but still routed inside sites)"),
    (_net("ff00::/8"), "a multicast address"),
)
"""IANA's special-purpose registries, the entries not globally reachable (and multicast).

Written out rather than taken from ``ipaddress``' ``is_private``/``is_global``: those
changed between Python releases (3.11 calls ``fec0::/10``, ``3fff::/20`` and
``192.88.99.0/24`` global), and the guard must not depend on which Python runs it.
"""

GLOBAL_EXCEPTIONS = tuple(
    _net(n)
    for n in (
        "192.0.0.9/32", "192.0.0.10/32", "2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:3::/32",
        "2001:4:112::/48", "2001:20::/28", "2001:30::/28",
    )
)
"""Entries the registry marks globally reachable inside the ranges above (anycast services)."""

_GLOBAL_UNICAST = _net("2000::/3")
CARRIER_GRADE_NAT = _net("100.64.0.0/10")
_NAT64 = _net("64:ff9b::/96")
_NAT64_LOCAL = _net("64:ff9b:1::/48")
_SIXTOFOUR = _net("2002::/16")
_TEREDO = _net("2001::/32")

_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)
_CANONICAL_OCTET = re.compile(r"^(0|[1-9][0-9]{0,2})$")
_HOSTNAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$", re.IGNORECASE)
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


class HostRefused(Exception):
    """This hop must not be contacted; the message says why, for a model and a person."""


class HostUnresolved(HostRefused):
    """The name did not resolve (possibly a passing DNS failure): nothing was contacted."""


def _bits(n: int, start: int, length: int) -> int:
    """``length`` bits of the 128-bit ``n`` starting at bit ``start`` (0 = most significant)."""
    return (n >> (128 - start - length)) & ((1 << length) - 1)


def _rfc6052(n: int, prefix_len: int) -> int:
    """The IPv4 address RFC 6052 embeds after a ``prefix_len`` NAT64 prefix (bits 64-71 skipped)."""
    if prefix_len == 32:
        return _bits(n, 32, 32)
    if prefix_len == 40:
        return _bits(n, 40, 24) << 8 | _bits(n, 72, 8)
    if prefix_len == 48:
        return _bits(n, 48, 16) << 16 | _bits(n, 72, 16)
    if prefix_len == 56:
        return _bits(n, 56, 8) << 24 | _bits(n, 72, 24)
    if prefix_len == 64:
        return _bits(n, 72, 32)
    return n & 0xFFFFFFFF


def embedded_ipv4(address: IPAddress) -> list[tuple[str, ipaddress.IPv4Address]]:
    """Every IPv4 address a standard IPv6 form carries, with the form's name.

    IPv4-mapped (``::ffff:a.b.c.d``), IPv4-compatible (``::a.b.c.d``), IPv4-translated
    (``::ffff:0:a.b.c.d``), NAT64 (``64:ff9b::/96``; local-use ``64:ff9b:1::/48`` at
    every RFC 6052 position), 6to4 (``2002::/16``), Teredo (server, and the client
    stored XOR-ed in the last 32 bits) and ISATAP (interface id ``[02]00:5efe:a.b.c.d``).
    Traffic to such an address can end at the IPv4 one, so it is judged by it too.
    """
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    n = int(address)
    v4 = ipaddress.IPv4Address
    found: list[tuple[str, ipaddress.IPv4Address]] = []
    top96 = n >> 32
    if top96 == 0xFFFF:
        found.append(("IPv4-mapped", v4(n & 0xFFFFFFFF)))
    elif top96 == 0 and n > 1:
        found.append(("IPv4-compatible", v4(n & 0xFFFFFFFF)))
    elif top96 == 0xFFFF0000:
        found.append(("IPv4-translated", v4(n & 0xFFFFFFFF)))
    if address in _NAT64:
        found.append(("NAT64", v4(n & 0xFFFFFFFF)))
    if address in _NAT64_LOCAL:
        found.extend(("local-use NAT64", v4(_rfc6052(n, p))) for p in (48, 56, 64, 96))
    if address in _SIXTOFOUR:
        found.append(("6to4", v4(_bits(n, 16, 32))))
    if address in _TEREDO:
        found.append(("Teredo server", v4(_bits(n, 32, 32))))
        found.append(("Teredo client", v4(~n & 0xFFFFFFFF)))
    if (n >> 32) & 0xFCFFFFFF == 0x00005EFE:
        found.append(("ISATAP", v4(n & 0xFFFFFFFF)))
    return found


def _unscoped(address: IPAddress) -> IPAddress:
    """``fe80::1%eth0`` -> ``fe80::1``: a scope id must not make an address compare unequal to itself."""
    if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
        return ipaddress.IPv6Address(int(address))
    return address


def _always_refused_v4ish(address: IPAddress, *, named: bool = True) -> str | None:
    if address in METADATA_ADDRESSES:
        return f"a cloud metadata address ({address})" if named else "a cloud metadata address"
    for network, why in ALWAYS_REFUSED_NETWORKS:
        if address.version == network.version and address in network:
            return why
    return None


@functools.lru_cache(maxsize=4096)
def always_refused_reason(address: IPAddress) -> str | None:
    """Why ``address`` is never contacted (metadata, link-local), or None.

    Checked before anything else and not opened by ``allow_private``. An IPv6 address
    is also refused when any IPv4 address it embeds is one of these, and when a
    metadata IPv4 address sits at any RFC 6052 position (a network-specific NAT64
    prefix reach cannot know about).
    """
    address = _unscoped(address)
    direct = _always_refused_v4ish(address)
    if direct is not None:
        return direct
    if isinstance(address, ipaddress.IPv6Address):
        for form, inner in embedded_ipv4(address):
            why = _always_refused_v4ish(inner, named=False)
            if why is not None:
                return f"an IPv6 address ({form} form) embedding {inner}, {why}"
        n = int(address)
        for prefix_len in (32, 40, 48, 56, 64, 96):
            inner = ipaddress.IPv4Address(_rfc6052(n, prefix_len))
            if inner in METADATA_ADDRESSES:
                return f"an IPv6 address embedding {inner}, a cloud metadata address"
    return None


@functools.lru_cache(maxsize=4096)
def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is one."""
    always = always_refused_reason(address)
    if always is not None:
        return always
    address = _unscoped(address)
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if isinstance(address, ipaddress.IPv6Address):
        for form, inner in embedded_ipv4(address):
            if form in ("IPv4-mapped", "IPv4-compatible", "IPv4-translated"):
                return f"an {form} IPv6 address ({inner})"
            if refusal_reason(inner) is not None:
                return f"an IPv6 address embedding a non-public IPv4 address ({form}: {inner})"
        if address in _NAT64_LOCAL:
            return "a local-use NAT64 address (64:ff9b:1::/48)"
        if address in _NAT64:
            return None  # the well-known NAT64 prefix: the embedded (public) IPv4 is the destination
    if any(address.version == n.version and address in n for n in GLOBAL_EXCEPTIONS):
        return None
    for network, why in SPECIAL_PURPOSE:
        if address.version == network.version and address in network:
            return why
    if isinstance(address, ipaddress.IPv6Address) and address not in _GLOBAL_UNICAST:
        return "an IPv6 address outside the global unicast range 2000::/3"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv4Address) and address in CARRIER_GRADE_NAT:
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_reserved:
        return "a reserved address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "an address that is not globally routable"
    return None


def _inet_aton(text: str) -> ipaddress.IPv4Address | None:
    """What ``inet_aton``/the WHATWG URL parser read in ``text``: 1-4 parts, decimal, 0-octal, 0x-hex."""
    parts = text.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part[:2].lower() == "0x":
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part[1:], 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            return None
    if any(v > 255 for v in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    number = values[-1]
    for index, value in enumerate(values[:-1]):
        number += value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


@functools.lru_cache(maxsize=4096)
def canonical_host(host: str) -> str:
    """``host`` as a resolver or a lenient parser would read it, for deciding only.

    Percent-escapes decoded (repeatedly), ideographic full stops made dots, NFKC,
    case folded, brackets and trailing dots removed, ``xn--`` labels decoded.
    """
    if host.isascii() and "%" not in host and "xn--" not in host.lower():
        text = host.lower().strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        return text.rstrip(".")
    text = host
    for _ in range(4):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    text = unicodedata.normalize("NFKC", text.translate(_DOTS)).translate(_DOTS).casefold().strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.rstrip(".")
    labels = []
    for label in text.split("."):
        if label.startswith("xn--"):
            try:
                label = unicodedata.normalize("NFKC", label[4:].encode("ascii").decode("punycode")).casefold()
            except (UnicodeError, ValueError):
                pass
        labels.append(label)
    return ".".join(labels)


@functools.lru_cache(maxsize=4096)
def host_meaning(host: str) -> IPAddress | None:
    """The address any lenient parser could take ``host`` for (None for a name)."""
    text = canonical_host(host)
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    return _inet_aton(text)


@functools.lru_cache(maxsize=4096)
def metadata_name(host: str) -> str | None:
    """The metadata service name ``host`` spells (any case, trailing dot, IDNA), or None."""
    text = canonical_host(host)
    for name in METADATA_NAMES:
        if text == name or ("." in name and text.endswith("." + name)):
            return name
    return None


def parse_host(host: str) -> IPAddress | None:
    """The IP address ``host`` spells, None for a DNS name; raises on ambiguous forms.

    The WHATWG URL standard (and ``inet_aton``) read a host whose last label is
    numeric as IPv4 in decimal, octal or hex. Rather than guess which reading the
    resolver would pick, anything numeric that is not plain dotted decimal is refused
    (naming the address it spells when that is a metadata one).
    """
    if not host:
        raise HostRefused("the URL has no host")
    meaning = host_meaning(host)
    always = always_refused_reason(meaning) if meaning is not None else None
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare:
        if "%" in bare:
            detail = f" ({meaning} is {always}; reach never calls it)" if always else ""
            raise HostRefused(f"IPv6 zone identifiers are not allowed ({host}){detail}")
        try:
            return ipaddress.IPv6Address(bare)
        except ValueError:
            raise HostRefused(f"{host!r} is not a valid IPv6 address") from None
    if "%" in bare:
        detail = f"; it means {meaning}, {always}, which reach never calls" if always else ""
        raise HostRefused(f"{host!r} is a percent-encoded host; write the host plainly{detail}")
    labels = bare.rstrip(".").split(".")
    if _NUMERIC_LABEL.match(labels[-1]):
        if len(labels) == 4 and all(_CANONICAL_OCTET.match(x) and int(x) <= 255 for x in labels):
            return ipaddress.IPv4Address(bare.rstrip("."))
        detail = f" It means {meaning}, {always}, which reach never calls." if always else ""
        raise HostRefused(
            f"{host!r} is a numeric host in a non-standard form (decimal, octal or hex); "
            f"write IPv4 addresses as four decimal numbers like 93.184.215.14.{detail}"
        )
    if not _HOSTNAME.match(bare):
        raise HostRefused(f"{host!r} is not a valid host name")
    return None


class Resolver(Protocol):
    """Turns a host name into addresses. Injectable so tests never touch real DNS."""

    async def resolve(self, host: str, port: int) -> list[IPAddress]: ...


class SystemResolver:
    """The operating system's resolver (``getaddrinfo``), off the event loop."""

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        seen: list[IPAddress] = []
        for family, _type, _proto, _canon, sockaddr in infos:
            if family not in (socket.AF_INET, socket.AF_INET6):
                continue
            addr = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if addr not in seen:
                seen.append(addr)
        return seen


@dataclass
class StaticResolver:
    """A fixed name -> addresses table (tests, or pinning names in config)."""

    table: dict[str, list[str]] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    async def resolve(self, host: str, port: int) -> list[IPAddress]:
        self.calls.append(host)
        key = host.rstrip(".").lower()
        if key not in self.table:
            raise OSError(f"name {host!r} does not resolve")
        return [ipaddress.ip_address(a) for a in self.table[key]]


@dataclass
class AddressGuard:
    """Checks one hop: scheme, host form, every resolved address. Returns the one to use."""

    resolver: Resolver = field(default_factory=SystemResolver)

    async def check_within(
        self, seconds: float, scheme: str, host: str, port: int, *, allow_private: bool
    ) -> IPAddress:
        """:meth:`check`, given ``seconds``; past them the hop is ``HostUnresolved``.

        A DNS server that never answers (a redirect can name any host) would otherwise
        hold the call until the tool's own, later deadline, and be reported there as an
        unknown outcome although nothing was sent. Every caller that connects checks
        through here.
        """
        try:
            async with asyncio.timeout(seconds):
                return await self.check(scheme, host, port, allow_private=allow_private)
        except TimeoutError:
            raise HostUnresolved(f"the host {host!r} did not resolve within {seconds:g} s") from None

    async def check(self, scheme: str, host: str, port: int, *, allow_private: bool) -> IPAddress:
        """The address to connect to for this hop, or ``HostRefused`` saying why not.

        Metadata names and addresses (in any spelling, embedded in any IPv6 form, or
        among the answers for a name) are refused whatever ``allow_private`` says.
        """
        scheme = scheme.lower()
        if scheme not in ("http", "https"):
            raise HostRefused(f"only http and https URLs can be called, not {scheme or 'no scheme'}:")
        literal = parse_host(host)
        if literal is None:
            name = metadata_name(host)
            if name is not None:
                raise HostRefused(
                    f"{host} is the cloud metadata service name {name}; reach never calls it, "
                    "whatever the settings (allow_private does not open it)"
                )
            try:
                addresses = await self.resolver.resolve(host.rstrip("."), port)
            except (OSError, UnicodeError) as exc:
                raise HostUnresolved(f"the host {host!r} could not be resolved ({exc})") from None
            if not addresses:
                raise HostUnresolved(f"the host {host!r} has no address")
        else:
            addresses = [literal]
        for address in addresses:
            shown = host if literal is not None else f"{host} ({address})"
            always = always_refused_reason(address)
            if always is not None:
                raise HostRefused(
                    f"{shown} is {always}; reach never calls it, whatever the settings "
                    "(allow_private does not open it)"
                )
        for address in addresses:
            reason = refusal_reason(address)
            if reason is not None and not allow_private:
                shown = host if literal is not None else f"{host} ({address})"
                raise HostRefused(
                    f"{shown} is {reason}; reach only calls public addresses, except for a service whose "
                    "own host, written in its settings (base_url or openapi URL), is marked allow_private = true"
                )
        return addresses[0]
