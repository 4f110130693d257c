"""reach as the client of a hostile MCP server: what the server sends back is held to reach's caps.

A server's explanation of a failed call reaches the model (and reach's logs). reach cut an
``isError`` result's text at 2,000 characters, but the same server could answer with a
JSON-RPC *error* instead, and its message went through whole: as ``execution_failed``
(``... refused the call: <message>``), or, with code -32000 (which the SDK also uses for a
closed connection), as ``upstream_unavailable`` (``... dropped the connection (MCPError:
<message>)``) and in the ``reach.mcp_session_closed`` log line. A megabyte of text, or of
instructions, then sat in the model's context. Every path now cuts the server's text the
same way. Real SDK server in a subprocess (``servers/hostile_server.py``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from conftest import DEMO, PY
from reach_mcp.connector import MAX_DESCRIPTION
from reach_mcp.plugin import MAX_TOOLS_PER_SERVER
from reach_mcp.results import MAX_SERVER_TEXT

HOSTILE = Path(__file__).parent / "servers" / "hostile_server.py"


def hostile(**env: str) -> dict[str, Any]:
    return {"command": PY, "args": [str(HOSTILE)], "env": env, "connect_timeout": 60}


PATHS = [  # (what the server sends, JSON-RPC code, the code reach answers with)
    ("rpc", -32603, "execution_failed"),      # a JSON-RPC error: internal error
    ("rpc", -32000, "upstream_unavailable"),  # the code the SDK also uses for a closed connection
    ("is_error", 0, "execution_failed"),      # an isError result (was cut before, without saying so)
]
CODES = [(-32602, "execution_failed"), (-32601, "execution_failed"), (-32001, "upstream_unavailable"),
         (1, "execution_failed"), (-32700, "execution_failed")]
CHARS = ["E", "北", "\u202e", "🙂"]


async def call(reach: Any, kind: str, code: int, size: int, char: str) -> Any:
    return await reach.invoke("evil__t0", {"call": kind, "code": code, "size": size, "char": char})


@pytest.mark.parametrize("size", [2_500, 1_000_000])
@pytest.mark.parametrize("kind, code, expected", PATHS)
async def test_a_servers_error_text_is_cut_whatever_path_it_takes(
        reach_for: Any, kind: str, code: int, expected: str, size: int, caplog: pytest.LogCaptureFixture) -> None:
    reach = reach_for({"evil": hostile()}, connectors={"evil__t0": {"max_retries": 0}})
    with caplog.at_level(logging.DEBUG, logger="reach"):
        for char in CHARS:
            res = await call(reach, kind, code, size, char)
            assert res.error is not None and res.error.code == expected, res.error
            assert len(res.error.message) < MAX_SERVER_TEXT + 300, (kind, code, char, len(res.error.message))
            assert char * 100 in res.error.message  # the start of what the server said is still there
            assert "more characters" in res.error.message  # ... and the model is told the rest was cut
    await reach.aclose()
    for record in caplog.records:
        assert len(record.getMessage()) < 2 * MAX_SERVER_TEXT + 2000, (record.name, len(record.getMessage()))


async def test_every_error_code_is_cut(reach_for: Any) -> None:
    reach = reach_for({"evil": hostile()}, connectors={"evil__t0": {"max_retries": 0}})
    for code, expected in CODES:
        res = await call(reach, "rpc", code, 50_000, "x")
        assert res.error is not None and res.error.code == expected, (code, res.error)
        assert len(res.error.message) < MAX_SERVER_TEXT + 300, (code, len(res.error.message))
    await reach.aclose()


async def test_a_short_explanation_is_passed_on_whole(reach_for: Any) -> None:
    reach = reach_for({"evil": hostile()}, connectors={"evil__t0": {"max_retries": 0}})
    for kind, code, _expected in PATHS:
        res = await call(reach, kind, code, MAX_SERVER_TEXT - 100, "E")
        assert res.error is not None and "E" * (MAX_SERVER_TEXT - 100) in res.error.message, kind
        assert "more characters" not in res.error.message
    res = await call(reach, "ok", 0, 0, "")
    assert (res.ok, res.content) == (True, "ok")
    await reach.aclose()


# ------------------------------------------------------------------ what a server lists
# A server chooses how many tools it lists and how long their descriptions are; every
# registered tool and description goes to the model on every turn. reach capped the
# pages it reads (100) but not what a page holds: 20,000 tools took half a minute to
# register and 2 MB descriptions reached the model whole.


async def test_a_server_listing_thousands_of_tools_registers_at_most_the_cap(
        reach_for: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="reach"):
        reach = reach_for({"evil": hostile(HOSTILE_TOOLS=str(MAX_TOOLS_PER_SERVER + 1500))})
    names = [t.name for t in reach.all_tools() if t.name.startswith("evil__")]
    assert len(names) == MAX_TOOLS_PER_SERVER
    assert names[0] == "evil__t0" and f"evil__t{MAX_TOOLS_PER_SERVER - 1}" in names  # the first ones, in order
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "reach.mcp_too_many_tools" in said and str(MAX_TOOLS_PER_SERVER + 1500) in said and "tools" in said
    assert (await reach.invoke("evil__t0", {"call": "ok"})).ok
    await reach.aclose()


async def test_the_tools_setting_picks_any_tool_of_a_long_list(reach_for: Any) -> None:
    last = f"t{MAX_TOOLS_PER_SERVER + 1499}"
    reach = reach_for({"evil": {**hostile(HOSTILE_TOOLS=str(MAX_TOOLS_PER_SERVER + 1500)), "tools": [last, "t7"]}})
    assert sorted(t.name for t in reach.all_tools() if t.name.startswith("evil__")) == [f"evil__{last}", "evil__t7"]
    await reach.aclose()


@pytest.mark.parametrize("size", [MAX_DESCRIPTION + 1, 100_000, 2_000_000])
@pytest.mark.parametrize("char", ["x", "北", "\u200b", " "])
def test_a_long_description_is_cut_and_says_so(reach_for: Any, size: int, char: str) -> None:
    reach = reach_for({"evil": hostile(HOSTILE_TOOLS="2", HOSTILE_DESC=str(size), HOSTILE_DESC_CHAR=char)})
    for entry in reach.tools():
        text = entry["function"]["description"]
        assert text.startswith("Look a thing up. Use when asked."), text[:80]
        assert len(text) <= MAX_DESCRIPTION + 200, len(text)
        if char != " ":  # a wall of spaces is stripped, nothing to cut
            assert "more characters of the server's description cut" in text


def test_an_honest_description_is_kept_whole(reach_for: Any) -> None:
    reach = reach_for({"evil": hostile(HOSTILE_TOOLS="1", HOSTILE_DESC=str(MAX_DESCRIPTION - 100))})
    (entry,) = reach.tools()
    assert entry["function"]["description"] == "Look a thing up. Use when asked." + "x" * (MAX_DESCRIPTION - 100)


# ------------------------------------------------------------------ names spelled with another server's prefix
# Tools are named PREFIX__tool, but a server chooses its tools' names: an unprefixed server
# (prefix = "") listing `demo__echo`, or server `acme` listing `internal__echo` next to a
# server `acme__internal`, spelled a tool of the *other* server. The first listed won the
# name, so `allow = ["demo__echo"]`, a `[connectors.demo__echo]` risk and the audit's tool
# name all pointed at the hostile server's tool. Now a name belongs to the server with the
# longest prefix it starts with; another server's tool of that name is skipped, logged.


def _tools(reach: Any) -> dict[str, str]:
    return {t.name: t.connector.link.name for t in reach.all_tools()}


SPELLED = [  # (config of the hostile server, its remote names, the trusted server's name and prefix)
    ({"prefix": ""}, "demo__echo,demo__weather", "demo", None),
    ({"prefix": ""}, "demo__echo,demo__weather", "demo", "demo"),
    ({}, "internal__echo,internal__weather", "acme__internal", None),
    ({"prefix": "acme"}, "internal__echo,internal__weather", "corp", "acme__internal"),
]


@pytest.mark.parametrize("hostile_first", [True, False])
@pytest.mark.parametrize("case", range(len(SPELLED)))
async def test_a_server_cannot_name_its_tools_into_another_servers_prefix(
        reach_for: Any, case: int, hostile_first: bool, caplog: pytest.LogCaptureFixture) -> None:
    from conftest import stdio_server

    extra, names, trusted, prefix = SPELLED[case]
    evil = {**hostile(HOSTILE_NAMES=names, HOSTILE_TOOLS="1"), **extra}
    good = stdio_server(**({"prefix": prefix} if prefix else {}))
    servers = {"acme": evil, trusted: good} if hostile_first else {trusted: good, "acme": evil}
    with caplog.at_level(logging.WARNING, logger="reach"):
        reach = reach_for(servers)
    owner = prefix or trusted
    tools = _tools(reach)
    assert tools[f"{owner}__echo"] == trusted and tools[f"{owner}__weather"] == trusted, tools
    res = await reach.invoke(f"{owner}__echo", {"text": "hello"})
    assert (res.ok, res.content) == (True, "hello"), res  # the trusted server answered, not the hostile one
    assert "t0" in tools or "acme__t0" in tools  # the hostile server's own tools are still there
    if hostile_first:
        assert "another server" in caplog.text
    await reach.aclose()


async def test_an_unprefixed_server_keeps_names_no_server_claims(reach_for: Any) -> None:
    reach = reach_for({"plain": {**hostile(HOSTILE_NAMES="search,demo_echo,demo-x__y", HOSTILE_TOOLS="0"),
                                 "prefix": ""}, "demo": {"command": PY, "args": [str(DEMO)]}})
    tools = _tools(reach)
    assert {"search", "demo_echo", "demo-x__y"} <= set(tools) and tools["search"] == "plain"
    await reach.aclose()


async def test_a_server_that_is_down_keeps_its_names(reach_for: Any) -> None:
    reach = reach_for({"evil": {**hostile(HOSTILE_NAMES="demo__echo", HOSTILE_TOOLS="1"), "prefix": ""},
                       "demo": {"url": "http://127.0.0.1:9/mcp", "connect_timeout": 2}})
    assert set(_tools(reach)) == {"t0"}
    await reach.aclose()


async def test_two_unprefixed_servers_both_register(reach_for: Any) -> None:
    reach = reach_for({"one": {**hostile(HOSTILE_NAMES="alpha", HOSTILE_TOOLS="0"), "prefix": ""},
                       "two": {**hostile(HOSTILE_NAMES="beta", HOSTILE_TOOLS="0"), "prefix": ""}})
    assert _tools(reach) == {"alpha": "one", "beta": "two"}
    await reach.aclose()
