"""The SSRF guard: decide, once per hop, whether an address may be contacted.

A model that can choose URLs (or a server that can choose redirects) could
otherwise make reach call the cloud metadata service, a database on localhost
or a router's admin page. The rules:

* only ``http`` and ``https``;
* a host is either a canonical IP literal or a name; numeric forms that some
  resolvers read as IPv4 (``2130706433``, ``0177.0.0.1``, ``0x7f.1``) are refused
  outright, because different parsers disagree on what they mean;
* a name is resolved **once**; if any address it resolves to is loopback,
  private, link-local, carrier-grade NAT, multicast, unspecified, reserved,
  IPv4-mapped IPv6 (or otherwise not globally routable) the hop is refused,
  unless the service sets ``allow_private = true`` for its own host;
* cloud metadata addresses are refused always, ``allow_private`` or not;
* the caller then connects to exactly the address returned here (see
  :mod:`reach_http.transport`), so a second DNS answer cannot swap it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "AddressGuard",
    "HostRefused",
    "HostUnresolved",
    "IPAddress",
    "Resolver",
    "StaticResolver",
    "SystemResolver",
    "parse_host",
    "refusal_reason",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack ...
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    }
)
CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")

_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)
_CANONICAL_OCTET = re.compile(r"^(0|[1-9][0-9]{0,2})$")
_HOSTNAME = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$", re.IGNORECASE)


class HostRefused(Exception):
    """This hop must not be contacted; the message says why, for a model and a person."""


class HostUnresolved(HostRefused):
    """The name did not resolve (possibly a passing DNS failure): nothing was contacted."""


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is one."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return "an IPv4-mapped IPv6 address"
        embedded = address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None and refusal_reason(embedded) is not None:
            return "an IPv6 address embedding a non-public IPv4 address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_loopback:
        return "a loopback address"
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


def parse_host(host: str) -> IPAddress | None:
    """The IP address ``host`` spells, None for a DNS name; raises on ambiguous forms.

    The WHATWG URL standard (and ``inet_aton``) read a host whose last label is
    numeric as IPv4 in decimal, octal or hex. Rather than guess which reading the
    resolver would pick, anything numeric that is not plain dotted decimal is refused.
    """
    if not host:
        raise HostRefused("the URL has no host")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare:
        if "%" in bare:
            raise HostRefused(f"IPv6 zone identifiers are not allowed ({host})")
        try:
            return ipaddress.IPv6Address(bare)
        except ValueError:
            raise HostRefused(f"{host!r} is not a valid IPv6 address") from None
    labels = bare.rstrip(".").split(".")
    if _NUMERIC_LABEL.match(labels[-1]):
        if len(labels) == 4 and all(_CANONICAL_OCTET.match(x) and int(x) <= 255 for x in labels):
            return ipaddress.IPv4Address(bare.rstrip("."))
        raise HostRefused(
            f"{host!r} is a numeric host in a non-standard form (decimal, octal or hex); "
            "write IPv4 addresses as four decimal numbers like 93.184.215.14"
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

    async def check(self, scheme: str, host: str, port: int, *, allow_private: bool) -> IPAddress:
        scheme = scheme.lower()
        if scheme not in ("http", "https"):
            raise HostRefused(f"only http and https URLs can be called, not {scheme or 'no scheme'}:")
        literal = parse_host(host)
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            try:
                addresses = await self.resolver.resolve(host.rstrip("."), port)
            except (OSError, UnicodeError) as exc:
                raise HostUnresolved(f"the host {host!r} could not be resolved ({exc})") from None
            if not addresses:
                raise HostUnresolved(f"the host {host!r} has no address")
        for address in addresses:
            reason = refusal_reason(address)
            if reason is None:
                continue
            if address in METADATA_ADDRESSES or not allow_private:
                shown = host if literal is not None else f"{host} ({address})"
                raise HostRefused(
                    f"{shown} is {reason}; reach only calls public addresses"
                    + ("" if address in METADATA_ADDRESSES else
                       " unless the service sets allow_private = true for its own base URL")
                )
        return addresses[0]
