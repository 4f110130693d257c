"""Red-team round 5: a mail server (or anyone on a plain-text SMTP path) that never stops answering.

smtplib reads one reply for as long as its lines say "continued" (``250-``) and bounds
each socket read, not the reply: an endless reply filled memory (550 MB in 6 s), a
dripped one kept the worker thread reading after the call had been reported, and the
model was told the message *might* have been sent when the greeting never finished.
Now a reply is at most 100 lines / 64 KB, the whole conversation has one deadline, and a
failure before the message was handed over says nothing was sent.

A scripted SMTP server on 127.0.0.1 behaves until the phase under test, then floods or
drips; it records what it received and when the client hung up.
"""

from __future__ import annotations

import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_notify.mail as mail
from conftest import scripted_smtp_reach

PHASES = ["greeting", "ehlo", "mail", "rcpt", "data", "end"]
CAP = 48 << 20  # the flood stops here whatever the client does (keeps a failing run bounded)
DRIP_FOR = 12.0  # ... and the drip after this many seconds (the previous client read on and on)


class Scripted:
    def __init__(self, phase: str, how: str) -> None:
        self.phase, self.how = phase, how
        self.flooded = 0
        self.received: list[bytes] = []
        self.hung_up = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _misbehave(self, conn: socket.socket, code: bytes) -> None:
        line = code + b"-" + b"x" * 500 + b"\r\n"
        started = time.monotonic()
        try:
            while self.flooded < CAP and time.monotonic() - started < DRIP_FOR:
                conn.sendall(line)
                self.flooded += len(line)
                if self.how == "drip":
                    time.sleep(0.05)
        except OSError:
            self.hung_up.set()  # the client closed the connection

    def _run(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(30)
            reader = conn.makefile("rb")
            if self.phase == "greeting":
                return self._misbehave(conn, b"220")
            conn.sendall(b"220 scripted ESMTP\r\n")
            in_data = False
            try:
                while True:
                    line = reader.readline()
                    if not line:
                        self.hung_up.set()
                        return
                    self.received.append(line)
                    if in_data:
                        if line == b".\r\n":
                            in_data = False
                            if self.phase == "end":
                                return self._misbehave(conn, b"250")
                            conn.sendall(b"250 queued\r\n")
                        continue
                    verb = line[:4].upper()
                    phase = {b"EHLO": "ehlo", b"HELO": "ehlo", b"MAIL": "mail", b"RCPT": "rcpt",
                             b"DATA": "data"}.get(verb)
                    if phase == self.phase:
                        return self._misbehave(conn, b"354" if phase == "data" else b"250")
                    if verb == b"DATA":
                        in_data = True
                        conn.sendall(b"354 go on\r\n")
                    elif verb == b"QUIT":
                        conn.sendall(b"221 bye\r\n")
                        return
                    else:
                        conn.sendall(b"250 ok\r\n")
            except OSError:
                self.hung_up.set()

    def stop(self) -> None:
        self.sock.close()


@pytest.fixture
def scripted() -> Iterator[list[Scripted]]:
    made: list[Scripted] = []
    yield made
    for s in made:
        s.stop()


async def _send(server: Scripted, tmp_path: Path) -> tuple[Any, int]:
    reach = scripted_smtp_reach(server.port, tmp_path)
    tracemalloc.start()
    try:
        result = await reach.invoke("send_email", {"to": "ops@example.com", "subject": "s", "body": "b"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("how", ["flood", "drip"])
async def test_an_endless_reply_ends_the_conversation(phase: str, how: str, scripted: list[Scripted],
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mail, "CONVERSATION_SLACK", 0.3)
    server = Scripted(phase, how)
    scripted.append(server)
    result, peak = await _send(server, tmp_path)
    assert not result.ok
    handed_over = phase in ("mail", "rcpt", "data", "end")  # inside smtplib's sendmail: reported as unknown
    if handed_over:
        assert result.error.code == "outcome_unknown", result.error
        assert "may or may not" in result.error.message
    else:
        assert result.error.code == "upstream_unavailable", result.error
        assert "nothing was sent" in result.error.message
    assert peak < 16 << 20, peak
    assert server.hung_up.wait(5), "the client kept reading after the call was reported"
    assert server.flooded < 8 << 20, server.flooded


async def test_a_well_behaved_server_still_gets_the_message(scripted: list[Scripted], tmp_path: Path) -> None:
    server = Scripted("none", "flood")
    scripted.append(server)
    result, _ = await _send(server, tmp_path)
    assert result.ok, result.error
    assert b".\r\n" in server.received


@pytest.mark.parametrize("lines", [1, 20, 99])
async def test_long_but_bounded_multiline_replies_are_read(lines: int, tmp_path: Path) -> None:
    """An EHLO answer of up to 99 continued lines (real servers send about a dozen) is fine."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)

    def run() -> None:
        conn, _ = sock.accept()
        with conn:
            reader = conn.makefile("rb")
            conn.sendall(b"220 hi\r\n")
            while line := reader.readline():
                if line[:4].upper() == b"EHLO":
                    conn.sendall(b"".join(b"250-EXT%d\r\n" % i for i in range(lines - 1)) + b"250 SIZE 1000\r\n")
                elif line[:4].upper() == b"DATA":
                    conn.sendall(b"354 go\r\n")
                    while reader.readline() != b".\r\n":
                        pass
                    conn.sendall(b"250 queued\r\n")
                elif line[:4].upper() == b"QUIT":
                    conn.sendall(b"221 bye\r\n")
                    return
                else:
                    conn.sendall(b"250 ok\r\n")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        result = await scripted_smtp_reach(sock.getsockname()[1], tmp_path).invoke(
            "send_email", {"to": "ops@example.com", "subject": "s", "body": "b"})
    finally:
        sock.close()
    assert result.ok, result.error
