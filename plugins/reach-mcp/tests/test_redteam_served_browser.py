"""A web page the user opens attacks ``reach serve mcp --http`` without a token (DNS rebinding).

Without tokens (or with ``anonymous_agent``), nothing secret identifies who sends a request.
The SDK checks ``Host``/``Origin`` only when the server is built for exactly ``127.0.0.1``,
``localhost`` or ``::1``, or when ``allowed_hosts`` is set. Served on any other address
(``--http 0.0.0.0:8766`` in a container, ``[::]``, ``127.0.0.2``, a LAN address; all of them
reachable from the user's own browser), a page at ``http://evil.example:8766`` whose name the
attacker re-points at this machine is same-origin with the server: it could send
``Content-Type: application/json`` without a CORS preflight, run tools as the anonymous agent
and read the answers. Before the fix every such request below ran the tool.

Now a request without a token must name the server by IP address, ``localhost`` or an
``allowed_hosts`` name, and a browser's ``Origin``/``Sec-Fetch-Site`` must not say another site
sent it: the same rule as ``reach serve http`` (``reach_core.tokens.tokenless_refusal``).
Requests with a token are judged by the token alone. Real uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import ServedMcp, note_reach
from conftest import notes as ran
from reach_mcp.settings import ServeSettings

TOKEN = "tok-support-0123456789"


CALL = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "add_note", "arguments": {"text": "from a web page"}}})
LIST = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})


@pytest.fixture
def reach(tmp_path: Any) -> Any:
    return note_reach(tmp_path, "support", "guest")


BINDS = ["0.0.0.0", "::", "127.0.0.2", "192.168.1.20"]
SETTINGS = {
    "no tokens": {},
    "anonymous agent": {"tokens": {TOKEN: "support"}, "anonymous_agent": "guest"},
}
REBOUND = [
    {"host": "evil.example:{port}"},
    {"host": "evil.example:{port}", "origin": "http://evil.example:{port}"},
    {"host": "evil.example:{port}", "origin": "http://evil.example:{port}", "sec-fetch-site": "same-origin"},
    {"host": "EVIL.example"},
    {"host": "127.0.0.1.nip.io:{port}"},
    {"host": "localhost.evil.example:{port}"},
    {"host": "attacker.localhost:{port}"},
    {"host": "localhost:{port}.evil.example"},
    {"host": "2130706433.example:{port}"},
    {"host": "evil.example:{port}", "x-forwarded-host": "evil.example:{port}"},
]


@pytest.mark.parametrize("bind", BINDS)
@pytest.mark.parametrize("kind", list(SETTINGS))
async def test_a_rebound_name_runs_nothing_without_a_token(reach: Any, bind: str, kind: str) -> None:
    async with ServedMcp(reach, ServeSettings(**SETTINGS[kind]), bind) as served:
        for headers in REBOUND:
            for body in (CALL, LIST):
                res = await served.post(headers, body)
                assert res.status_code == 403, (headers, res.status_code, res.text[:300])
                assert "allowed_hosts" in res.json()["error"], res.text
                assert "add_note" not in res.text
    assert ran == []


CROSS_SITE = [
    {"origin": "http://evil.example"}, {"origin": "null"}, {"origin": "NULL"}, {"origin": ""},
    {"origin": "http://127.0.0.1:1"}, {"origin": "http://127.0.0.1:{port}.evil.example"},
    {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"}, {"sec-fetch-site": "CROSS-SITE"},
    {"origin": "http://127.0.0.1:{port}", "sec-fetch-site": "cross-site"},
]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
async def test_a_cross_site_page_runs_nothing_without_a_token(reach: Any, bind: str) -> None:
    async with ServedMcp(reach, ServeSettings(anonymous_agent="guest"), bind) as served:
        for headers in CROSS_SITE:
            res = await served.post(headers, CALL)
            assert res.status_code == 403, (headers, res.status_code, res.text[:300])
            assert "another site" in res.json()["error"], res.text
    assert ran == []


KNOWN = [{}, {"host": "127.0.0.1:{port}"}, {"host": "localhost:{port}"}, {"host": "LOCALHOST."},
         {"host": "[::1]:{port}"}, {"host": "10.0.0.5:{port}"}, {"origin": "http://127.0.0.1:{port}"},
         {"sec-fetch-site": "none"}]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "127.0.0.2"])
async def test_addresses_and_localhost_still_work_without_a_token(reach: Any, bind: str) -> None:
    async with ServedMcp(reach, ServeSettings(anonymous_agent="guest"), bind) as served:
        for headers in KNOWN:
            res = await served.post(headers, CALL)
            assert res.status_code == 200, (headers, res.status_code, res.text[:300])
            assert res.json()["result"]["isError"] is False, res.text
    assert len(ran) == len(KNOWN)


@pytest.mark.parametrize("host", ["mcp.internal:{port}", "mcp.example.com:443", "[fd00::5]:8766"])
async def test_allowed_hosts_names_still_work_without_a_token(reach: Any, host: str) -> None:
    # with allowed_hosts the SDK admits exactly those Host values; reach's rule reads their names
    settings = ServeSettings(anonymous_agent="guest",
                             allowed_hosts=["mcp.internal:*", "mcp.example.com:443", "[fd00::5]:8766"])
    async with ServedMcp(reach, settings, "0.0.0.0") as served:
        res = await served.post({"host": host}, CALL)
        assert res.status_code == 200, (host, res.status_code, res.text[:300])
    assert len(ran) == 1


@pytest.mark.parametrize("headers", REBOUND[:3] + CROSS_SITE[:3])
async def test_a_request_with_a_token_is_judged_by_its_token(reach: Any, headers: dict[str, str]) -> None:
    settings = ServeSettings(tokens={TOKEN: "support"}, anonymous_agent="guest")
    async with ServedMcp(reach, settings, "0.0.0.0") as served:
        good = await served.post({**headers, "authorization": f"Bearer {TOKEN}"}, CALL)
        assert good.status_code == 200 and good.json()["result"]["isError"] is False, good.text
        wrong = await served.post({**headers, "authorization": "Bearer tok-not-a-real-one"}, CALL)
        assert wrong.status_code == 401
    assert ran == ["from a web page"]
