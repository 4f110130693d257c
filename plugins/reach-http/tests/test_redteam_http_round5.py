"""Red team, round 5: a write re-sent to an origin the service chose.

A redirect that keeps the method (307/308 always; 301/302 for everything but ``POST``) was
followed to another origin whenever the request had no body: a bodiless ``DELETE`` (or a
``PUT``/``PATCH``/``POST`` without ``json``) answered ``302``/``307`` by the service was sent
again, as the same write, to whatever host, port or scheme the ``Location`` named. Credentials
stayed home, but the write itself went to an origin the operator never configured. Now a write
goes only to the service's own origin: such a redirect is an ``outcome_unknown`` failure naming
the target, and nothing is sent there. A redirect that turns the write into a ``GET`` (303, and
301/302 after ``POST``) is still followed, as documented; so is every redirect within the origin.

Real servers on 127.0.0.1: two ports (two origins), ``localhost`` / ``127.0.0.1`` / ``[::1]`` /
``localhost.`` on one port (other origins on one address).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from http_testserver import Server, reach_for

SECRET = "s3cr3t-Round5x"
CARD = "4111 1111 1111 1111"
WRITES = ["POST", "PUT", "PATCH", "DELETE"]
CODES = [301, 302, 303, 307, 308]


def _keeps_method(method: str, code: int) -> bool:
    """Whether HTTP (and browsers) repeat ``method`` itself on ``code``: 307/308 always, 301/302
    for every method but POST; 303 (and POST on 301/302) continue as a GET."""
    return code in (307, 308) or (code in (301, 302) and method != "POST")


def _elsewhere(a: Server, b: Server) -> dict[str, str]:
    """Targets at another origin than the service's ``http://localhost:{a.port}``."""
    return {
        "other-port": f"http://localhost:{b.port}/echo/landed",
        "other-host-same-address": f"http://127.0.0.1:{a.port}/echo/landed",
        "trailing-dot": f"http://localhost.:{a.port}/echo/landed",
        "upper-case-trailing-dot": f"http://LOCALHOST.:{a.port}/echo/landed",
        "ipv6-literal": f"http://[::1]:{a.port}/echo/landed",
        "scheme-relative-other-port": f"//localhost:{b.port}/echo/landed",
        "https-same-host-and-port": f"https://localhost:{a.port}/echo/landed",
        "userinfo": f"http://svc@localhost:{a.port}/echo/landed",
        "userinfo-other-port": f"http://localhost:{a.port}@localhost:{b.port}/echo/landed",
    }


ELSEWHERE = ["other-port", "other-host-same-address", "trailing-dot", "upper-case-trailing-dot", "ipv6-literal",
             "scheme-relative-other-port", "https-same-host-and-port", "userinfo", "userinfo-other-port"]


def _same_origin(a: Server) -> dict[str, str]:
    """Other spellings of the service's own origin: relative, absolute, upper case, scheme-relative."""
    return {
        "relative": "/echo/landed",
        "absolute": f"http://localhost:{a.port}/echo/landed",
        "upper-case-host": f"http://LOCALHOST:{a.port}/echo/landed",
        "upper-case-scheme": f"HTTP://localhost:{a.port}/echo/landed",
        "scheme-relative": f"//localhost:{a.port}/echo/landed",
    }


FOLLOWED_AS_GET = [w for w in ELSEWHERE if not w.startswith(("userinfo", "https"))]
"""Where a GET lands (an https target fails its handshake on the plain server; userinfo is refused)."""
SAME_ORIGIN = ["relative", "absolute", "upper-case-host", "upper-case-scheme", "scheme-relative"]


def _service(a: Server) -> dict[str, Any]:
    return {"base_url": f"http://localhost:{a.port}", "methods": ["GET", "HEAD", *WRITES],
            "auth": {"type": "bearer", "token": SECRET}}


def _landed(a: Server, b: Server) -> list[dict[str, Any]]:
    return [r for s in (a, b) for r in s.state.requests if r["path"] == "/echo/landed"]


def _reach(tmp_path: Path, a: Server) -> Any:
    """The service's tools; ``http_request`` (dangerous: DELETE is allowed) lowered to write so that
    it runs without a person here."""
    return reach_for(tmp_path, _service(a), connectors={"http_request": {"retries": 0, "risk": "write"},
                                                         "http_get": {"retries": 0}})


async def _call(tmp_path: Path, a: Server, method: str, code: int, to: str, body: bool) -> Any:
    reach = _reach(tmp_path, a)
    args: dict[str, Any] = {"service": "svc", "method": method, "path": "/redirect",
                            "query": {"code": code, "to": to}}
    if body:
        args["json"] = {"card": CARD}
    return await reach.invoke("http_request", args)


@pytest.mark.parametrize("body", [False, True], ids=["no-body", "body"])
@pytest.mark.parametrize("where", ELSEWHERE)
@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("method", WRITES)
async def test_a_write_is_never_sent_to_another_origin(
    method: str, code: int, where: str, body: bool, two: tuple[Server, Server], tmp_path: Path
) -> None:
    """Nothing but a GET (after 303, or 301/302 of a POST) ever reaches the other origin, and a
    redirect that would repeat the write there is a failure naming where the service points."""
    a, b = two
    target = _elsewhere(a, b)[where]
    result = await _call(tmp_path, a, method, code, target, body)
    assert a.state.count(method, "/redirect") == 1
    landed = _landed(a, b)
    assert all(r["method"] == "GET" and r["body"] == "" for r in landed), landed
    assert all(SECRET not in str(r["headers"]) + r["raw_query"] for r in landed), landed
    if not _keeps_method(method, code):  # continues as a GET without the body: followed, as documented
        if where in FOLLOWED_AS_GET:
            assert result.ok, result.error
            assert len(landed) == 1, landed
        return
    assert landed == []
    assert not result.ok, result.content
    assert result.error.code == "outcome_unknown", result.error
    message = result.error.message
    if where.startswith("userinfo"):  # refused as a URL before its origin is read (held before round 5)
        assert "not a valid URL" in message and "userinfo" in message, message
        return
    assert "another origin" in message and f"{code}" in message and method in message, message
    shown = target if not target.startswith("//") else "http:" + target
    assert shown.lower().split("/echo")[0] in message.lower(), message


@pytest.mark.parametrize("body", [False, True], ids=["no-body", "body"])
@pytest.mark.parametrize("where", SAME_ORIGIN)
@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("method", WRITES)
async def test_a_write_still_follows_a_redirect_within_the_origin(
    method: str, code: int, where: str, body: bool, two: tuple[Server, Server], tmp_path: Path
) -> None:
    """Same origin, any spelling: followed with the credential; the method (and body) kept where
    HTTP keeps them, a GET otherwise."""
    a, b = two
    result = await _call(tmp_path, a, method, code, _same_origin(a)[where], body)
    assert result.ok, result.error
    [landed] = _landed(a, b)
    assert landed["headers"].get("Authorization") == f"Bearer {SECRET}"
    if _keeps_method(method, code):
        assert landed["method"] == method
        assert landed["body"] == ({"card": CARD} if body else "")
    else:
        assert landed["method"] == "GET" and landed["body"] == ""


@pytest.mark.parametrize("code", CODES)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_a_read_still_follows_a_redirect_to_another_origin(
    method: str, code: int, two: tuple[Server, Server], tmp_path: Path
) -> None:
    """Reads go where the service points (without credentials), as documented."""
    a, b = two
    reach = _reach(tmp_path, a)
    tool, args = ("http_get", {}) if method == "GET" else ("http_request", {"method": "HEAD"})
    result = await reach.invoke(tool, {"service": "svc", "path": "/redirect", **args,
                                       "query": {"code": code, "to": f"http://localhost:{b.port}/echo/landed"}})
    assert result.ok, result.error
    [landed] = b.state.requests
    assert landed["method"] == method and "Authorization" not in landed["headers"]
