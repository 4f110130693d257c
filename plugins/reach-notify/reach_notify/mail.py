"""Building and sending one e-mail over SMTP (stdlib smtplib, run in a thread).

The failure mapping matters more than the happy path: a failure before the
message was handed over means "nothing was sent" (safe to try again later);
a connection lost during or after DATA means the outcome is unknown, and the
model is told not to resend blindly.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import io
import smtplib
import ssl
import time
from dataclasses import dataclass
from email import policy
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.utils import formatdate, getaddresses, make_msgid
from typing import Any

from reach_core import BusinessError, InvalidArguments, RetryableError, ToolFailure

from .headers import decoded_readings, has_breaking

HEADERS_SENT = ("From", "To", "Subject", "Date", "Message-ID", "Content-Type",
                "Content-Transfer-Encoding", "MIME-Version")
"""Exactly the headers a message reach sends has, each once."""


@dataclass(frozen=True)
class SmtpTarget:
    """Resolved connection settings (secrets already read)."""

    host: str
    port: int
    sender: str
    starttls: bool
    implicit_tls: bool
    ca_file: str | None
    username: str | None
    password: str | None
    timeout: float


def message_id(key: str | None, sender: str) -> str:
    """Stable for one idempotency key, so a receiving system can drop a duplicate."""
    domain = sender.rsplit("@", 1)[1]
    if key:
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
        return f"<reach.{digest}@{domain}>"
    return make_msgid(idstring="reach", domain=domain)


def build_message(
    *, sender: str, to: list[str], subject: str, body: str, msg_id: str
) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = msg_id
    message.set_content(body)
    return message


def render(message: EmailMessage, *, sender: str, to: list[str]) -> bytes:
    """The bytes to send (as ``smtplib.send_message`` would write them), after checking
    that they parse back to exactly the headers reach set.

    The subject is checked before (see :mod:`reach_notify.headers`); this catches
    whatever a future ``email`` package or an unforeseen encoding would still let
    through: an extra header, a second ``To``, a ``Bcc``, a changed recipient.
    """
    with io.BytesIO() as buffer:
        BytesGenerator(buffer).flatten(message, linesep="\r\n")
        raw = buffer.getvalue()
    head = raw.split(b"\r\n\r\n", 1)[0]
    problem = None
    if b"\n" in head.replace(b"\r\n", b"") or b"\r" in head.replace(b"\r\n", b""):
        problem = "a bare line break in the header block"
    else:
        # compat32 keeps values as written (cheap); header splitting is the same feed parser
        # every policy uses, so the names seen here are the names any reader sees
        parsed = BytesHeaderParser(policy=policy.compat32).parsebytes(head + b"\r\n\r\n")
        names = sorted(k.lower() for k in parsed.keys())
        expected = sorted(h.lower() for h in HEADERS_SENT)
        if names != expected:
            problem = f"headers {sorted(set(names) - set(expected)) or names}"
        elif [a for _, a in getaddresses([str(parsed["To"])])] != to:
            problem = "a changed To header"
        elif [a for _, a in getaddresses([str(parsed["From"])])] != [sender]:
            problem = "a changed From header"
        elif any(has_breaking(r) for r in decoded_readings(_unfold(str(parsed["Subject"])), with_policy=False)):
            problem = "a line break in the subject"
    if problem:
        raise InvalidArguments(
            "subject",
            f"plain text that leaves the message's headers alone (it produced {problem}); nothing was sent",
            '"Deploy finished"',
        )
    return raw


def _unfold(value: str) -> str:
    """A header value with its folding (CRLF before whitespace) removed."""
    return value.replace("\r\n ", " ").replace("\r\n\t", "\t").replace("\n ", " ").replace("\n\t", "\t")


MAX_REPLY_LINES = 100
"""Lines of one server reply (an EHLO answer has about a dozen)."""
MAX_REPLY_BYTES = 65_536
CONVERSATION_SLACK = 4.0
"""The whole conversation ends ``timeout`` + this many seconds after it began: just before
the connector's own deadline (``timeout`` + 5), so this tool, not the core, says what happened."""


class _Bounded:
    """The reading side of :class:`smtplib.SMTP` with limits a hostile server cannot stretch.

    smtplib reads a reply line by line for as long as the server marks it continued
    (``250-...``), and its timeout bounds each socket read: a server (or anyone on the
    path of a plain-text connection) sending an endless reply, or dripping it, filled
    memory and kept the worker thread reading long after the call had been reported.
    Here a reply is at most ``MAX_REPLY_LINES`` lines / ``MAX_REPLY_BYTES`` bytes and
    every read waits only until the conversation's deadline.
    """

    deadline: float = float("inf")
    file: Any
    sock: Any

    def _fail(self, why: str) -> smtplib.SMTPServerDisconnected:
        self.close()  # type: ignore[attr-defined]  # smtplib.SMTP's, next in the MRO
        return smtplib.SMTPServerDisconnected(why)

    def getreply(self) -> tuple[int, bytes]:
        lines: list[bytes] = []
        size = 0
        if self.file is None:
            self.file = self.sock.makefile("rb")
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise self._fail("the mail server did not answer in time")
            self.sock.settimeout(left)
            try:
                line = self.file.readline(smtplib._MAXLINE + 1)  # type: ignore[attr-defined]
            except OSError as error:
                raise self._fail(f"Connection unexpectedly closed: {error}") from None
            if not line:
                raise self._fail("Connection unexpectedly closed")
            size += len(line)
            if len(line) > smtplib._MAXLINE or size > MAX_REPLY_BYTES or len(lines) >= MAX_REPLY_LINES:  # type: ignore[attr-defined]
                raise self._fail("the mail server's reply is too long")
            lines.append(line[4:].strip(b" \t\r\n"))
            try:
                code = int(line[:3])
            except ValueError:
                code = -1
                break
            if line[3:4] != b"-":
                break
        return code, b"\n".join(lines)


class _SMTP(_Bounded, smtplib.SMTP):
    pass


class _SMTP_SSL(_Bounded, smtplib.SMTP_SSL):  # noqa: N801 - smtplib's spelling
    pass


async def send(target: SmtpTarget, raw: bytes, to: list[str]) -> dict[str, str]:
    """Deliver ``raw`` (from :func:`render`) to the server; returns the recipients it
    refused (others were accepted)."""
    return await asyncio.to_thread(_send_blocking, target, raw, to)


def _send_blocking(target: SmtpTarget, raw: bytes, to: list[str]) -> dict[str, str]:
    handed_over = False
    try:
        smtp: _SMTP | _SMTP_SSL
        if target.implicit_tls:
            smtp = _SMTP_SSL(timeout=target.timeout, context=tls_context(target.ca_file))
        else:
            smtp = _SMTP(timeout=target.timeout)
        smtp.deadline = time.monotonic() + target.timeout + CONVERSATION_SLACK
        # what SMTP(host) sets: the name TLS verifies (STARTTLS, implicit TLS)
        smtp._host = target.host  # type: ignore[union-attr]
        smtp.connect(target.host, target.port)
        try:
            if target.starttls:
                smtp.starttls(context=tls_context(target.ca_file))
            if target.username:
                smtp.login(target.username, target.password or "")
            smtp.ehlo_or_helo_if_needed()  # a greeting that fails here has sent nothing either
            handed_over = True
            refused = smtp.sendmail(target.sender, to, raw)
        finally:
            _quit(smtp)
        return {addr: _reply(code, text) for addr, (code, text) in refused.items()}
    except smtplib.SMTPAuthenticationError:
        raise BusinessError(
            "the mail server refused reach's login; nothing was sent. This is a set-up "
            "problem: tell the user instead of retrying."
        ) from None
    except smtplib.SMTPRecipientsRefused as error:
        listing = ", ".join(
            f"{addr} ({_reply(code, text)})" for addr, (code, text) in error.recipients.items()
        )
        raise BusinessError(
            f"the mail server refused every recipient: {listing}; nothing was sent."
        ) from None
    except smtplib.SMTPSenderRefused as error:
        raise BusinessError(
            f"the mail server refused the sender ({_reply(error.smtp_code, error.smtp_error)}); "
            "nothing was sent. Tell the user."
        ) from None
    except smtplib.SMTPDataError as error:
        raise BusinessError(
            f"the mail server rejected the message ({_reply(error.smtp_code, error.smtp_error)}); "
            "nothing was sent."
        ) from None
    except (smtplib.SMTPException, OSError) as error:
        if handed_over:
            raise ToolFailure(
                "the connection to the mail server broke while the message was being sent; "
                "it may or may not have been delivered. Do not send it again without asking the user.",
                code="outcome_unknown",
            ) from error
        raise RetryableError(
            f"the mail server at {target.host}:{target.port} could not be reached "
            f"({type(error).__name__}); nothing was sent. Try again later."
        ) from error


def _quit(smtp: smtplib.SMTP) -> None:
    """Say QUIT and close, whatever the server answers.

    By then the outcome is decided (the message accepted, refused, or the transaction
    broken): ``with SMTP(...)`` raised when QUIT's answer was not 221, so a message the
    server had queued was reported as "may or may not have been delivered", and a
    refusal reported as a broken connection.
    """
    try:
        smtp.docmd("QUIT")
    except (smtplib.SMTPException, OSError):
        pass  # the server's goodbye changes nothing that happened before it
    finally:
        smtp.close()


@functools.cache
def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """Verifying context, built once: loading the CA store costs tens of milliseconds."""
    return ssl.create_default_context(cafile=ca_file)


REPLY_EXCERPT = 200
"""Characters of a server reply quoted to the model."""


def _reply(code: int, text: bytes | str) -> str:
    """The server's reply as the model sees it: one line of at most ``REPLY_EXCERPT``
    printable characters.

    The model reads this, and a reply is whatever the server (or, without TLS, anyone
    on the path) wrote: a multi-line ``550-`` reply can hold ``SYSTEM: ...`` lines,
    escape sequences, bidi overrides, and 64 KB of them. Line breaks and every
    non-printable character become spaces, as in a webhook's error excerpt.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = " ".join("".join(c if c.isprintable() else " " for c in text[: REPLY_EXCERPT * 4]).split())
    return f"{code} {text[:REPLY_EXCERPT]}".strip()
