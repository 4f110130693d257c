"""Red team: secrets reach was configured with never reach the model, the caller or the logs.

Three secrets are configured the ways config allows: an API key read from the
environment (``{ env = "VAR" }``), a password written under a secret key name in a
plugin's table, and the password of a DSN URL. A tool then leaks each, in many
spellings (as is, other case, URL-escaped, base64 at every offset, hex, JSON- and
HTML-escaped, cut in two), through every channel a model or log reads: content
(strings, keys, nested), error messages, ``fix`` hints, streamed items, progress
events and log records.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from reach_core import BusinessError, Connector, Denied
from reach_core.hookspecs import hookimpl
from reach_core.redact import MASK, Redactor
from reach_core.testing import make_reach

API_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c"
PASSWORD = "hunter2-Correct-Horse!"
DSN_PASSWORD = "Pa55/w0rd-xyz"
SECRETS = {"api_key": API_KEY, "password": PASSWORD, "dsn": DSN_PASSWORD}


def _b64(data: str, prefix: str = "") -> str:
    return base64.b64encode((prefix + data).encode()).decode()


# name -> how the secret is written in the leak
SPELLINGS: dict[str, Any] = {
    "as-is": lambda s: s,
    "upper": lambda s: s.upper(),
    "lower": lambda s: s.lower(),
    "swapcase": lambda s: s.swapcase(),
    "url-quote": lambda s: quote(s, safe=""),
    "url-quote-plus": lambda s: quote_plus(s),
    "url-all": lambda s: "".join(f"%{ord(c):02X}" for c in s),
    "url-all-lower": lambda s: "".join(f"%{ord(c):02x}" for c in s),
    "url-every-other": lambda s: "".join(f"%{ord(c):02x}" if i % 2 else c for i, c in enumerate(s)),
    "base64": lambda s: _b64(s),
    "base64-urlsafe": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    "base64-nopad": lambda s: _b64(s).rstrip("="),
    "base64-offset1": lambda s: _b64(s, "x"),
    "base64-offset2": lambda s: _b64(s, "xy"),
    "basic-auth": lambda s: "Basic " + _b64(s, "svc-user:"),
    "base64-in-json": lambda s: _b64(json.dumps({"key": s})),
    "hex": lambda s: s.encode().hex(),
    "hex-upper": lambda s: s.encode().hex().upper(),
    "hex-escapes": lambda s: "".join(f"\\x{b:02x}" for b in s.encode()),
    "json-dumps": lambda s: json.dumps({"token": s}),
    "json-unicode-escaped": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "json-in-json": lambda s: json.dumps(json.dumps({"v": s})),
    "json-in-sentence": lambda s: f'request failed: {{"auth": "{s}", "user": "bob"}} (retrying)',
    "html-entities": lambda s: "".join(f"&#{ord(c)};" for c in s),
    "html-hex-entities": lambda s: "".join(f"&#x{ord(c):x};" for c in s),
    "in-url-query": lambda s: f"https://api.example/v1?q=1&k={quote(s, safe='')}&z=2",
    "in-word": lambda s: f"prefix{s}suffix",
}


def _leaks(secret: str, spelling: str) -> list[str]:
    """What must not appear in the output: the leaked text, and the secret itself."""
    text = SPELLINGS[spelling](secret)
    return [secret, text] if spelling not in ("basic-auth", "base64-offset1", "base64-offset2",
                                              "base64-in-json", "json-in-sentence", "in-url-query",
                                              "in-word") else [secret]


def _leaky_plugin():
    """A plugin whose tools know its configured secrets (as a real connector knows its key)
    and leak them on request, through every channel."""

    holder: dict[str, Any] = {}

    def spelled(params: dict[str, Any]) -> str:
        secret = holder["settings"][params["which"]] if params["which"] != "dsn" else DSN_PASSWORD
        return SPELLINGS[params["spelling"]](secret)

    schema = {"type": "object", "properties": {"which": {"type": "string"}, "spelling": {"type": "string"},
                                               "where": {"type": "string"}}, "required": ["which", "spelling"]}

    class Leak(Connector):
        name = "leak"
        risk = "read"
        description = "Leaks a secret. Use when testing."
        input_schema = schema

        async def execute(self, params, ctx):
            text = spelled(params)
            where = params.get("where", "content")
            if where == "content":
                return text
            if where == "nested":
                return {"data": [{"note": f"see {text} here"}], "n": 1}
            if where == "key":
                return {text: "value"}
            if where == "error":
                raise BusinessError(f"upstream said: invalid key {text}")
            if where == "internal":
                raise RuntimeError(f"connect failed with {text}")
            if where == "progress":
                await ctx.report_progress(1, 2, f"using {text}")
                return "done"
            raise AssertionError(where)

    class LeakStream(Connector):
        name = "leak_stream"
        risk = "read"
        description = "Streams a secret in two chunks. Use when testing."
        input_schema = schema

        async def execute_stream(self, params, ctx):
            text = spelled(params)
            cut = int(params.get("where") or len(text) // 2)
            yield "chunk one: " + text[:cut]
            yield text[cut:] + " (end)"

    class Plugin:
        REACH_PLUGIN_NAME = "reach-leaky"

        def __init__(self) -> None:
            self.progress: list[dict[str, Any]] = []

        @hookimpl
        def reach_tool_progress(self, event, ctx):
            self.progress.append(dict(event))

        @hookimpl
        def reach_plugin_settings(self):
            return dict  # the raw table, its { env = ... } values resolved

        @hookimpl
        def reach_register_tools(self, register, settings, reach):
            holder["settings"] = {"api_key": settings["api"]["key"], "password": settings["password"]}
            register(Leak())
            register(LeakStream())

        @hookimpl
        def reach_pre_invoke(self, call, tool, ctx):
            args = call.arguments or {}
            if args.get("where") == "fix":
                raise Denied("not now", fix=f"set token = {spelled(args)}")

    return Plugin()


@pytest.fixture(scope="module")
def leaky():
    return _leaky_plugin()


@pytest.fixture(scope="module")
def reach(tmp_path_factory, leaky):
    """One Reach for the module (built once: the families run hundreds of calls)."""
    from reach_core import connector

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("REACH_REDTEAM_API_KEY", API_KEY)
        config = {"plugins": {"reach-leaky": {"api": {"key": {"env": "REACH_REDTEAM_API_KEY"}},
                                              "password": PASSWORD,
                                              "dsn": f"postgresql://app:{quote(DSN_PASSWORD, safe='')}@db/app"}}}
        reach = make_reach(("reach-leaky", leaky), config=config, data_dir=tmp_path_factory.mktemp("leaky"))

    @connector(name="echo", risk="read")
    async def echo(text: str) -> str:
        """Echo text. Use when testing."""
        return text

    reach.register(echo)
    assert [t.name for t in reach.all_tools()] == ["leak", "leak_stream", "echo"]
    return reach


@pytest.fixture(autouse=True)
def _fresh_progress(leaky):
    leaky.progress.clear()


def _seen(result) -> str:
    """Everything a model or caller sees of a result, as text."""
    return json.dumps({"content": result.content, "error": result.error_dict() if result.error else None,
                       "meta": result.meta}, ensure_ascii=False, default=str)


def _assert_clean(text: str, secret: str, spelling: str) -> None:
    for leak in _leaks(secret, spelling):
        assert leak not in text, (spelling, leak, text)
        if spelling in ("as-is", "upper", "lower", "swapcase", "hex", "hex-upper"):
            assert leak.lower() not in text.lower(), (spelling, leak, text)


WHICH = ["api_key", "password", "dsn"]


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("which", WHICH)
def test_content_string(reach, which, spelling):
    result = asyncio.run(reach.invoke("leak", {"which": which, "spelling": spelling}))
    assert result.ok
    _assert_clean(_seen(result), SECRETS[which], spelling)
    assert MASK in _seen(result)


@pytest.mark.parametrize("where", ["nested", "key", "error", "fix", "internal", "progress"])
@pytest.mark.parametrize("spelling", ["as-is", "url-quote", "base64", "basic-auth", "hex-upper",
                                      "json-unicode-escaped", "json-in-sentence", "swapcase"])
@pytest.mark.parametrize("which", WHICH)
def test_every_channel(reach, leaky, which, spelling, where, caplog):
    with caplog.at_level(logging.DEBUG, logger="reach"):
        result = asyncio.run(reach.invoke("leak", {"which": which, "spelling": spelling, "where": where}))
    seen = _seen(result)
    _assert_clean(seen, SECRETS[which], spelling)
    logged = "\n".join(r.getMessage() + json.dumps(getattr(r, "reach_event", {}), default=str)
                       for r in caplog.records)
    _assert_clean(logged, SECRETS[which], spelling)
    _assert_clean(json.dumps(leaky.progress, default=str), SECRETS[which], spelling)
    if where == "internal":
        assert "connect failed with" in logged and (MASK in logged or "***" in logged)  # still says what happened
    if where == "progress":
        assert [e["message"].startswith("using ") for e in leaky.progress] == [True]
        assert MASK in leaky.progress[0]["message"]
    if where in ("error", "fix", "nested", "key"):
        assert MASK in seen


async def _stream(reach, args):
    events = []
    async for event in reach.invoke_stream("leak_stream", args):
        events.append(event)
    return events


@pytest.mark.parametrize("cut", ["4", "6", "half", "-4", "-6"])
@pytest.mark.parametrize("spelling", ["as-is", "url-quote", "hex", "base64"])
@pytest.mark.parametrize("which", WHICH)
def test_stream_cut_in_two(reach, which, spelling, cut):
    text = SPELLINGS[spelling](SECRETS[which])
    at = len(text) // 2 if cut == "half" else int(cut) % len(text)
    events = asyncio.run(_stream(reach, {"which": which, "spelling": spelling, "where": str(at)}))
    chunks = [e["item"] for e in events[:-1] if e.get("type") == "item"]
    assert len(chunks) == 2
    assert text[:at] not in chunks[0] and text[at:] not in chunks[1], chunks
    assert chunks[0].startswith("chunk one: ") and chunks[1].endswith(" (end)")  # the rest is intact
    final = events[-1]
    _assert_clean(_seen(final), SECRETS[which], spelling)


@pytest.mark.parametrize("text", [
    "the weather in Paris is 21 degrees", "sk-", "hun", "Pa5", "a password reset link was sent",
    '{"password_hint": "your dog"}', "4f9a", "hunter1-Correct", "live", "Correct Horse Battery Staple",
])
def test_positive_control_ordinary_content_unchanged(reach, text):
    """Results are masked for the configured values only: ordinary text (also text that
    shares fewer than MIN_PIECE characters with a secret at its ends, or a few inside)
    reaches the model as the tool gave it."""

    result = asyncio.run(reach.invoke("echo", {"text": text}))
    assert result.ok and result.content == text


def test_positive_control_no_secrets_configured(tmp_path):
    """Without configured secrets nothing is masked in results: not even text shaped like
    a key (results go to the model as the tool gave them; the shape rules are for logs)."""
    from reach_core import connector

    reach = make_reach(data_dir=tmp_path, config={"agents": {"ops": {"max_tier": "write"}}})

    @connector(name="echo", risk="read")
    async def echo(text: str) -> str:
        """Echo text. Use when testing."""
        return text

    reach.register(echo)
    assert not reach.redactor.known.values
    for text in (API_KEY, f"password={PASSWORD}", _b64(API_KEY)):
        assert asyncio.run(reach.invoke("echo", {"text": text})).content == text


# -- the key and pattern rules (logs, audit): holes found by the earlier round ---------------

@pytest.mark.parametrize("text", [
    r'{\"api_key\": \"abc123xyz789\"}',
    r'body={\"password\":\"abc123xyz789\",\"user\":\"bob\"}',
    r'\"client_secret\" : \"abc123xyz789\"',
    'request failed: {"api_key": "abc123xyz789", "user": "bob"} (retrying)',
    'got {"token":"abc123xyz789"} from server',
    'payload {"db": {"password": "abc123xyz789"}} was sent',
    "log: {'secret': 'abc123xyz789'} done",
    "api%5Fkey=abc123xyz789",
    "api%5fkey=abc123xyz789&x=1",
    "GET /v1?api%5Fkey=abc123xyz789",
    "%61pi_key=abc123xyz789",
    "pass%77ord=abc123xyz789",
    "PASS%57ORD=abc123xyz789",
    "access%2Dtoken=abc123xyz789",
    "x_api%2Dkey: abc123xyz789",
    '"api\\u005fkey": "abc123xyz789"',
    '{"\\u0070assword": "abc123xyz789"}',
    # escaped twice, quotes as \u0022, keys escaped inside an escaped object
    r'{\\\"api_key\\\":\\\"abc123xyz789\\\"}',
    r'\u0022api_key\u0022: \u0022abc123xyz789\u0022',
    r'{\"\u0070assword\": \"abc123xyz789\"}',
    r'"API\u005FKEY":"abc123xyz789"',
    # JSON objects inside a sentence whose shape is not key=value
    'sent {"api_keys": ["abc123xyz789", "zzz"]} ok',
    'sent {"name": "DB_PASSWORD", "value": "abc123xyz789"} ok',
    'sent [{"name": "api_key", "value": "abc123xyz789"}] ok',
    'prefix {"a": 1, "b": {"c": [1, {"password": "abc123xyz789"}]}} suffix',
    'two: {"x":1} and {"token":"abc123xyz789"}',
    'sent {"password": "abc 123xyz789 horse"} ok',
    # percent escapes over the separator, the whole pair, or the whole object
    "q=api_key%3Dabc123xyz789",
    "%70%61%73%73%77%6F%72%64%3Dabc123xyz789",
    "api%5Fkey%3Aabc123xyz789",
    "data=%7B%22api_key%22%3A%22abc123xyz789%22%7D",
    "api%255Fkey=abc123xyz789",
    "api&#95;key=abc123xyz789",
])
def test_rules_mask_escaped_keys(text):
    out = Redactor().text(text)
    assert "abc123xyz789" not in out, out


@pytest.mark.parametrize("text", [
    "api%5Fversion=2", "page%5Fsize=10", '{"user": "bob", "count": 2}', "see {\"name\": \"x\"} here",
    "see [1, 2] and {\"user\": \"bob\"} fine", "100% sure, 50%25 off", "path /a%20b/c?city=Paris",
    'JSON {"a": "\\u00e9t\\u00e9"}', "q=max%5Ftokens%3D100", '{"monkey": "banana", "author": "Ann"} ok',
])
def test_rules_positive_controls(text):
    assert Redactor().text(text) == text
