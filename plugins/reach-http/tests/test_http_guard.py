"""The SSRF guard: which addresses and hosts are refused, pinning, redirects, TLS.

Nothing here sends traffic anywhere but 127.0.0.1: public-looking names are only
ever checked (through an injected resolver), never connected to.
"""

from __future__ import annotations

import ipaddress
import json

import pytest
from http_testserver import Server, local
from reach_http import AddressGuard, HostRefused, StaticResolver, build_connectors, refusal_reason
from reach_http.guard import parse_host

from reach_core import ConfigError

REFUSED = {
    "127.0.0.1": "loopback",
    "127.8.9.10": "loopback",
    "10.1.2.3": "private",
    "172.16.5.4": "private",
    "192.168.1.1": "private",
    "169.254.10.20": "link-local",
    "169.254.169.254": "metadata",
    "100.64.0.1": "carrier-grade NAT",
    "100.127.255.254": "carrier-grade NAT",
    "224.0.0.1": "multicast",
    "0.0.0.0": "unspecified",
    "240.0.0.1": "reserved",
    "255.255.255.255": "",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fc00::1": "private",
    "fd00:ec2::254": "metadata",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "IPv4-mapped",
    "::ffff:8.8.8.8": "IPv4-mapped",
    "2002:7f00:1::": "embedding",
}


@pytest.mark.parametrize("address", sorted(REFUSED))
def test_non_public_addresses_are_refused_with_a_named_reason(address: str) -> None:
    reason = refusal_reason(ipaddress.ip_address(address))
    assert reason is not None
    assert REFUSED[address] in reason


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "100.128.0.1"])
def test_public_addresses_pass(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "host", ["2130706433", "0177.0.0.1", "0x7f.1", "0x7f000001", "127.1", "017700000001", "0x7f.0.0.1",
             "1.2.3.04", "example.123"],
)
def test_numeric_host_tricks_are_refused(host: str) -> None:
    with pytest.raises(HostRefused, match="non-standard form"):
        parse_host(host)


def test_host_forms() -> None:
    assert parse_host("127.0.0.1") == ipaddress.ip_address("127.0.0.1")
    assert parse_host("[::1]") == ipaddress.ip_address("::1")
    assert parse_host("api.example.com") is None
    with pytest.raises(HostRefused, match="zone"):
        parse_host("fe80::1%eth0")
    with pytest.raises(HostRefused):
        parse_host("bad host")


async def test_names_are_checked_through_the_resolver_without_connecting() -> None:
    resolver = StaticResolver({
        "api.example.com": ["93.184.215.14"],
        "internal.example.com": ["10.0.0.7"],
        "rebind.example.com": ["93.184.215.14", "127.0.0.1"],
        "metadata.example.com": ["169.254.169.254"],
        "mapped.example.com": ["::ffff:10.0.0.1"],
    })
    guard = AddressGuard(resolver)
    assert str(await guard.check("https", "api.example.com", 443, allow_private=False)) == "93.184.215.14"
    with pytest.raises(HostRefused, match=r"internal.example.com \(10.0.0.7\) is a private address"):
        await guard.check("https", "internal.example.com", 443, allow_private=False)
    # one private answer among public ones is enough to refuse (DNS rebinding)
    with pytest.raises(HostRefused, match="loopback"):
        await guard.check("https", "rebind.example.com", 443, allow_private=False)
    with pytest.raises(HostRefused, match="IPv4-mapped"):
        await guard.check("http", "mapped.example.com", 80, allow_private=False)
    # metadata stays refused even for a service that allows private addresses
    with pytest.raises(HostRefused, match="metadata"):
        await guard.check("http", "metadata.example.com", 80, allow_private=True)
    with pytest.raises(HostRefused, match="metadata"):
        await guard.check("http", "169.254.169.254", 80, allow_private=True)
    assert str(await guard.check("http", "internal.example.com", 80, allow_private=True)) == "10.0.0.7"
    with pytest.raises(HostRefused, match="could not be resolved"):
        await guard.check("http", "nowhere.example.com", 80, allow_private=False)
    # each check resolves exactly once
    assert resolver.calls.count("api.example.com") == 1


@pytest.mark.parametrize("scheme", ["ftp", "file", "gopher", "ws", ""])
async def test_only_http_and_https(scheme: str) -> None:
    with pytest.raises(HostRefused, match="only http and https"):
        await AddressGuard(StaticResolver()).check(scheme, "93.184.215.14", 80, allow_private=False)


# ------------------------------------------------------------- through the tools


async def test_loopback_service_is_refused_without_allow_private(server: Server, make) -> None:
    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{server.port}"}}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert not result.ok and result.error.code == "execution_failed"
    assert "loopback" in result.error.message and "allow_private" in result.error.message
    assert server.state.requests == []


@pytest.mark.parametrize("host", ["2130706433", "0177.0.0.1", "0x7f.1"])
def test_numeric_tricks_in_base_url_are_refused_at_setup(host: str) -> None:
    with pytest.raises(ConfigError, match="base_url") as refused:
        build_connectors({"services": {"svc": {"base_url": f"http://{host}:8080", "allow_private": True}}})
    assert isinstance(refused.value, ValueError)  # what pydantic raised before: old callers still catch it


async def test_connects_to_the_checked_address_with_the_name_as_host(server: Server, make) -> None:
    resolver = StaticResolver({"api.test": ["127.0.0.1"]})
    settings = {"services": {"svc": {"base_url": f"http://api.test:{server.port}", "allow_private": True}}}
    reach = make(settings, resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert result.content["body"]["host"] == f"api.test:{server.port}"
    assert resolver.calls == ["api.test"]  # resolved once; the connect used the pinned address


async def test_pinned_name_to_loopback_is_refused_without_allow_private(server: Server, make) -> None:
    resolver = StaticResolver({"api.test": ["127.0.0.1"]})
    reach = make({"services": {"svc": {"base_url": f"http://api.test:{server.port}"}}}, resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert not result.ok and "api.test (127.0.0.1) is a loopback address" in result.error.message
    assert server.state.requests == []


async def test_tls_uses_the_name_for_sni_and_verification(tls_server: Server, tls_material, make) -> None:
    _, bundle = tls_material
    resolver = StaticResolver({"pets.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    base = {"allow_private": True, "verify": str(bundle)}
    reach = make({"services": {
        "good": {**base, "base_url": f"https://pets.test:{tls_server.port}"},
        "wrong": {**base, "base_url": f"https://other.test:{tls_server.port}"},
    }}, resolver=resolver, config={"connectors": {"http_get": {"retries": 0}}})
    ok = await reach.invoke("http_get", {"service": "good", "path": "/echo"})
    assert ok.ok, ok.error
    assert ok.content["body"]["host"] == f"pets.test:{tls_server.port}"
    # same address, but the certificate is not for other.test: verification follows the name
    bad = await reach.invoke("http_get", {"service": "wrong", "path": "/echo"})
    assert not bad.ok and bad.error.code == "upstream_unavailable"
    assert "certificate" in bad.error.message.lower() or "ssl" in bad.error.message.lower()


# ------------------------------------------------------------------ redirects


async def test_same_origin_redirect_is_followed(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect", "query": {"to": "/echo/done"}})
    assert result.ok, result.error
    assert result.content["body"]["path"] == "/echo/done"


@pytest.mark.parametrize(
    "target",
    ["http://169.254.169.254/latest/meta-data/", "file:///etc/passwd", "http://2130706433/", "http://[::1]/",
     "http://0177.0.0.1/", "http://0x7f.1/", "gopher://127.0.0.1:25/"],
)
async def test_redirects_to_forbidden_targets_are_refused(server: Server, make, target: str) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect", "query": {"to": target}})
    assert not result.ok and result.error.code == "execution_failed"
    assert "refused" in result.error.message
    assert server.state.count("GET", "/redirect") == 1


async def test_allow_private_covers_only_the_service_origin(server: Server, make) -> None:
    """A redirect from the allowed private service to another private name is refused."""
    resolver = StaticResolver({"evil.test": ["127.0.0.1"]})
    reach = make({"services": {"svc": local(server)}}, resolver=resolver)
    result = await reach.invoke(
        "http_get", {"service": "svc", "path": "/redirect", "query": {"to": f"http://evil.test:{server.port}/echo"}}
    )
    assert not result.ok and "evil.test (127.0.0.1) is a loopback address" in result.error.message
    assert server.state.count("GET", "/echo") == 0


async def test_redirects_are_bounded(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, max_redirects=3)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/loop"})
    assert not result.ok and "more than 3 redirects" in result.error.message
    assert server.state.count("GET", "/loop") == 4


async def test_redirect_methods_follow_http_rules(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    for code, method, body in ((307, "POST", {"a": 1}), (308, "POST", {"a": 1}), (303, "GET", ""), (302, "GET", "")):
        result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/redirect",
                                                     "query": {"to": "/echo/next", "code": code}, "json": {"a": 1}})
        assert result.ok, result.error
        assert (result.content["body"]["method"], result.content["body"]["body"]) == (method, body), code


class _AllowAll(AddressGuard):
    """A guard that approves every hop: isolates the redirect logic between two local servers."""

    async def check(self, scheme: str, host: str, port: int, *, allow_private: bool):  # type: ignore[override]
        return ipaddress.ip_address("127.0.0.1")


async def test_credentials_are_not_forwarded_to_another_origin() -> None:
    import httpx
    from reach_http.client import exchange

    first, second = Server(), Server()
    try:
        target = f"http://localhost:{second.port}/echo/elsewhere"
        raw = await exchange(
            _AllowAll(), method="GET",
            url=httpx.URL(f"http://127.0.0.1:{first.port}/redirect", params={"to": target}),
            headers={"Authorization": "Bearer secret", "Cookie": "s=1", "X-Plain": "kept"},
            request_timeout=5,
        )
        echoed = json.loads(raw.body)
        assert echoed["path"] == "/echo/elsewhere"
        assert echoed["authorization"] is None and "Cookie" not in echoed["headers"]
        assert echoed["headers"]["X-Plain"] == "kept"
        assert first.state.requests[0]["headers"]["Authorization"] == "Bearer secret"
    finally:
        first.stop()
        second.stop()


async def test_max_redirects_zero_returns_the_redirect_itself(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server, max_redirects=0)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": "http://169.254.169.254/"}})
    assert result.ok and result.content["status"] == 302
    assert result.content["headers"]["location"] == "http://169.254.169.254/"
    assert server.state.count("GET", "/redirect") == 1


async def test_ipv6_literal_service_is_pinned_and_checked(make) -> None:
    try:
        v6 = Server(host="::1")
    except OSError as exc:  # pragma: no cover - a machine without IPv6 loopback
        pytest.skip(f"no IPv6 loopback here: {exc}")
    try:
        allowed = make({"services": {"svc": {"base_url": f"http://[::1]:{v6.port}", "allow_private": True}}})
        result = await allowed.invoke("http_get", {"service": "svc", "path": "/echo"})
        assert result.ok, result.error
        assert result.content["body"]["host"] == f"[::1]:{v6.port}"
        refused = make({"services": {"svc": {"base_url": f"http://[::1]:{v6.port}"}}})
        denied = await refused.invoke("http_get", {"service": "svc", "path": "/echo"})
        assert not denied.ok and "loopback" in denied.error.message
        assert len(v6.state.requests) == 1
    finally:
        v6.stop()


async def test_the_system_resolver_is_checked_too(server: Server, make) -> None:
    """``localhost`` resolves (from /etc/hosts, no network) to loopback: refused without allow_private."""
    from reach_http import SystemResolver

    assert refusal_reason((await SystemResolver().resolve("localhost", 80))[0]) == "a loopback address"
    reach = make({"services": {"svc": {"base_url": f"http://localhost:{server.port}"}}}, resolver=SystemResolver())
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert not result.ok and "loopback" in result.error.message
    assert server.state.requests == []


async def test_the_transport_fails_closed_for_a_host_without_a_pin(server: Server) -> None:
    import httpx
    from reach_http.transport import PinnedTransport

    async with PinnedTransport({}) as transport:
        with pytest.raises(httpx.ConnectError, match="was not checked"):
            await transport.handle_async_request(httpx.Request("GET", f"http://127.0.0.1:{server.port}/echo"))
    assert server.state.requests == []
