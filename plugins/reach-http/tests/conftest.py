"""Fixtures: real HTTP(S) servers on 127.0.0.1 and a Reach holding reach-http's tools."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from http_testserver import RawScript, Server, serve_raw
from reach_http import StaticResolver, build_connectors

from reach_core.testing import make_reach


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def module_server() -> Iterator[Server]:
    srv = Server()
    yield srv
    srv.stop()


@pytest.fixture
def shared_server(module_server: Server) -> Server:
    """One loopback server for the whole module, its record of requests cleared for each
    test: for modules whose tests only read what the server received (a module overrides
    ``server`` with it)."""
    with module_server.state.lock:
        module_server.state.requests.clear()
    return module_server


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[Server, Server]]:
    """Two loopback servers for the module: two ports, so two origins."""
    a, b = Server(), Server()
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture
def two(pair: tuple[Server, Server]) -> tuple[Server, Server]:
    """The module's two servers, with what they received so far forgotten."""
    for srv in pair:
        with srv.state.lock:
            srv.state.requests.clear()
    return pair


@pytest.fixture
def raw_server() -> Iterator[Callable[[RawScript], int]]:
    """``raw_server(script) -> port``: a socket server answering with ``script(conn, head)``'s bytes
    (see :func:`http_testserver.serve_raw`), stopped when the test ends."""
    listeners: list[Any] = []

    def start(script: RawScript) -> int:
        listener, port = serve_raw(script)
        listeners.append(listener)
        return port

    yield start
    for listener in listeners:
        listener.close()


@pytest.fixture(scope="session")
def tls_material(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    """A private CA, a certificate for ``pets.test``; returns (server context, CA bundle path)."""
    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("pets.test")
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    bundle = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return server_ctx, bundle


@pytest.fixture
def tls_server(tls_material: tuple[ssl.SSLContext, Path]) -> Iterator[Server]:
    srv = Server(ssl_context=tls_material[0])
    yield srv
    srv.stop()


@pytest.fixture
def make(tmp_path: Path) -> Callable[..., Any]:
    """``make(settings_dict, resolver=None, config=None)`` -> a Reach with the built tools registered."""
    made: list[Any] = []

    def factory(settings: dict[str, Any], resolver: Any = None, config: dict[str, Any] | None = None) -> Any:
        cfg = {"reach": {"data_dir": str(tmp_path / "data"), "retry_backoff": 0.01}}
        cfg.update(config or {})
        reach = make_reach(config=cfg)
        for tool in build_connectors(settings, resolver=resolver or StaticResolver()):
            reach.register(tool)
        made.append(reach)
        return reach

    return factory

