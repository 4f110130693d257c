"""Hostile replies whose tool-call ``arguments`` are a JSON object, not a string.

A few servers send ``"arguments": {...}``; the adapter turns it back into JSON text for
the core, which refuses ``NaN`` and ``Infinity`` (no tool means them). Python's JSON
reader (the SDK's) accepts both, and the adapter wrote the object again with a writer
that spells them ``null``: ``{"limit": NaN}`` reached the tool as ``limit = None``
(often "no limit"). The text is written with the constants kept now, so the core's
rule answers the model. A real ``openai`` client talks to a server on 127.0.0.1 that
sends the reply byte for byte as written here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from reach_core import connector

CALLS: list[dict[str, Any]] = []


@connector(risk="read", name="find")
def find(text: str, limit: int | None = None, score: float | None = None, tags: list[Any] | None = None) -> dict:
    """Find records (a read: counted by the test).

    Args:
        text: what to find
        limit: at most this many (none: all)
        score: the least score
        tags: tags to match
    """
    CALLS.append({"text": text, "limit": limit, "score": score, "tags": tags})
    return {"found": 0}


class _Server:
    """Answers every chat completion with the next body from ``bodies`` (then a plain answer)."""

    def __init__(self, bodies: list[str]) -> None:
        self.bodies = list(bodies)
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(json.loads(self.rfile.read(length)))
                body = outer.bodies.pop(0) if outer.bodies else _reply(None, "done")
                data = body.encode("utf-8", "surrogatepass")
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _reply(arguments_json: str | None, text: str | None = None) -> str:
    """A chat completion, written by hand so the arguments object goes out exactly as given."""
    if arguments_json is None:
        message = f'{{"role":"assistant","content":{json.dumps(text)}}}'
        finish = "stop"
    else:
        message = ('{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",'
                   f'"function":{{"name":"find","arguments":{arguments_json}}}}}]}}')
        finish = "tool_calls"
    return ('{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
            f'"message":{message},"finish_reason":"{finish}"}}],'
            '"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}')


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[_Server] = []

    def start(bodies: list[str]) -> _Server:
        servers.append(_Server(bodies))
        return servers[-1]

    CALLS.clear()
    yield start
    for s in servers:
        s.close()


def _tool_replies(server: _Server) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in server.requests[-1]["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize("arguments", [
    '{"text":"a","limit":NaN}',
    '{"text":"a","limit":Infinity}',
    '{"text":"a","limit":-Infinity}',
    '{"text":"a","score":NaN}',
    '{"text":"a","score":-Infinity}',
    '{"text":"a","tags":[1,NaN]}',
    '{"text":"a","tags":[{"w":Infinity}]}',
    '{"text":"a","tags":[[[NaN]]]}',
    '{"text":"a","limit":NaN,"score":Infinity}',
    '{"text":"a", "limit" : NaN }',
])
async def test_nan_and_infinity_in_object_arguments_are_refused(make_reach, serve, arguments):
    server = serve([_reply(arguments)])
    reach = make_reach(server.url)
    reach.register(find)
    await reach.run("find a")
    assert CALLS == []  # the tool never ran with a null in place of the model's NaN
    [reply] = _tool_replies(server)
    assert reply["error"]["code"] in ("invalid_json", "invalid_arguments")
    assert "NaN" in reply["error"]["message"] or "Infinity" in reply["error"]["message"]
    await reach.aclose()


@pytest.mark.parametrize("arguments", [
    '{"text":"\\ud800"}', '{"text":"a\\udfff b"}', '{"text":"x","tags":["\\udbff"]}',
])
async def test_lone_surrogates_in_object_arguments_are_refused(make_reach, serve, arguments):
    server = serve([_reply(arguments)])
    reach = make_reach(server.url)
    reach.register(find)
    await reach.run("find a")
    assert CALLS == []
    [reply] = _tool_replies(server)
    assert "surrogate" in reply["error"]["message"]
    await reach.aclose()


@pytest.mark.parametrize(("arguments", "expected"), [
    ('{"text":"a","limit":3}', {"text": "a", "limit": 3, "score": None, "tags": None}),
    ('{"text":"a","score":1e308,"tags":[1.5,"NaN","Infinity"]}',
     {"text": "a", "limit": None, "score": 1e308, "tags": [1.5, "NaN", "Infinity"]}),
    ('{"text":"北京 \\ud83d\\ude00","limit":null}', {"text": "北京 😀", "limit": None, "score": None, "tags": None}),
])
async def test_positive_control_object_arguments_run_as_sent(make_reach, serve, arguments, expected):
    server = serve([_reply(arguments)])
    reach = make_reach(server.url)
    reach.register(find)
    await reach.run("find a")
    assert CALLS == [expected]
    await reach.aclose()
