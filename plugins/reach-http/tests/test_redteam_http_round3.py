"""Red-team round 3: the SSRF guard's edges that earlier rounds did not walk.

Families, many variants each, through the tools and real servers on 127.0.0.1:

* **resolution deadline**: a name whose DNS never answers (the service's own host, a
  redirect target) ends at the service's ``timeout`` as "nothing was sent", not at
  the tool's much later deadline as an unknown outcome;
* **header values reach writes itself**: an idempotency key (or a tool-call id it is
  made from) with non-ASCII text, CR/LF, NUL or other controls is sent as one line
  of ASCII, never a crash, a second header or a smuggled request;
* **oversized URLs**: a path or query too long for any URL is ``invalid_arguments``,
  nothing sent (it was an internal error);
* **redirect targets a browser reads as another host**: ``http:\\\\127.0.0.1/`` is a
  path on the same host to httpx and the host ``127.0.0.1`` to a browser; refused;
* families that held (no change to the code, kept as regressions): environment
  proxies, DNS answers that change between hops, names that resolve to loopback
  through the system resolver (``/etc/hosts``), userinfo and fragment tricks in a
  redirect.

Positive controls beside each family keep honest calls working.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server, local
from reach_http import StaticResolver, SystemResolver

from reach_core import ToolCall

# --------------------------------------------------------------------------- helpers


class _Hanging(StaticResolver):
    """A resolver whose answer for ``hang`` names never comes (a DNS server that does not answer)."""

    def __init__(self, table: dict[str, list[str]], hang: set[str]) -> None:
        super().__init__(table)
        self.hang = hang

    async def resolve(self, host: str, port: int) -> list[Any]:
        if host.rstrip(".").lower() in self.hang:
            self.calls.append(host)
            await asyncio.Event().wait()
        return await super().resolve(host, port)


def _quick(tool: str, seconds: float = 4) -> dict[str, Any]:
    """Core settings: the tool's own deadline short, no automatic retries (keeps a failing run short)."""
    return {"connectors": {tool: {"timeout": seconds, "retries": 0}}}


def _paths(server: Server) -> list[str]:
    return [r["path"] for r in server.state.requests]


# --------------------------------------------------------------------------- 1. resolution deadline

SLOW_FIRST_HOP = [("http_get", "GET"), ("http_request", "POST"), ("http_request", "PUT"), ("http_request", "PATCH")]


@pytest.mark.parametrize(("tool", "method"), SLOW_FIRST_HOP)
async def test_a_service_name_that_never_resolves_ends_at_the_service_timeout(
    tool: str, method: str, server: Server, make
) -> None:
    resolver = _Hanging({}, {"slow.test"})
    reach = make({"services": {"svc": {"base_url": f"http://slow.test:{server.port}", "timeout": 1}}},
                 resolver=resolver, config=_quick(tool))
    args: dict[str, Any] = {"service": "svc", "path": "/echo"}
    if tool == "http_request":
        args |= {"method": method, "json": {"a": 1}}
    result = await reach.invoke(tool, args)
    assert not result.ok
    # the service's 1 s, not the tool's 4 s deadline: nothing was sent, so the model may send again
    assert result.error.code == "upstream_unavailable", result.error
    assert "nothing was sent" in result.error.message and "within 1 s" in result.error.message
    assert server.state.requests == []


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
async def test_a_redirect_to_a_name_that_never_resolves_ends_at_the_service_timeout(
    code: int, server: Server, make
) -> None:
    resolver = _Hanging({}, {"slow.test"})
    reach = make({"services": {"svc": local(server, timeout=1)}}, resolver=resolver, config=_quick("http_get"))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": f"http://slow.test:{server.port}/landed", "code": code}})
    assert not result.ok and result.error.code == "upstream_unavailable", result.error
    assert "within 1 s" in result.error.message
    assert _paths(server) == ["/redirect"]


async def test_a_name_that_resolves_in_time_still_works(server: Server, make) -> None:
    resolver = _Hanging({"fast.test": ["127.0.0.1"]}, {"slow.test"})
    reach = make({"services": {"svc": {"base_url": f"http://fast.test:{server.port}", "timeout": 1,
                                       "allow_private": True}}}, resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert result.content["body"]["host"] == f"fast.test:{server.port}"


# --------------------------------------------------------------------------- 2. header values reach writes

KEYS = {  # an idempotency key a caller or an agent framework may hand over (printable, not ASCII)
    "cyrillic": "ключ-1",
    "accent": "k\u00e9y",
    "cjk": "\u952e-42",
    "emoji": "run \U0001f600",
    "percent-and-accent": "50%-\u00e9",
}
CALL_IDS = {  # a tool-call id, as a model API or a bridge passes it on (never checked by the core)
    "crlf-header": "call_1\r\nX-Evil: 1",
    "lf-request": "call_1\n\nGET /admin HTTP/1.1\nHost: 127.0.0.1",
    "nul": "call\x00x",
    "del": "call\x7fx",
    "accent": "call_\u00e9",
    "line-separator": "call\u2028x",
    "tab": "call\tx",
}


def _one_line_ascii(value: str) -> bool:
    return all(" " <= c <= "~" for c in value)


@pytest.mark.parametrize("name", sorted(KEYS))
async def test_an_idempotency_key_that_is_not_ascii_is_sent_as_one_ascii_line(name: str, server: Server,
                                                                               make) -> None:
    reach = make({"services": {"svc": local(server)}})
    key = KEYS[name]
    sent = []
    for _ in range(2):  # the same key gives the same header value: receivers can still de-duplicate
        result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/echo",
                                                     "json": {"a": 1}}, idempotency_key=key)
        assert result.ok, result.error
        sent.append(result.content["body"]["headers"]["Idempotency-Key"])
    assert sent[0] == sent[1] and _one_line_ascii(sent[0]) and sent[0] != key


@pytest.mark.parametrize("name", sorted(CALL_IDS))
async def test_a_tool_call_id_with_controls_never_splits_the_request(name: str, server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    [result] = await reach.invoke_many(
        [ToolCall("http_request", {"service": "svc", "method": "POST", "path": "/echo", "json": {"a": 1}},
                  id=CALL_IDS[name])], run_id="run-1")
    assert result.ok, result.error
    headers = result.content["body"]["headers"]
    key = headers["Idempotency-Key"]
    assert _one_line_ascii(key) and key.startswith("7:default:5:run-1:call")  # agent, run id, call id
    assert "X-Evil" not in headers
    assert _paths(server) == ["/echo"]  # one request, nothing smuggled behind it


def test_distinct_keys_stay_distinct_and_ascii_keys_unchanged() -> None:
    from reach_http.headers import header_value

    keys = ["order-42", "run:call_1", "k\u00e9y", "k%C3%A9y", "a b", "x\r\ny", "x%0D%0Ay", "100%"]
    values = [header_value(k) for k in keys]
    assert len(set(values)) == len(keys) and all(_one_line_ascii(v) for v in values)
    assert values[:2] + values[4:5] == ["order-42", "run:call_1", "a b"]


async def test_an_ascii_idempotency_key_is_sent_as_written(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/echo",
                                                 "json": {"a": 1}}, idempotency_key="order-42:try 1")
    assert result.ok and result.content["body"]["headers"]["Idempotency-Key"] == "order-42:try 1"


# --------------------------------------------------------------------------- 3. oversized URLs

OVERSIZED = {
    "path": {"path": "/echo/" + "a" * 70_000},
    "path-of-escapes": {"path": "/echo/" + "%41" * 23_000},
    "query-value": {"path": "/echo", "query": {"q": "x" * 70_000}},
    "query-many": {"path": "/echo", "query": {f"k{i}": "v" * 10 for i in range(6_000)}},
    "query-list": {"path": "/echo", "query": {"q": ["y" * 100] * 700}},
    "query-escapes": {"path": "/echo", "query": {"q": "\u00e9" * 12_000}},
}


@pytest.mark.parametrize("name", sorted(OVERSIZED))
async def test_a_url_too_long_for_any_server_is_invalid_arguments(name: str, server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", **OVERSIZED[name]})
    assert not result.ok and result.error.code == "invalid_arguments", result.error
    assert "internal error" not in result.error.message
    assert server.state.requests == []


async def test_an_openapi_path_parameter_too_long_is_invalid_arguments(server: Server, make,
                                                                         tmp_path: Path) -> None:
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps({
        "openapi": "3.0.3", "info": {"title": "t", "version": "1"},
        "paths": {"/echo/{id}": {"get": {
            "operationId": "getItem", "summary": "Get an item",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                           {"name": "q", "in": "query", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "ok"}}}}},
    }))
    reach = make({"services": {"svc": {**local(server), "openapi": str(doc)}}})
    for args in ({"id": "/" * 30_000}, {"id": "1", "q": "\u00e9" * 12_000}):
        result = await reach.invoke("getItem", args)
        assert not result.ok and result.error.code == "invalid_arguments", result.error
    honest = await reach.invoke("getItem", {"id": "a" * 4_000, "q": "b" * 4_000})
    assert honest.ok, honest.error
    assert _paths(server) == ["/echo/" + "a" * 4_000]


async def test_long_but_honest_urls_still_arrive(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo/" + "a" * 8_000,
                                             "query": {"q": "x" * 8_000}})
    assert result.ok, result.error
    assert _paths(server) == ["/echo/" + "a" * 8_000]


# --------------------------------------------------------------------------- 4. redirect targets read two ways

TWO_READINGS = [
    "http:\\\\127.0.0.1:{p}/landed", "http:/\\127.0.0.1:{p}/landed", "http:\\/127.0.0.1:{p}/landed",
    "HTTP:\\\\127.0.0.1:{p}\\landed", "HtTp:\\\\localhost:{p}/landed", "http:\\\\169.254.169.254/landed",
    "http:/landed\\..\\admin", "https:\\\\127.0.0.1:{p}/landed",
]


@pytest.mark.parametrize("target", TWO_READINGS)
async def test_a_scheme_relative_backslash_redirect_is_refused(target: str, server: Server, make) -> None:
    """``http:\\\\h/`` is the host ``h`` to a browser and a path on the same host to httpx: no reading wins."""
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": target.format(p=server.port)}})
    assert not result.ok and result.error.code == "execution_failed", result.content
    assert "backslash" in result.error.message
    assert _paths(server) == ["/redirect"]


@pytest.mark.parametrize("target", ["http:/echo/landed", "http:echo/landed", "/echo/landed", "echo/landed",
                                    "//127.0.0.1:{p}/echo/landed", "./echo/landed"])
async def test_same_origin_relative_redirects_still_work(target: str, server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": target.format(p=server.port)}})
    assert result.ok, result.error
    assert result.content["body"]["path"] == "/echo/landed"


# --------------------------------------------------------------------------- 5. families that held

PROXY_VARS = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]


@pytest.fixture
def proxy() -> Iterator[list[str]]:
    """A loopback 'proxy' recording every request line (the first entry is its own URL)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_CONNECT = _any

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    seen.append(f"http://127.0.0.1:{httpd.server_address[1]}")
    yield seen
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("var", PROXY_VARS)
async def test_environment_proxies_are_never_used(var: str, proxy: list[str], server: Server, make,
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in PROXY_VARS + ["NO_PROXY", "no_proxy"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(var, proxy[0])
    # the OpenAPI document is fetched at set-up through the same path
    reach = make({"services": {"svc": local(server, generic=True, openapi=f"http://127.0.0.1:{server.port}/openapi.json",
                                            operations=["getPetById"])}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo"})
    assert result.ok, result.error
    assert proxy[1:] == [] and _paths(server) == ["/openapi.json", "/echo"]


FLIPS = ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254", "100.100.100.200", "fe80::1"]


@pytest.mark.parametrize("answer", FLIPS)
async def test_a_dns_answer_that_changes_between_hops_is_checked_again(answer: str, server: Server, make) -> None:
    """Same origin, second hop: the name is resolved and checked again, not trusted from the first."""

    class Flipping(StaticResolver):
        async def resolve(self, host: str, port: int) -> list[Any]:
            first = await super().resolve(host, port)
            self.table[host.rstrip(".").lower()] = [answer]
            return first

    resolver = Flipping({"svc.test": ["127.0.0.1"]})
    reach = make({"services": {"svc": {"base_url": f"http://svc.test:{server.port}", "allow_private": True}}},
                 resolver=resolver)
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect", "query": {"to": "/echo/x"}})
    assert not result.ok and str(ipaddress.ip_address(answer)) in result.error.message
    assert resolver.calls == ["svc.test", "svc.test"] and _paths(server) == ["/redirect"]


LOOPBACK_NAMES = ["localhost", "localhost.", "LOCALHOST", "LocalHost.", socket.gethostname()]


@pytest.mark.parametrize("name", LOOPBACK_NAMES)
async def test_names_resolving_to_loopback_through_the_system_resolver_are_refused(name: str, server: Server,
                                                                                    make) -> None:
    """``/etc/hosts`` maps these to 127.0.0.1 (or the name does not resolve): either way nothing arrives."""
    reach = make({"services": {"svc": local(server)}}, resolver=SystemResolver())
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": f"http://{name}:{server.port}/landed"}})
    assert not result.ok, result.content
    assert _paths(server) == ["/redirect"]


USERINFO = [
    "http://allowed.test@127.0.0.1:{p}/landed", "http://allowed.test:{p}@127.0.0.1:{p}/landed",
    "http://127.0.0.1:{p}#@allowed.test/landed", "http://allowed.test\\@127.0.0.1:{p}/landed",
    "http://allowed.test%40127.0.0.1:{p}/landed", "http://allowed.test\uff20127.0.0.1:{p}/landed",
    "http://:@127.0.0.1:{p}/landed", "http://127.0.0.1:{p}?@allowed.test/landed",
    "//allowed.test@127.0.0.1:{p}/landed",
]


@pytest.mark.parametrize("target", USERINFO)
async def test_userinfo_and_fragment_tricks_in_a_redirect_reach_nothing(target: str, server: Server, make) -> None:
    """The service is allowed as 127.0.0.1:PORT; ``allowed.test`` is a public name here."""
    other = Server()
    try:
        reach = make({"services": {"svc": local(server)}}, resolver=StaticResolver({"allowed.test": ["93.184.215.14"]}))
        result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                                 "query": {"to": target.format(p=other.port)}})
        assert not result.ok, result.content
        assert other.state.requests == []
    finally:
        other.stop()


# --------------------------------------------------------------------------- 6. a write whose redirect is not followed

UNFOLLOWED = {
    "metadata": "http://169.254.169.254/latest/meta-data/",
    "loopback-other-port": "http://127.0.0.1:1/x",
    "never-resolves": "http://slow.test/x",
    "unresolvable": "http://nowhere.test/x",
    "file-scheme": "file:///etc/passwd",
    "zone-id": "http://[fe80::1%25lo]/x",
    "backslash": "http:\\\\127.0.0.1/x",
    "too-many": "/loop",
}


@pytest.mark.parametrize("code", [301, 302, 303])
@pytest.mark.parametrize("where", sorted(UNFOLLOWED))
async def test_a_write_whose_redirect_is_not_followed_is_an_unknown_outcome(
    where: str, code: int, server: Server, make
) -> None:
    """The POST was received and answered: "refused" or "nothing was sent" would invite sending it again."""
    resolver = _Hanging({}, {"slow.test"})
    reach = make({"services": {"svc": local(server, timeout=1)}}, resolver=resolver, config=_quick("http_request"))
    result = await reach.invoke("http_request", {"service": "svc", "method": "POST", "path": "/redirect",
                                                 "query": {"to": UNFOLLOWED[where], "code": code}, "json": {"a": 1}})
    assert not result.ok and result.error.code == "outcome_unknown", result.error
    assert "probably taken effect" in result.error.message
    assert server.state.count("POST", "/redirect") == 1


@pytest.mark.parametrize(("method", "code"), [("PUT", 303), ("PATCH", 303), ("POST", 307), ("POST", 308),
                                              ("PUT", 308)])
async def test_other_writes_and_codes_whose_redirect_loops_are_unknown_outcomes(
    method: str, code: int, server: Server, make
) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_request", {"service": "svc", "method": method, "path": "/redirect",
                                                 "query": {"to": "/loop", "code": code}, "json": {"a": 1}})
    assert not result.ok and result.error.code == "outcome_unknown", result.error
    assert server.state.count(method, "/redirect") == 1


async def test_a_read_whose_redirect_is_refused_stays_a_refusal(server: Server, make) -> None:
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect",
                                             "query": {"to": UNFOLLOWED["metadata"]}})
    assert not result.ok and result.error.code == "execution_failed" and "refused" in result.error.message


# --------------------------------------------------------------------------- 7. more families that held

UNIX_SOCKETS = ["http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.41", "unix:///var/run/docker.sock",
                "http://unix:/var/run/docker.sock:/v1.41", "http://%2Fvar%2Frun%2Fdocker.sock/",
                "http://localhost/var/run/docker.sock\\", "file:///var/run/docker.sock"]


@pytest.mark.parametrize("url", UNIX_SOCKETS)
async def test_unix_socket_urls_are_refused_as_base_url_and_as_redirect(url: str, server: Server, make) -> None:
    from reach_core import ConfigError

    with pytest.raises(ConfigError, match="base_url"):
        make({"services": {"svc": {"base_url": url}}})
    reach = make({"services": {"svc": local(server)}})
    result = await reach.invoke("http_get", {"service": "svc", "path": "/redirect", "query": {"to": url}})
    assert not result.ok and "refused" in result.error.message, result.error
    assert _paths(server) == ["/redirect"]


QUERY_BREAKS = ["x\r\nHost: evil", "x\nX-Evil: 1", "x\r\n\r\nGET /admin HTTP/1.1", "x\u2028y", "x\x00y", "x\x85y",
                "x%0d%0aX-Evil:%201", "x#frag", "x&admin=1", "x y"]


@pytest.mark.parametrize("value", QUERY_BREAKS)
@pytest.mark.parametrize("where", ["key", "value"])
async def test_line_breaks_in_query_keys_and_values_stay_inside_the_query(value: str, where: str, server: Server,
                                                                          make) -> None:
    reach = make({"services": {"svc": local(server)}})
    query = {value: "1"} if where == "key" else {"q": value}
    result = await reach.invoke("http_get", {"service": "svc", "path": "/echo", "query": query})
    assert result.ok, result.error
    [seen] = server.state.requests
    assert seen["path"] == "/echo" and "X-Evil" not in seen["headers"]
    assert all(" " < c <= "~" for c in seen["raw_query"])  # nothing raw: the query is one token
    got = seen["query"]
    assert (value in got) if where == "key" else (got["q"] == [value]), got


def _header_flood(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for i in range(100_000):
        conn.sendall(b"X-%d: %s\r\n" % (i, b"a" * 50))


def _one_long_header(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 5_000_000 + b"\r\n\r\n")


def _endless_continue(conn: socket.socket) -> None:
    for _ in range(10_000_000):
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")


def _endless_chunks(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n")
    for _ in range(100_000):
        conn.sendall(b"4000\r\n" + b"a" * 0x4000 + b"\r\n")


def _second_response_smuggled(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
                 b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n")


FLOODS = {"header-flood": (_header_flood, "upstream_unavailable"),
          "one-long-header": (_one_long_header, "upstream_unavailable"),
          "endless-100-continue": (_endless_continue, "upstream_unavailable"),
          "endless-chunks": (_endless_chunks, None), "smuggled-second-response": (_second_response_smuggled, None)}


@pytest.mark.parametrize("name", sorted(FLOODS))
async def test_hostile_answers_end_at_the_cap_or_the_timeout(name: str, raw_server: Any, make) -> None:
    script, code = FLOODS[name]
    port = raw_server(lambda conn, head: script(conn))
    reach = make({"services": {"svc": {"base_url": f"http://127.0.0.1:{port}", "allow_private": True,
                                       "timeout": 2}}}, config=_quick("http_get", 10))
    result = await reach.invoke("http_get", {"service": "svc", "path": "/x"})
    if code is None:  # read up to the cap (or the one honest answer), the rest dropped
        assert result.ok, result.error
        assert result.content.get("truncated") is True or result.content["body"] == "ok"
    else:
        assert not result.ok and result.error.code == code, result.error
