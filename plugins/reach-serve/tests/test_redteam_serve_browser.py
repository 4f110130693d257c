"""Red-team round 5: a web page the user opens attacks ``reach serve http`` without a token.

With ``anonymous_agent`` set (the easy local setup), nothing secret identified the sender:

* cross-site request forgery: any page could ``POST /v1/invoke`` with ``Content-Type:
  text/plain`` (no CORS preflight) and run a write tool as the anonymous agent;
* DNS rebinding: a page at ``http://evil.example:8780`` whose name the attacker re-points at
  127.0.0.1 is *same-origin* with the server, so it could also read ``/v1/tools`` and results.

Now an anonymous request must address the server by IP address, ``localhost`` or an
``allowed_hosts`` name, and a browser's ``Origin``/``Sec-Fetch-Site`` must not mark it as sent
by another site. Requests with a token are unchanged (a page cannot learn the token).
Every refusal is a 403 JSON error, and the write tool's counter proves nothing ran.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from conftest import Served, serve

BODY = '{"name": "add_credit", "arguments": {"amount": 5}}'


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("guest"), {"anonymous_agent": "guest",
                                                        "allowed_hosts": ["reach.internal", "Agents.Example.COM."]})


def _post(served: Served, headers: dict[str, str], *, token: str | None = None) -> httpx.Response:
    if token:
        headers = {**headers, "Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.base, timeout=10) as c:
        return c.post("/v1/invoke", content=BODY, headers={"Content-Type": "text/plain", **headers})


def _get(served: Served, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(base_url=served.base, timeout=10) as c:
        return c.get("/v1/tools", headers=headers)


def _port(served: Served) -> str:
    return served.base.rsplit(":", 1)[1]


REBOUND = [
    "evil.example:{port}", "evil.example", "EVIL.example:{port}", "127.0.0.1.nip.io:{port}", "localhost.evil.example",
    "localhost.evil.example:{port}", "reach.internal.evil.example", "evil-reach.internal", "xn--localhost-:{port}",
    "attacker.localhost:{port}", "0x7f000001.example", "127.0.0.1.evil", "reach.internal.:{port}.evil.example",
    "agents.example.com.evil.example", "2130706433.example:{port}", "localhost:{port}.evil.example",
]


@pytest.mark.parametrize("host", REBOUND)
def test_a_rebound_name_gets_nothing_without_a_token(host: str, guest: Served) -> None:
    before = guest.counter.runs
    host = host.format(port=_port(guest))
    for resp in (_post(guest, {"Host": host}), _get(guest, {"Host": host}),
                 _post(guest, {"Host": host, "Origin": f"http://{host}", "Sec-Fetch-Site": "same-origin"})):
        assert resp.status_code == 403, (host, resp.text)
        error = resp.json()["error"]
        assert error["code"] == "forbidden" and "allowed_hosts" in error["message"]
        assert "tools" not in resp.json()
    assert guest.counter.runs == before


KNOWN = ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "localhost.", "[::1]:{port}", "10.0.0.5",
         "reach.internal:{port}", "REACH.INTERNAL.", "agents.example.com", "Agents.Example.Com:{port}"]


@pytest.mark.parametrize("host", KNOWN)
def test_ip_addresses_localhost_and_allowed_names_still_work(host: str, guest: Served) -> None:
    before = guest.counter.runs
    host = host.format(port=_port(guest))
    resp = _post(guest, {"Host": host})
    assert resp.status_code == 200 and resp.json()["ok"], (host, resp.text)
    assert _get(guest, {"Host": host}).json()["agent"] == "guest"
    assert guest.counter.runs == before + 1


CROSS_SITE = [
    {"Origin": "http://evil.example"}, {"Origin": "null"}, {"Origin": "NULL"}, {"Origin": "https://evil.example"},
    {"Origin": "http://127.0.0.1:1"}, {"Origin": "http://127.0.0.1:{port}.evil.example"}, {"Origin": ""},
    {"Origin": "file://"}, {"Origin": "http://localhost:{port}"},  # another name for this server is another site
    {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}, {"Sec-Fetch-Site": "CROSS-SITE"},
    {"Origin": "http://127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"},
    {"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"},
]
CONTENT_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "application/json"]


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
@pytest.mark.parametrize("claim", range(len(CROSS_SITE)))
def test_a_cross_site_page_cannot_run_a_tool_without_a_token(claim: int, content_type: str, guest: Served) -> None:
    before = guest.counter.runs
    headers = {k: v.format(port=_port(guest)) for k, v in CROSS_SITE[claim].items()}
    resp = _post(guest, {**headers, "Content-Type": content_type})
    assert resp.status_code == 403, (headers, resp.text)
    assert resp.json()["error"]["code"] == "forbidden"
    assert "another site" in resp.json()["error"]["message"]
    assert guest.counter.runs == before


SAME_SITE = [{}, {"Origin": "http://127.0.0.1:{port}"}, {"Origin": "http://127.0.0.1:{port}", "Sec-Fetch-Site":
             "same-origin"}, {"Sec-Fetch-Site": "none"}, {"Origin": "https://reach.example", "X-Forwarded-Host":
             "reach.example"}]


@pytest.mark.parametrize("claim", range(len(SAME_SITE)))
def test_the_servers_own_pages_and_plain_clients_still_work(claim: int, guest: Served) -> None:
    headers = {k: v.format(port=_port(guest)) for k, v in SAME_SITE[claim].items()}
    resp = _post(guest, headers)
    assert resp.status_code == 200 and resp.json()["ok"], (headers, resp.text)


@pytest.mark.parametrize("headers", [{"Host": "evil.example"}, {"Origin": "http://evil.example"},
                                     {"Sec-Fetch-Site": "cross-site"}])
def test_a_request_with_a_token_is_judged_by_its_token(headers: dict[str, str], guest: Served) -> None:
    with_token = _post(guest, headers, token="tok-worker-000001")
    assert with_token.status_code == 200 and with_token.json()["ok"], with_token.text
    wrong = _post(guest, headers, token="tok-not-a-real-one")
    assert wrong.status_code == 401


def test_without_anonymous_agent_nothing_changes(served: Served) -> None:
    resp = _post(served, {"Host": "evil.example"})
    assert resp.status_code == 401
    assert _post(served, {"Host": "evil.example"}, token="tok-worker-000001").json()["ok"]


def test_allowed_hosts_is_a_documented_setting() -> None:
    from reach_serve.settings import ServeHttpSettings

    assert ServeHttpSettings(allowed_hosts=["a.example"]).allowed_hosts == ["a.example"]
    assert ServeHttpSettings().allowed_hosts == []
