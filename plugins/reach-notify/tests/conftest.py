"""Fixtures: real receivers on 127.0.0.1 and a Reach holding only reach-notify."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import reach_notify.plugin as notify_plugin
import trustme
from notify_servers import Inbox, SmtpServer, WebhookReceiver, start_smtp

from reach_core.testing import make_reach


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    """Plain SMTP with AUTH (allowed without TLS here, so the login itself is tested)."""
    inbox = Inbox()
    controller, port = start_smtp(
        inbox,
        authenticator=inbox.authenticate,
        auth_require_tls=False,
    )
    yield SmtpServer(inbox, port)
    controller.stop()


@pytest.fixture(scope="module")
def smtp_server() -> Iterator[SmtpServer]:
    """One plain SMTP server (no AUTH) for a whole module of attack variants."""
    inbox = Inbox()
    controller, port = start_smtp(inbox)
    yield SmtpServer(inbox, port)
    controller.stop()


@pytest.fixture
def inbox(smtp_server: SmtpServer) -> Inbox:
    """The module server's inbox, emptied for each test."""
    smtp_server.inbox.delivered.clear()
    return smtp_server.inbox


@pytest.fixture(scope="session")
def tls_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    ca = trustme.CA()
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return ca, path


@pytest.fixture
def smtp_starttls(tls_ca: tuple[trustme.CA, Path]) -> Iterator[SmtpServer]:
    """A server that refuses everything before STARTTLS and AUTH."""
    ca, ca_file = tls_ca
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    inbox = Inbox()
    controller, port = start_smtp(
        inbox,
        tls_context=context,
        require_starttls=True,
        authenticator=inbox.authenticate,
        auth_required=True,
    )
    yield SmtpServer(inbox, port, ca_file)
    controller.stop()


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as hook:
        yield hook


@pytest.fixture
def make_notify(tmp_path: Path) -> Callable[[dict[str, Any]], Any]:
    """A Reach holding only reach-notify, with the given `[plugins.reach-notify]` table.

    The receivers live on 127.0.0.1, written as an address in the URL: the default
    (``allow_private`` unset) lets such a webhook through, as a user's would.
    """

    def build(settings: dict[str, Any]) -> Any:
        return make_reach(
            ("reach-notify", notify_plugin),
            config={"plugins": {"reach-notify": settings}},
            data_dir=tmp_path / "data",
        )

    return build


def scripted_smtp_reach(port: int, data_dir: Path, timeout: float = 0.5) -> Any:
    """A Reach holding only reach-notify, sending to a scripted SMTP server on 127.0.0.1:``port``
    (the red-team servers that answer QUIT oddly, refuse, or hang up), for ``@example.com``."""
    return make_reach(("reach-notify", notify_plugin), config={"plugins": {"reach-notify": {
        "smtp": {"host": "127.0.0.1", "port": port, "from": "reach@example.com", "timeout": timeout},
        "allow_recipients": ["@example.com"]}}}, data_dir=data_dir)
