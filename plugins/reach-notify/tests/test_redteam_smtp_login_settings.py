"""Red team: the SMTP login settings are checked when reach starts.

* With ``username`` set and neither ``starttls`` nor ``ssl``, smtplib sent AUTH (the password,
  base64-encoded: clear text) to the server over plain TCP; anyone on the path read it. Now
  that is a ``ConfigError`` unless the host is loopback as written (``localhost``, 127.0.0.0/8,
  ``::1``) or ``allow_plaintext_auth = true`` says the network is trusted.
* A non-ASCII username or password was accepted and failed at the first send with an internal
  ``UnicodeEncodeError`` (smtplib encodes AUTH as ASCII). Now it is a ``ConfigError`` at once.

Neither error quotes the password.
"""

from __future__ import annotations

import pytest

from reach_core import ConfigError

SECRET = "Sup3r-s3cret-pw"

NETWORK_HOSTS = [
    "smtp.example.com", "SMTP.EXAMPLE.COM", "mail.internal", "10.0.0.5", "192.168.1.10", "172.16.0.1",
    "100.64.0.1", "8.8.8.8", "0.0.0.0", "localhost.", "localhost.example.com", "127.0.0.1.nip.io",
    "2001:db8::1", "fe80::1", "::ffff:10.0.0.5", "LOCALHOST.localdomain", "xn--smtp-example.com",
]
LOOPBACK_HOSTS = ["localhost", "LocalHost", "127.0.0.1", "127.0.0.2", "127.255.255.254", "::1"]


def _smtp(**fields):
    return {"smtp": {"from": "reach@example.com", "port": 25, **fields}}


@pytest.mark.parametrize("port", [25, 587, 2525])
@pytest.mark.parametrize("host", NETWORK_HOSTS)
def test_a_login_without_tls_to_the_network_is_a_config_error(make_notify, host, port):
    with pytest.raises(ConfigError) as caught:
        make_notify(_smtp(host=host, port=port, username="reach", password=SECRET))
    message = str(caught.value)
    assert "starttls" in message and "allow_plaintext_auth" in message
    assert SECRET not in message


@pytest.mark.parametrize("tls", [{"starttls": True}, {"ssl": True, "port": 465}, {"allow_plaintext_auth": True}])
@pytest.mark.parametrize("host", NETWORK_HOSTS[:4])
def test_positive_control_tls_or_the_explicit_setting_is_accepted(make_notify, host, tls):
    reach = make_notify(_smtp(host=host, username="reach", password=SECRET, **tls))
    assert [t["function"]["name"] for t in reach.tools()] == ["send_email"]


@pytest.mark.parametrize("host", LOOPBACK_HOSTS)
def test_positive_control_a_login_to_loopback_needs_no_tls(make_notify, host):
    assert make_notify(_smtp(host=host, username="reach", password=SECRET)).tools()


def test_positive_control_no_login_needs_no_tls(make_notify):
    assert make_notify(_smtp(host="smtp.example.com")).tools()


NON_ASCII = ["pässword", "пароль", "密码123", "pw\u00a0x", "pw\u200bx", "pw\u202ex", "😀pw", "caf\u0065\u0301"]


@pytest.mark.parametrize("field", ["username", "password"])
@pytest.mark.parametrize("value", NON_ASCII)
def test_a_non_ascii_login_is_a_config_error_not_an_internal_error(make_notify, field, value):
    login = {"username": "reach", "password": "ascii-pw", field: value}
    with pytest.raises(ConfigError) as caught:
        make_notify(_smtp(host="127.0.0.1", starttls=True, **login))
    message = str(caught.value)
    assert f"`{field}`" in message and "ASCII" in message and value not in message
