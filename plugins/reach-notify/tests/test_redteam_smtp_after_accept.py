"""Red-team round 6: what the mail server says *after* it accepted the message.

Once the server answered the end of DATA with 250 the message is queued: the outcome is
known. smtplib's ``with SMTP(...)`` then sends QUIT and raises if the answer is not 221,
and that error was reported as ``outcome_unknown`` ("may or may not have been delivered,
do not send it again without asking"), so a delivered message looked lost and a user
asked to decide would send it twice. A refusal (sender, every recipient, the message) followed
by an odd QUIT answer was reported the same way instead of "refused, nothing was sent". Now
any trouble at QUIT (an odd code, garbage, a flood, a hang-up, silence) leaves the outcome
as it was: an accepted message is sent, a refused one refused.

A scripted SMTP server on 127.0.0.1 accepts the message, then misbehaves at QUIT; it
records what arrived.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import reach_notify.mail as mail
from conftest import scripted_smtp_reach

QUIT_ANSWERS = {
    "250": b"250 ok\r\n",
    "500": b"500 5.5.1 unrecognised command\r\n",
    "421": b"421 4.3.0 shutting down\r\n",
    "554": b"554 5.0.0 no\r\n",
    "221-then-500": b"221-bye\r\n500 but no\r\n",
    "garbage": b"hello there\r\n",
    "lowercase-code": b"22l bye\r\n",
    "flood": b"221-" + b"x" * 500 + b"\r\n",  # repeated until the client leaves
    "hang-up": b"",
    "silence": None,
    "221": b"221 2.0.0 bye\r\n",
}


class AcceptThenQuit:
    def __init__(self, quit_answer: bytes | None, refuse: str = "") -> None:
        self.quit_answer, self.refuse = quit_answer, refuse
        self.messages: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _run(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            reader = conn.makefile("rb")
            conn.sendall(b"220 scripted ESMTP\r\n")
            try:
                while line := reader.readline():
                    verb = line[:4].upper()
                    if verb.decode() == self.refuse:
                        conn.sendall(b"554 5.7.1 refused\r\n" if verb != b"DATA" else b"354 go on\r\n")
                        if verb == b"DATA":
                            while reader.readline() not in (b".\r\n", b""):
                                pass
                            conn.sendall(b"554 5.7.1 message refused\r\n")
                    elif verb == b"DATA":
                        conn.sendall(b"354 go on\r\n")
                        data = b""
                        while (chunk := reader.readline()) not in (b".\r\n", b""):
                            data += chunk
                        self.messages.append(data)
                        conn.sendall(b"250 2.0.0 queued as 42\r\n")
                    elif verb == b"QUIT":
                        self._answer_quit(conn)
                        return
                    else:
                        conn.sendall(b"250 ok\r\n")
            except OSError:
                return

    def _answer_quit(self, conn: socket.socket) -> None:
        if self.quit_answer is None:
            conn.recv(1)  # silence: wait until the client gives up and closes
        elif self.quit_answer.startswith(b"221-x"):
            for _ in range(2000):
                conn.sendall(self.quit_answer)
        else:
            conn.sendall(self.quit_answer)

    def stop(self) -> None:
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[list[AcceptThenQuit]]:
    made: list[AcceptThenQuit] = []
    yield made
    for server in made:
        server.stop()


@pytest.mark.parametrize("answer", list(QUIT_ANSWERS))
async def test_a_message_the_server_accepted_is_reported_sent(answer: str, servers: list[AcceptThenQuit],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mail, "CONVERSATION_SLACK", 0.3)
    server = AcceptThenQuit(QUIT_ANSWERS[answer])
    servers.append(server)
    result = await scripted_smtp_reach(server.port, tmp_path).invoke(
        "send_email", {"to": "ops@example.com", "subject": "Deploy", "body": "done"}, run_id="r1")
    assert result.ok, result.error
    assert result.content["sent"] is True and result.content["to"] == ["ops@example.com"]
    assert len(server.messages) == 1 and b"done" in server.messages[0]


@pytest.mark.parametrize("refuse", ["MAIL", "RCPT", "DATA"])
@pytest.mark.parametrize("answer", ["500", "421", "garbage", "221-then-500"])
async def test_a_refusal_stays_a_refusal_whatever_quit_says(refuse: str, answer: str, servers: list[AcceptThenQuit],
                                                            tmp_path: Path) -> None:
    server = AcceptThenQuit(QUIT_ANSWERS[answer], refuse=refuse)
    servers.append(server)
    result = await scripted_smtp_reach(server.port, tmp_path).invoke(
        "send_email", {"to": "ops@example.com", "subject": "Deploy", "body": "done"})
    assert result.error is not None and result.error.code == "execution_failed", result.error
    assert "nothing was sent" in result.error.message and "refused" in result.error.message
    assert server.messages == []
