"""``trusted_proxies`` (``[plugins.reach-serve]``, ``[plugins.reach-mcp.server]``): which peers'
``X-Forwarded-For`` is believed. The servers themselves are tested in each plugin's
``test_redteam_serve*_proxies.py``; here, the rules of ``reach_core.tokens``:

* a mistake in the list is refused at start, never guessed at: ``*`` would believe every client,
  a host name is not resolved, a pasted invisible character or host bits make another value;
* :func:`forwarded_client` reads the header from the right and stops at the first address no
  trusted proxy vouches for, so nothing a client wrote itself is believed.
"""

from __future__ import annotations

import ipaddress

import pytest

from reach_core.tokens import check_proxies, forwarded_client

MISTAKES = ["*", " * ", "localhost", "LOCALHOST", "10.0.0.1/8", "127.0.0.1 ", " 127.0.0.1", "\u200b127.0.0.1",
            "127.0.0.1\xa0", "\uff11\uff12\uff17.0.0.1", "proxy.internal", "", "127.1", "::1/129", "127.0.0.1/33",
            "10.0.0.0/8,10.1.0.0/16", "127.0.0.1:8080", "[::1]", "0x7f000001", "127.000.000.001",
            "0.0.0.0/0", "::/0", "::ffff:0.0.0.0/0"]


@pytest.mark.parametrize("entry", MISTAKES, ids=repr)
def test_an_entry_that_is_no_address_or_network_is_refused(entry: str) -> None:
    with pytest.raises(ValueError) as caught:
        check_proxies(["10.0.0.0/8", entry])
    message = str(caught.value)
    assert "127.0.0.1" in message or "did you mean" in message, message  # says what to write instead


@pytest.mark.parametrize(("entry", "meant"), [("10.0.0.1/8", "'10.0.0.0/8'"), ("127.0.0.1 ", "'127.0.0.1'"),
                                              ("\u200b127.0.0.1", "'127.0.0.1'"), ("\uff11\uff12\uff17.0.0.1",
                                                                                   "'127.0.0.1'")])
def test_the_refusal_names_the_value_meant(entry: str, meant: str) -> None:
    with pytest.raises(ValueError, match=f"did you mean {meant}"):
        check_proxies([entry])


@pytest.mark.parametrize("entries", [["127.0.0.1"], ["::1"], ["10.0.0.0/8", "fd00::/8"], ["192.168.1.0/24"], []])
def test_addresses_and_networks_are_accepted(entries: list[str]) -> None:
    assert check_proxies(entries) == entries


NETS = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "fd00::/8")]


@pytest.mark.parametrize(("peer", "header", "client"), [
    ("203.0.113.5", ["198.51.100.1"], "203.0.113.5"),                  # not a proxy: the header is not read
    ("10.0.0.2", ["198.51.100.1"], "198.51.100.1"),
    ("10.0.0.2", ["1.1.1.1, 198.51.100.1"], "198.51.100.1"),           # what the client wrote, left: not read
    ("10.0.0.2", ["1.1.1.1, 198.51.100.1, 10.0.0.3"], "198.51.100.1"),  # two proxies
    ("10.0.0.2", ["1.1.1.1", "198.51.100.1"], "198.51.100.1"),          # two headers are one list
    ("10.0.0.2", ["unknown"], "10.0.0.2"),                             # garbage: the last vouched-for address
    ("10.0.0.2", ["198.51.100.1, unknown"], "10.0.0.2"),
    ("10.0.0.2", ["10.0.0.7, 10.0.0.3"], "10.0.0.7"),                   # all proxies: the left-most
    ("10.0.0.2", [""], "10.0.0.2"),
    ("10.0.0.2", [], "10.0.0.2"),
    ("10.0.0.2", ["198.51.100.1:4711"], "198.51.100.1"),
    ("10.0.0.2", ["[2001:db8::1]:443"], "2001:db8::1"),
    ("10.0.0.2", ["::ffff:198.51.100.1"], "198.51.100.1"),
    ("::ffff:10.0.0.2", ["198.51.100.1"], "198.51.100.1"),              # a dual-stack socket's IPv4 peer
    ("fd00::2", ["2001:db8::1"], "2001:db8::1"),
    ("fd00::2", ["[2001:db8::1"], "fd00::2"),
    ("10.0.0.2", ["1.2.3.4" + "0" * 80], "10.0.0.2"),
])
def test_forwarded_client_reads_from_the_right(peer: str, header: list[str], client: str) -> None:
    assert forwarded_client(peer, header, NETS) == client
