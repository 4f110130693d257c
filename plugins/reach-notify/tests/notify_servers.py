"""Real receivers on 127.0.0.1 for the reach-notify tests: an aiosmtpd SMTP inbox and a
threaded HTTP webhook endpoint (a unique module name, so plugin test runs never mix them up)."""

from __future__ import annotations

import json
import socket
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from reach_core.testing import LoopbackHandler, serve_loopback

SMTP_USER, SMTP_PASSWORD = "reach", "s3cret-pass"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------ SMTP


@dataclass
class Delivered:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage


@dataclass
class Inbox:
    """aiosmtpd handler: keeps what arrived; refuses RCPT for `reject@...`; can hang up."""

    delivered: list[Delivered] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)
    hang_up_on_data: bool = False

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        if address.startswith("reject@"):
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802
        if self.hang_up_on_data:
            server.transport.close()
            return "421 closing"
        parsed = message_from_bytes(envelope.original_content, policy=policy.default)
        self.delivered.append(Delivered(envelope.mail_from, list(envelope.rcpt_tos), parsed))
        return "250 Message accepted for delivery"

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == SMTP_USER
            and auth_data.password.decode() == SMTP_PASSWORD
        )
        if ok:
            self.logins.append(auth_data.login.decode())
        return AuthResult(success=ok, handled=False)


@dataclass
class SmtpServer:
    inbox: Inbox
    port: int
    ca_file: Path | None = None


def start_smtp(inbox: Inbox, **kwargs: Any) -> tuple[Controller, int]:
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    return controller, port


# ------------------------------------------------------------------ webhooks


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class WebhookReceiver:
    """Answers by path: /ok 200, /reject 400, /down 503, /limit 429, /moved 302, /slow hangs.

    Serves while in a ``with`` block: ``with WebhookReceiver() as hook: hook.url("/ok")``.
    """

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.port = 0
        receiver = self

        class Handler(LoopbackHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.read_body()
                receiver.received.append(
                    Received(
                        self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw)
                    )
                )
                if self.path == "/slow":
                    time.sleep(3)  # the client gives up first: reply() drops the answer
                status, body, extra = {
                    "/ok": (200, b"ok", {}),
                    "/reject": (400, b"invalid_payload", {}),
                    "/down": (503, b"", {}),
                    "/limit": (429, b"", {"Retry-After": "7"}),
                    "/moved": (302, b"", {"Location": f"http://127.0.0.1:{receiver.port}/ok"}),
                }.get(urlsplit(self.path).path, (200, b"ok", {}))  # a query (a token) changes nothing
                self.reply(status, body, extra)

        self._handler = Handler
        self._running = ExitStack()

    def __enter__(self) -> WebhookReceiver:
        self.port = urlsplit(self._running.enter_context(serve_loopback(self._handler))).port or 0
        return self

    def __exit__(self, *exc: object) -> None:
        self._running.close()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


# ------------------------------------------------------------------ reach
