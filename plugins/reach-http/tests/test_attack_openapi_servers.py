"""Attack class: an OpenAPI document's ``servers`` URL is untrusted input (issue 19).

It passes the same checks as a configured ``base_url`` (refused forms are a
configuration error; metadata and private addresses are refused when called),
and ``allow_private`` opens only hosts the operator wrote in config: ``base_url``
and the document's own URL, never a host the document names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server
from reach_http import StaticResolver, build_connectors

from reach_core import ConfigError


def _doc(server_url: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    server: dict[str, Any] = {"url": server_url}
    if variables:
        server["variables"] = variables
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [server],
        "paths": {"/echo/{id}": {"get": {
            "operationId": "getThing", "summary": "Get a thing",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}},
        }}},
    }


def _write(tmp_path: Path, document: dict[str, Any], name: str = "doc.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


BAD_FORMS = [
    "http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://127.1/", "http://2852039166/",
    "http://0xa9fea9fe/latest", "http://169.254.43518/", "http://0251.0376.0251.0376/",
    "http://%31%32%37.0.0.1/", "http://[fe80::1%25eth0]/", "http://[::ffff:a9fe:a9fe%25lo]/",
    "file:///etc/passwd", "ftp://files.example.com/", "gopher://127.0.0.1:25/", "ws://api.example.com/",
    "javascript:alert(1)", "http://bad host/", "http://exa mple.com/",
]


@pytest.mark.parametrize("url", BAD_FORMS)
def test_document_server_in_a_refused_form_is_a_config_error(url: str, tmp_path: Path) -> None:
    doc = _write(tmp_path, _doc(url))
    with pytest.raises(ConfigError):
        build_connectors({"services": {"svc": {"openapi": doc, "allow_private": True}}})


@pytest.mark.parametrize(
    ("url", "variables"),
    [("http://{host}/", {"host": {"default": "2130706433"}}),
     ("{scheme}://api.example.com/", {"scheme": {"default": "file"}}),
     ("http://{a}.{b}/", {"a": {"default": "0x7f"}, "b": {"default": "1"}})],
)
def test_server_variables_cannot_build_a_refused_form(url: str, variables: dict[str, Any], tmp_path: Path) -> None:
    doc = _write(tmp_path, _doc(url, variables))
    with pytest.raises(ConfigError):
        build_connectors({"services": {"svc": {"openapi": doc, "allow_private": True}}})


PRIVATE_HOSTS = ["127.0.0.1", "127.0.0.2", "[::1]", "[::ffff:127.0.0.1]", "localhost.test", "intranet.test"]


@pytest.mark.parametrize("host", PRIVATE_HOSTS)
async def test_allow_private_does_not_open_a_host_the_document_names(host: str, server: Server, make,
                                                                      tmp_path: Path) -> None:
    resolver = StaticResolver({"localhost.test": ["127.0.0.1"], "intranet.test": ["::ffff:127.0.0.1"]})
    doc = _write(tmp_path, _doc(f"http://{host}:{server.port}"))
    reach = make({"services": {"svc": {"openapi": doc, "allow_private": True}}}, resolver=resolver)
    result = await reach.invoke("getThing", {"id": "1"})
    assert not result.ok and result.error.code == "execution_failed", result
    assert "refused" in result.error.message
    assert server.state.requests == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost.test"])
async def test_the_same_host_written_by_the_operator_as_base_url_is_opened(host: str, server: Server, make,
                                                                            tmp_path: Path) -> None:
    resolver = StaticResolver({"localhost.test": ["127.0.0.1"]})
    doc = _write(tmp_path, _doc("https://api.example.com/"))
    reach = make({"services": {"svc": {"openapi": doc, "base_url": f"http://{host}:{server.port}",
                                       "allow_private": True}}}, resolver=resolver)
    result = await reach.invoke("getThing", {"id": "1"})
    assert result.ok, result.error
    assert server.state.requests[-1]["path"] == "/echo/1"


@pytest.mark.parametrize(
    "server_url",
    ["http://169.254.169.254/", "http://[::ffff:169.254.169.254]/", "http://[64:ff9b::a9fe:a9fe]/",
     "http://169.254.170.23/", "http://[fd00:ec2::23]/", "http://metadata.google.internal/",
     "http://METADATA.google.internal./", "http://100.100.100.200/", "http://192.0.0.192/"],
)
async def test_document_server_on_metadata_is_refused_when_called(server_url: str, make, tmp_path: Path) -> None:
    doc = _write(tmp_path, _doc(server_url))
    reach = make({"services": {"svc": {"openapi": doc, "allow_private": True}}})
    result = await reach.invoke("getThing", {"id": "1"})
    assert not result.ok and "never calls" in result.error.message


@pytest.mark.parametrize("where", ["other-port", "other-host", "absolute-same-origin"])
async def test_document_fetched_from_an_allowed_url_may_only_point_at_that_origin(where: str, server: Server,
                                                                                 make) -> None:
    """The operator wrote the document's URL: its origin is opened, a different one named inside is not."""
    other = Server()
    try:
        target = {
            "other-port": f"http://127.0.0.1:{other.port}",
            "other-host": f"http://docs.test:{server.port}",
            "absolute-same-origin": f"http://127.0.0.1:{server.port}",
        }[where]
        server.state.documents["/doc.json"] = json.dumps(_doc(target)).encode()
        reach = make({"services": {"svc": {"openapi": f"http://127.0.0.1:{server.port}/doc.json",
                                           "allow_private": True}}},
                     resolver=StaticResolver({"docs.test": ["127.0.0.1"]}))
        result = await reach.invoke("getThing", {"id": "7"})
        if where == "absolute-same-origin":
            assert result.ok, result.error
            assert server.state.requests[-1]["path"] == "/echo/7"
        else:
            assert not result.ok and "refused" in result.error.message
            assert [r["path"] for r in server.state.requests] == ["/doc.json"]
            assert other.state.requests == []
    finally:
        other.stop()


async def test_redirect_from_a_document_server_does_not_inherit_allow_private(server: Server, make,
                                                                               tmp_path: Path) -> None:
    doc = _write(tmp_path, _doc("https://api.example.com/"))
    reach = make({"services": {"svc": {"openapi": doc, "base_url": f"http://127.0.0.1:{server.port}",
                                       "allow_private": True, "generic": True}}},
                 resolver=StaticResolver({"evil.test": ["10.0.0.5"]}))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": "http://evil.test/admin"}})
    assert not result.ok and "10.0.0.5" in result.error.message


@pytest.mark.parametrize("url", ["http://2852039166/", "http://0x7f.1/", "file:///etc/passwd", "http://%31.2.3.4/"])
def test_import_command_refuses_a_document_server_in_a_refused_form(url: str, tmp_path: Path) -> None:
    from click.testing import CliRunner
    from reach_http.cli import http_group

    doc = _write(tmp_path, _doc(url))
    result = CliRunner().invoke(http_group, ["import", doc, "--service", "svc"])
    assert result.exit_code != 0 and "--base-url" in result.output
    fixed = CliRunner().invoke(http_group, ["import", doc, "--service", "svc", "--base-url", "https://api.example.com"])
    assert fixed.exit_code == 0, fixed.output


def test_import_command_warns_when_allow_private_would_cover_a_host_from_the_document(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from reach_http.cli import http_group

    doc = _write(tmp_path, _doc("http://10.0.0.9:8080/api"))
    result = CliRunner().invoke(http_group, ["import", doc, "--service", "svc", "--allow-private"])
    assert result.exit_code == 0, result.output
    assert "comes from the document" in result.output


async def test_exchange_opens_only_the_private_origin_it_is_given(server: Server) -> None:
    import httpx
    from reach_http import AddressGuard, HostRefused
    from reach_http.client import exchange

    guard = AddressGuard(StaticResolver({"other.test": ["127.0.0.1"]}))
    url = httpx.URL(f"http://127.0.0.1:{server.port}/echo/a")
    for kwargs in ({"private_origin": ("http", "127.0.0.1", server.port)},
                   {"private_origins": [("http", "127.0.0.1", server.port)]}):
        raw = await exchange(guard, method="GET", url=url, headers={}, request_timeout=5, **kwargs)
        assert raw.status == 200
        with pytest.raises(HostRefused, match="loopback"):
            await exchange(guard, method="GET", headers={}, request_timeout=5, **kwargs,
                           url=httpx.URL(f"http://127.0.0.1:{server.port}/redirect",
                                         params={"to": f"http://other.test:{server.port}/echo/b"}))
    with pytest.raises(HostRefused, match="loopback"):
        await exchange(guard, method="GET", url=url, headers={}, request_timeout=5)
    assert [r["path"] for r in server.state.requests] == ["/echo/a", "/redirect", "/echo/a", "/redirect"]


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/openapi.json", "http://[::ffff:169.254.169.254]/openapi.json",
     "http://[64:ff9b::a9fe:a9fe]/openapi.json", "http://metadata.google.internal/openapi.json",
     "http://METADATA.GOOGLE.INTERNAL./openapi.json", "http://169.254.170.23/openapi.json",
     "http://[fd00:ec2::254]/openapi.json", "http://100.100.100.200/openapi.json"],
)
def test_a_document_url_on_metadata_is_refused_even_with_allow_private(url: str) -> None:
    with pytest.raises(ConfigError, match="never calls"):
        build_connectors({"services": {"svc": {"openapi": url, "allow_private": True}}})
