"""Red-team round 6: a webhook's error answer that repeats the webhook's own secret.

The URL of a chat webhook *is* its credential (``/services/T0/B0/<token>``,
``/api/webhooks/<id>/<token>``, ``?token=...``), and some webhooks also carry an
``Authorization`` header from settings. reach never quotes them, but it shows the model
the first 200 characters of an error answer, and many servers repeat the request in
theirs: Express answers an unknown route with ``Cannot POST /services/T0/B0/<token>``,
frameworks echo the URL, the query, the header they refused. The model (which an
attacker may be talking to) then read the token. Now every part of the URL and of the
configured header values that could be a secret is replaced by ``[redacted]`` in the
excerpt, as written, percent-decoded, JSON-escaped, in any case, gzip-encoded or
not, also when the excerpt's 200-character cut would have kept only its start.

A real HTTP server on 127.0.0.1 answers each POST with a 4xx whose body echoes what it got.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote

import pytest

from reach_core.testing import LoopbackHandler, serve_loopback

TOKEN = "Xk29QpLm7RtV4wZa8NcYe3Hb"
HEADER_TOKEN = "hdr-5f1c9a7e2b8d4c6f0a3e"
PATHS = {
    "slack": f"/services/T0A1B2C3D/B0E4F5G6H/{TOKEN}",
    "discord": f"/api/webhooks/112233445566778899/{TOKEN}",
    "query": f"/hook?token={TOKEN}&v=1",
    "encoded": "/hook/" + TOKEN[:8] + "%2B" + TOKEN[8:] + "%3D%3D",
}


def _secret_of(kind: str) -> str:
    return unquote(PATHS[kind].rsplit("/", 1)[1]) if kind == "encoded" else TOKEN


def _tail(path: str) -> str:
    """The token in ``path`` (its last segment, or the query's token value), decoded."""
    return unquote(path).rsplit("/", 1)[1].split("token=")[-1].split("&")[0]


Echo = Callable[[str, dict[str, str]], str]

ECHOES: dict[str, Echo] = {
    "express-404": lambda path, h: f"<!DOCTYPE html><pre>Cannot POST {path}</pre>",
    "decoded-path": lambda path, h: f"Cannot POST {unquote(path)}",
    "full-url": lambda path, h: f"no route for http://{h['host']}{path}",
    "json-escaped": lambda path, h: json.dumps({"error": "not_found", "path": unquote(path)}),
    "token-only": lambda path, h: "invalid_token " + _tail(path),
    "upper": lambda path, h: f"CANNOT POST {unquote(path).upper()}",
    "late": lambda path, h: "x" * 185 + " " + unquote(path),  # the 200-character cut keeps the token's start
    # past the 400 characters reach used to keep before collapsing whitespace, which pulls it forward
    "spaced-late": lambda path, h: " " * 380 + "token=" + _tail(path),
    # reach reads 4 KB of an answer: the read ends inside the token, the spaces before it collapse
    "cut-at-4k": lambda path, h: " " * (4096 - 16) + "token=" + _tail(path) + " and more",
    "auth-header": lambda path, h: f"401: bad credentials {h.get('authorization', '')}",
    "auth-token-only": lambda path, h: f"token {h.get('authorization', '').split()[-1]} revoked",
}
GZIP = {"express-404", "auth-header"}


@pytest.fixture
def echo_server() -> Iterator[tuple[str, dict[str, Any]]]:
    state: dict[str, Any] = {"echo": ECHOES["express-404"], "gzip": False, "status": 404}

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.read_body()
            text = state["echo"](self.path, {k.lower(): v for k, v in self.headers.items()})
            body = text.encode()
            extra = {"Content-Type": "text/html"}
            if state["gzip"]:
                body = gzip.compress(body, mtime=0)
                extra["Content-Encoding"] = "gzip"
            self.reply(state["status"], body, extra)

    with serve_loopback(Handler) as base:
        yield base, state


CASES = [(kind, echo, gz) for kind in PATHS for echo in ECHOES if not echo.startswith("auth")
         for gz in ([False, True] if echo in GZIP else [False])] + [
    ("slack", echo, gz) for echo in ("auth-header", "auth-token-only") for gz in (False, True)]


def _leaks(message: str, secret: str) -> list[str]:
    """Pieces of ``secret`` (8 characters or more, any case) that appear in ``message``."""
    low, sec = message.lower(), secret.lower()
    return [sec[i:i + 8] for i in range(len(sec) - 7) if sec[i:i + 8] in low]


@pytest.mark.parametrize(("kind", "echo", "gz"), CASES,
                         ids=[f"{k}-{e}{'-gzip' if g else ''}" for k, e, g in CASES])
async def test_an_echoed_secret_never_reaches_the_model(kind: str, echo: str, gz: bool, echo_server: Any,
                                                        make_notify: Any) -> None:
    base, state = echo_server
    state.update(echo=ECHOES[echo], gzip=gz)
    hook: dict[str, Any] = {"url": base + PATHS[kind], "timeout": 3}
    secret = _secret_of(kind)
    if echo.startswith("auth"):
        hook["headers"] = {"Authorization": f"Bearer {HEADER_TOKEN}"}
        secret = HEADER_TOKEN
    reach = make_notify({"webhooks": {"ops": hook}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "deploy done"})
    assert result.error is not None and result.error.code == "execution_failed", result
    message = result.error.message
    assert "HTTP 404" in message
    assert not _leaks(message, secret), message
    assert "[redact" in message, message  # the excerpt is still there, the secret cut out (the mark may be cut)


@pytest.mark.parametrize("body", ["invalid_payload", "no_text: the text field is missing",
                                  "channel_not_found", "Cannot POST here: method not allowed"])
async def test_an_answer_without_the_secret_reads_as_before(body: str, echo_server: Any, make_notify: Any) -> None:
    base, state = echo_server
    state.update(echo=lambda path, h: body, status=400)
    reach = make_notify({"webhooks": {"ops": {"url": base + PATHS["slack"], "timeout": 3,
                                              "headers": {"Authorization": f"Bearer {HEADER_TOKEN}"}}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "deploy done"})
    assert result.error.message == f"the `ops` webhook refused the message with HTTP 400: {body}. " \
                                   "Do not resend it unchanged.", result.error.message


@pytest.mark.parametrize("echo", ["express-404", "token-only", "json-escaped", "late"])
async def test_a_url_read_from_the_environment_is_kept_out_too(echo: str, echo_server: Any, make_notify: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented set-up (``url = { env = ... }``): the core masks the whole URL, not its token alone."""
    base, state = echo_server
    state.update(echo=ECHOES[echo])
    monkeypatch.setenv("REACH_TEST_OPS_HOOK", base + PATHS["slack"])
    reach = make_notify({"webhooks": {"ops": {"url": {"env": "REACH_TEST_OPS_HOOK"}, "timeout": 3}}})
    result = await reach.invoke("send_webhook", {"channel": "ops", "text": "deploy done"})
    assert result.error is not None and result.error.code == "execution_failed", result
    assert not _leaks(result.error.message, TOKEN), result.error.message
