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
from conftest import PY
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
