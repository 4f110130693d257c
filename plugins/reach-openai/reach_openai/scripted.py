"""A scripted OpenAI-compatible model server on 127.0.0.1, for demos and tests.

Where a hosted model cannot run (offline demo, CI), this stands in for it and
speaks the real wire protocol: ``POST /v1/chat/completions`` (plain JSON, or
server-sent events with ``"stream": true``) and ``GET /v1/models``, so the real
``openai`` SDK and every client built on it (LangChain, pydantic-ai ...) talk to
it unchanged.

A *script* is data: a list of steps, replayed in order. Which step answers a
request is decided by the request itself (the number of assistant messages it
already holds), so the server keeps no conversation state and any number of
runs can share it::

    script = [
        ToolCalls([Call("get_weather", {"city": "北京"}), Call("append_note", {"text": "5 km"})]),
        Answer("北京 {get_weather[temperature]}, {get_weather[condition]}."),
    ]
    with ScriptedModelServer(script) as server:
        client = openai.OpenAI(base_url=server.url, api_key="scripted")

``Answer`` templates are ``str.format`` strings over the latest result of each
tool (parsed JSON) found in the request's messages; a callable gets the whole
:class:`ScriptContext`. ``Fail`` answers with an HTTP error, and every step may
``delay`` its answer (for timeout tests).

When a request carries no ``tools`` (a text-only model, reach-openai's tagged
mode), tool calls are written as ``<tool_call>{...}</tool_call>`` text and tool
results are read back from ``<tool_result>`` blocks.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Answer",
    "Call",
    "Fail",
    "ScriptContext",
    "ScriptedModelServer",
    "Step",
    "ToolCalls",
    "estimate_tokens",
    "scripted_servers",
]

SCRIPTED_MODEL = "reach-scripted"


@dataclass(slots=True)
class Call:
    """A tool call the script makes; ``arguments`` as a dict, or a raw string (e.g. broken JSON)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def raw_arguments(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class ToolCalls:
    """Answer with tool calls (several at once are allowed), optionally with some text."""

    calls: Sequence[Call] | Callable[[ScriptContext], Sequence[Call]]
    text: str | None = None
    delay: float = 0.0


@dataclass(slots=True)
class Answer:
    """Answer in text: a ``str.format`` template over tool results, or a callable."""

    text: str | Callable[[ScriptContext], str]
    delay: float = 0.0


@dataclass(slots=True)
class Fail:
    """Answer with an HTTP error in OpenAI's error shape."""

    status: int
    message: str = "scripted failure"
    retry_after: float | None = None
    delay: float = 0.0


Step = ToolCalls | Answer | Fail


@dataclass(slots=True)
class ScriptContext:
    """What a callable step learns about the request it answers."""

    body: dict[str, Any]
    messages: list[dict[str, Any]]
    step: int
    tools: list[str]
    tool_choice: Any
    results: dict[str, Any]
    history: list[tuple[str, Any]]
    question: str

    @property
    def tagged(self) -> bool:
        return not self.body.get("tools")


class _Results(dict):
    """Template namespace: unknown names render as ``{name}`` instead of raising."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


_CJK = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")
_RESULT_TAG = re.compile(r'<tool_result name="([^"]*)"[^>]*>(.*?)</tool_result>', re.S)


def estimate_tokens(text: str) -> int:
    """A rough token count: one per CJK character, one per four other characters."""
    cjk = len(_CJK.findall(text))
    return cjk + max(0, len(text) - cjk + 3) // 4


def _parse_json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _context(body: dict[str, Any]) -> ScriptContext:
    messages = list(body.get("messages") or [])
    names: dict[str, str] = {}
    history: list[tuple[str, Any]] = []
    question = ""
    for msg in messages:
        role = msg.get("role")
        if role == "assistant":
            for tc in msg.get("tool_calls") or []:
                names[str(tc.get("id"))] = (tc.get("function") or {}).get("name", "")
        elif role == "tool":
            history.append(
                (names.get(str(msg.get("tool_call_id")), ""), _parse_json(msg.get("content")))
            )
        elif role == "user":
            text = _text(msg.get("content"))
            found = _RESULT_TAG.findall(text)
            if found:
                history.extend((name, _parse_json(content)) for name, content in found)
            elif not question:
                question = text
    tools = [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]
    return ScriptContext(
        body=body,
        messages=messages,
        step=sum(1 for m in messages if m.get("role") == "assistant"),
        tools=tools,
        tool_choice=body.get("tool_choice"),
        results=dict(history),
        history=history,
        question=question,
    )


ScriptSource = Sequence[Step] | Mapping[str | None, Sequence[Step]]


class ScriptedModelServer:
    """Serve a script on ``127.0.0.1`` in a daemon thread; ``url`` ends in ``/v1``.

    ``script`` is a list of steps, or a mapping from a substring of the first
    user message to a list (key ``None``: the default). ``api_key`` makes the
    server answer 401 to any other key. ``requests`` records every request body.
    """

    def __init__(
        self,
        script: ScriptSource,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        model: str = SCRIPTED_MODEL,
    ) -> None:
        self.script = script
        self.api_key = api_key
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._seen_prefixes: set[str] = set()
        self._count = 0
        server = _QuietServer((host, port), _handler(self))
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedModelServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- answering -------------------------------------------------------------
    def _steps_for(self, ctx: ScriptContext) -> Sequence[Step]:
        if isinstance(self.script, Mapping):
            for key, steps in self.script.items():
                if key is not None and key in ctx.question:
                    return steps
            if None in self.script:
                return self.script[None]
            raise LookupError(f"no script matches the question {ctx.question[:80]!r}")
        return self.script

    def _usage(self, body: dict[str, Any], completion_text: str) -> dict[str, Any]:
        """Token counts with a simulated prompt cache keyed on the request's prefix."""
        segments = [json.dumps([body.get("model"), body.get("tools")], ensure_ascii=False)]
        segments += [
            json.dumps(m, ensure_ascii=False, sort_keys=True) for m in body.get("messages") or []
        ]
        digest = hashlib.sha256()
        prompt = cached = 0
        with self._lock:
            hit = True
            for seg in segments:
                digest.update(seg.encode())
                key = digest.hexdigest()
                tokens = estimate_tokens(seg)
                prompt += tokens
                if hit and key in self._seen_prefixes:
                    cached += tokens
                else:
                    hit = False
                self._seen_prefixes.add(key)
        completion = estimate_tokens(completion_text)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], float, dict[str, str]]:
        """Status, JSON body, delay and extra headers for one chat completion request."""
        with self._lock:
            self.requests.append(body)
            self._count += 1
            number = self._count
        ctx = _context(body)
        try:
            steps = self._steps_for(ctx)
        except LookupError as exc:
            return 400, _error(str(exc), "invalid_request_error"), 0.0, {}
        if ctx.step >= len(steps):
            return (
                500,
                _error(
                    f"scripted model: the script has {len(steps)} steps and this request needs step "
                    f"{ctx.step + 1}",
                    "server_error",
                ),
                0.0,
                {},
            )
        step = steps[ctx.step]
        if isinstance(step, Fail):
            headers = (
                {"Retry-After": f"{step.retry_after:g}"} if step.retry_after is not None else {}
            )
            kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(
                step.status, "server_error"
            )
            return step.status, _error(step.message, kind), step.delay, headers

        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        finish = "stop"
        if isinstance(step, ToolCalls):
            calls = list(step.calls(ctx) if callable(step.calls) else step.calls)
            if ctx.tagged:
                blocks = [
                    f'<tool_call>{{"name": {json.dumps(c.name, ensure_ascii=False)}, '
                    f'"arguments": {c.raw_arguments()}}}</tool_call>'
                    for c in calls
                ]
                message["content"] = "\n".join(([step.text] if step.text else []) + blocks)
            else:
                message["content"] = step.text
                message["tool_calls"] = [
                    {
                        "id": c.id or f"call_{number}_{i}",
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.raw_arguments()},
                    }
                    for i, c in enumerate(calls)
                ]
                finish = "tool_calls"
        else:
            if callable(step.text):
                message["content"] = str(step.text(ctx))
            else:
                message["content"] = step.text.format_map(_Results(ctx.results))
        completion_text = (message["content"] or "") + json.dumps(
            message.get("tool_calls") or "", ensure_ascii=False
        )
        reply = {
            "id": f"chatcmpl-scripted-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "reach-scripted",
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": self._usage(body, completion_text),
        }
        return 200, reply, step.delay, {}


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (timeout tests) is expected, not an error to print."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _chunks(reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The streaming form of a complete reply (role, content, tool calls, finish, usage)."""
    base = {k: reply[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    choice = reply["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        out.append(chunk({"content": message["content"]}))
    for i, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        out.append({**base, "choices": [], "usage": reply["usage"]})
    return out


def _handler(owner: ScriptedModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "reach-scripted/1"
        # Headers and body leave in one segment: with keep-alive, Nagle plus delayed ACKs
        # would otherwise add ~40 ms to every request.
        disable_nagle_algorithm = True
        wbufsize = -1

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _send_json(
            self, status: int, payload: dict[str, Any], headers: Mapping[str, str] = {}
        ) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            if owner.api_key is None:
                return True
            if self.headers.get("Authorization", "") == f"Bearer {owner.api_key}":
                return True
            self._send_json(
                401,
                _error("Incorrect API key provided (scripted model server).", "invalid_api_key"),
            )
            return False

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path.rstrip("/") == "/v1/models":
                self._send_json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": owner.model,
                                "object": "model",
                                "created": 0,
                                "owned_by": "reach",
                            }
                        ],
                    },
                )
            else:
                self._send_json(404, _error(f"no route GET {self.path}", "invalid_request_error"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not self._authorized():
                return
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send_json(404, _error(f"no route POST {self.path}", "invalid_request_error"))
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send_json(400, _error("request body is not JSON", "invalid_request_error"))
                return
            status, payload, delay, headers = owner.respond(body)
            if delay:
                time.sleep(delay)
            if status != 200 or not body.get("stream"):
                self._send_json(status, payload, headers)
                return
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in _chunks(payload, include_usage):
                self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


@contextmanager
def scripted_servers(**defaults: Any) -> Iterator[Callable[..., ScriptedModelServer]]:
    """``start(script, **kw)`` starts a server (``defaults`` under ``kw``, e.g. ``api_key``);
    every server started is closed when the block ends. Backs the tests' ``scripted`` fixtures."""
    servers: list[ScriptedModelServer] = []

    def start(script: Any, **kw: Any) -> ScriptedModelServer:
        server = ScriptedModelServer(script, **{**defaults, **kw}).start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.close()
