"""Attack class: cloud metadata and credential endpoints, in every spelling (issue 19).

Refused always: with ``allow_private``, as literals in any numeric or IPv6 form, as
names, and as what a name resolves to. Families are generated from the list of
metadata addresses so a new address gets every encoding for free. Calls go through
the real tools; where a request could otherwise land (a name the resolver seam maps
to the loopback test server) the server proves nothing arrived.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from http_testserver import Server
from reach_http import AddressGuard, HostRefused, StaticResolver, build_connectors
from reach_http.guard import (
    METADATA_ADDRESSES,
    always_refused_reason,
    embedded_ipv4,
    metadata_name,
    parse_host,
    refusal_reason,
)

from reach_core import ConfigError

V4_METADATA = sorted(str(a) for a in METADATA_ADDRESSES if a.version == 4)
V6_METADATA = sorted(str(a) for a in METADATA_ADDRESSES if a.version == 6)
LINK_LOCAL_SAMPLES = ["169.254.0.1", "169.254.1.1", "169.254.42.42", "169.254.255.254", "169.254.170.3"]
NEVER = "never calls"


@pytest.fixture
def server(shared_server: Server) -> Server:
    return shared_server  # one server for the module (see conftest)


def _v6_embeddings(v4: str) -> dict[str, str]:
    """``v4`` wrapped in each IPv6 form that can carry it."""
    n = int(ipaddress.IPv4Address(v4))
    hi, lo = n >> 16, n & 0xFFFF
    x = n ^ 0xFFFFFFFF
    a, b, c, d = (int(p) for p in v4.split("."))
    return {
        "mapped": f"::ffff:{v4}",
        "mapped-hex": f"::ffff:{hi:x}:{lo:x}",
        "mapped-long": f"0:0:0:0:0:ffff:{v4}",
        "mapped-upper": f"::FFFF:{hi:X}:{lo:X}",
        "compatible": f"::{v4}",
        "compatible-hex": f"::{hi:x}:{lo:x}",
        "translated": f"::ffff:0:{v4}",
        "nat64": f"64:ff9b::{v4}",
        "nat64-hex": f"64:ff9b::{hi:x}:{lo:x}",
        "nat64-local-96": f"64:ff9b:1::{v4}",
        "nat64-local-64": f"64:ff9b:1:0:{a:x}:{(b << 8) | c:x}:{d << 8:x}::",
        "nat64-local-56": f"64:ff9b:1:{a:x}:{b:x}:{(c << 8) | d:x}::",
        "nat64-local-48": f"64:ff9b:1:{hi:x}:{lo >> 8:x}:{(lo & 0xFF) << 8:x}::",
        "6to4": f"2002:{hi:x}:{lo:x}::1",
        "6to4-host": f"2002:{hi:x}:{lo:x}:1:2:3:4:5",
        "teredo-client": f"2001:0:4136:e378:8000:63bf:{x >> 16:x}:{x & 0xFFFF:x}",
        "teredo-server": f"2001:0:{hi:x}:{lo:x}:8000:63bf:3fff:fdd2",
        "isatap": f"2600:1f18::5efe:{v4}",
        "isatap-global-bit": f"2600:1f18::200:5efe:{v4}",
        "isatap-link-local": f"fe80::5efe:{v4}",
        "nsp-96": f"2001:db8:64::{v4}",
        "nsp-64": f"2001:db8:122:344:{a:x}:{(b << 8) | c:x}:{d << 8:x}:0",
    }


EMBEDDED = [(v4, form, text) for v4 in V4_METADATA for form, text in _v6_embeddings(v4).items()]
EMBEDDED_LINK_LOCAL = [
    (v4, form, text) for v4 in LINK_LOCAL_SAMPLES for form, text in _v6_embeddings(v4).items()
    if not form.startswith("nsp")  # unknown NAT64 prefixes: only exact metadata addresses are recognised
]


def _numeric_spellings(v4: str) -> list[str]:
    """``v4`` as decimal, octal, hex, short and mixed forms inet_aton or a browser would accept."""
    n = int(ipaddress.IPv4Address(v4))
    a, b, c, d = (int(p) for p in v4.split("."))
    return [
        str(n), hex(n), hex(n).upper().replace("X", "x"), "0x" + f"{n:08x}".upper(), oct(n).replace("o", ""),
        f"0{a:o}.0{b:o}.0{c:o}.0{d:o}", f"00{a:o}.00{b:o}.00{c:o}.00{d:o}",
        f"0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}", f"0X{a:X}.0X{b:X}.0X{c:X}.0X{d:X}",
        f"{a}.{b}.{(c << 8) | d}", f"{a}.{(b << 16) | (c << 8) | d}", f"0x{a:x}.{b}.0{c:o}.{d}",
        f"{a}.{b}.{c}.0{d:o}", f"{a}.{b}.{c}.0x{d:x}", f"{a}.{b}.0x{(c << 8) | d:x}",
        f"{a}.{b}.{(c << 8) | d}.", f"{n}.", f"0x{n:x}.",
    ]


SPELLINGS = [(v4, s) for v4 in V4_METADATA for s in _numeric_spellings(v4)]


# ------------------------------------------------------------ address normalisation


@pytest.mark.parametrize("address", V4_METADATA + V6_METADATA + LINK_LOCAL_SAMPLES + ["fe80::1", "fd00:ec2::1"])
def test_metadata_and_link_local_addresses_are_refused_always(address: str) -> None:
    assert always_refused_reason(ipaddress.ip_address(address)) is not None
    assert refusal_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize(("v4", "form", "text"), EMBEDDED + EMBEDDED_LINK_LOCAL)
def test_every_ipv6_form_embedding_a_metadata_address_is_refused_always(v4: str, form: str, text: str) -> None:
    address = ipaddress.IPv6Address(text)
    reason = always_refused_reason(address)
    assert reason is not None, (form, text)
    assert v4 in reason or "link-local" in reason


@pytest.mark.parametrize(("v4", "form", "text"), [e for e in EMBEDDED if not e[1].startswith(("nsp", "isatap-link"))])
def test_embedded_ipv4_is_extracted(v4: str, form: str, text: str) -> None:
    assert ipaddress.IPv4Address(v4) in [inner for _, inner in embedded_ipv4(ipaddress.IPv6Address(text))]


@pytest.mark.parametrize(
    "text", ["::ffff:10.0.0.1", "64:ff9b::10.0.0.1", "64:ff9b::127.0.0.1", "2002:c0a8:101::1", "2002:7f00:1::",
             "2001:0:4136:e378:8000:63bf:f5ff:fffe", "2600:1f18::5efe:10.1.2.3", "64:ff9b:1::8.8.8.8",
             "::ffff:0:192.168.1.1", "::10.0.0.1"],
)
def test_embedded_private_addresses_are_not_public(text: str) -> None:
    address = ipaddress.IPv6Address(text)
    assert refusal_reason(address) is not None
    assert always_refused_reason(address) is None  # private, not metadata: allow_private may open it


@pytest.mark.parametrize("text", ["64:ff9b::8.8.8.8", "2002:808:808::1", "2606:4700:4700::1111", "93.184.215.14",
                                  "2600:1f18::1", "169.255.169.254", "169.253.169.254"])
def test_public_addresses_and_public_embeddings_pass(text: str) -> None:
    assert refusal_reason(ipaddress.ip_address(text)) is None


# ------------------------------------------------------------ host spellings


@pytest.mark.parametrize(("v4", "spelling"), SPELLINGS)
async def test_numeric_spellings_of_metadata_hosts_are_refused(v4: str, spelling: str) -> None:
    resolver = StaticResolver({spelling.lower(): ["93.184.215.14"]})
    with pytest.raises(HostRefused) as caught:
        await AddressGuard(resolver).check("http", spelling, 80, allow_private=True)
    message = str(caught.value)
    assert "metadata" in message or "link-local" in message or "non-standard" in message
    if spelling.rstrip(".") != v4:
        assert v4 in message  # the model is told what the spelling means
    assert resolver.calls == []


def _encoded_variants(v4: str) -> list[str]:
    percent = "".join(f"%{ord(ch):02x}" for ch in v4)
    return [
        percent, percent.upper(), v4.replace(".", "%2e"), v4.replace(".", "%2E"), "%25" + percent[1:],
        f"[::ffff:{v4}%25eth0]", "[fe80::1%25eth0]", "[fe80::a9fe:a9fe%25lo]",
    ]


@pytest.mark.parametrize("host", [h for v4 in V4_METADATA for h in _encoded_variants(v4)])
def test_encoded_and_zoned_hosts_are_refused(host: str) -> None:
    with pytest.raises(HostRefused):
        parse_host(host)


NAME_VARIANTS = [
    "metadata.google.internal", "METADATA.GOOGLE.INTERNAL", "Metadata.Google.Internal", "metadata.google.internal.",
    "metadata.google.internal..", "metadata", "METADATA.", "metadata.goog", "instance-data",
    "instance-data.ec2.internal", "x.metadata.google.internal", "a.b.metadata.google.internal.",
    "metadata.tencentyun.com", "metadata.google.internal%2e", "%6detadata.google.internal",
    "metadata%2egoogle%2einternal", "metadata\u3002google\u3002internal", "metadata\uff0egoogle\uff0einternal",
    "\uff4d\uff45\uff54\uff41\uff44\uff41\uff54\uff41.google.internal", "META\u0044ATA.google.internal",
]


@pytest.mark.parametrize("host", NAME_VARIANTS)
async def test_metadata_names_are_refused_before_resolving(host: str) -> None:
    assert metadata_name(host) is not None
    resolver = StaticResolver({host.lower().rstrip("."): ["93.184.215.14"]})
    with pytest.raises(HostRefused):
        await AddressGuard(resolver).check("http", host, 80, allow_private=True)
    assert resolver.calls == []


@pytest.mark.parametrize("answer", V4_METADATA + V6_METADATA + [t for _, _, t in EMBEDDED][::3] + LINK_LOCAL_SAMPLES)
async def test_names_resolving_to_metadata_are_refused_even_among_public_answers(answer: str) -> None:
    guard = AddressGuard(StaticResolver({"innocent.example.com": ["93.184.215.14", answer]}))
    with pytest.raises(HostRefused, match=NEVER):
        await guard.check("https", "innocent.example.com", 443, allow_private=True)


# ------------------------------------------------------------ through the real tools


def _svc(base_url: str, **extra: Any) -> dict[str, Any]:
    return {"services": {"svc": {"base_url": base_url, "allow_private": True, **extra}}}


@pytest.mark.parametrize(
    "literal", [f"[{t}]" for _, _, t in EMBEDDED][::2] + V4_METADATA + [f"[{a}]" for a in V6_METADATA]
    + LINK_LOCAL_SAMPLES + [f"{a}." for a in V4_METADATA],
)
async def test_allow_private_service_on_a_metadata_literal_is_refused(literal: str, make) -> None:
    reach = make(_svc(f"http://{literal}:8080"), config={"connectors": {"http_get": {"retries": 0}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/latest/meta-data/iam"})
    assert not result.ok and result.error.code == "execution_failed", result.error
    assert NEVER in result.error.message and "do not retry" in result.error.message


@pytest.mark.parametrize(("v4", "spelling"), SPELLINGS[::2])
def test_numeric_metadata_spellings_in_base_url_are_a_config_error(v4: str, spelling: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        build_connectors(_svc(f"http://{spelling}:8080"))


@pytest.mark.parametrize("name", [n for n in NAME_VARIANTS if "%" not in n and "\uff4d" not in n])
async def test_metadata_name_pointing_at_a_live_server_gets_nothing(name: str, server: Server, make) -> None:
    """The resolver seam sends the name to the loopback server: without the name rule it would answer."""
    import httpx

    host = httpx.URL(f"http://{name}/").raw_host.decode("ascii")
    resolver = StaticResolver({host.rstrip(".").lower(): ["127.0.0.1"]})
    try:
        reach = make(_svc(f"http://{name}:{server.port}"), resolver=resolver)
    except ConfigError as exc:  # not even a valid host name: refused when the settings load
        assert "base_url" in str(exc)
    else:
        result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
        assert not result.ok and NEVER in result.error.message, result
    assert server.state.requests == [] and resolver.calls == []


@pytest.mark.parametrize("answer", [t for _, _, t in EMBEDDED][1::3] + V4_METADATA + V6_METADATA)
async def test_service_name_resolving_to_metadata_is_refused_with_allow_private(answer: str, server: Server,
                                                                               make) -> None:
    resolver = StaticResolver({"api.test": [answer]})
    reach = make(_svc(f"http://api.test:{server.port}"), resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert not result.ok and NEVER in result.error.message
    assert server.state.requests == []


async def test_control_the_resolver_seam_reaches_the_server_for_a_mapped_loopback(server: Server, make) -> None:
    """The seam is live: the same set-up with an IPv4-mapped loopback answer connects."""
    resolver = StaticResolver({"api.test": ["::ffff:127.0.0.1"]})
    reach = make(_svc(f"http://api.test:{server.port}"), resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert len(server.state.requests) == 1


REDIRECT_TARGETS = (
    [f"http://[{t}]/latest/meta-data/" for _, _, t in EMBEDDED][::2]
    + [f"http://{s}/latest/meta-data/" for _, s in SPELLINGS][::2]
    + [f"http://{n}/computeMetadata/v1/" for n in NAME_VARIANTS if n.isascii()]
    + [f"http://{h}/" for v4 in V4_METADATA[:3] for h in _encoded_variants(v4)]
    + ["http://169.254.169.254/", "HTTP://169.254.169.254/", "http://169.254.170.23/v1/credentials",
       "http://[fd00:ec2::23]/", "http://[FD00:EC2::254]/", "http://100.100.100.200/", "http://192.0.0.192/",
       "http://user:pw@169.254.169.254/", "//169.254.169.254/",
       "http://169.254.169.254:80/", "http://[::ffff:169.254.169.254]:8080/"]
)


@pytest.mark.parametrize("target", REDIRECT_TARGETS)
async def test_redirects_to_metadata_in_any_spelling_are_refused(target: str, server: Server, make) -> None:
    resolver = StaticResolver({})
    reach = make(_svc(f"http://127.0.0.1:{server.port}"), resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect", "query": {"to": target}})
    assert not result.ok and result.error.code == "execution_failed", result
    assert "refused" in result.error.message
    assert [r["path"] for r in server.state.requests] == ["/redirect"]


@pytest.mark.parametrize("answer", [f"{a}%eth0" for a in V6_METADATA] + ["fe80::a9fe:a9fe%1", "fd00:ec2::254%lo"])
async def test_scoped_answers_are_judged_without_their_scope(answer: str) -> None:
    assert always_refused_reason(ipaddress.ip_address(answer)) is not None
    guard = AddressGuard(StaticResolver({"api.test": [answer]}))
    with pytest.raises(HostRefused, match=NEVER):
        await guard.check("http", "api.test", 80, allow_private=True)
