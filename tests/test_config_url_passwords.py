"""A config error quotes the value it refuses, but never a password written inline in a URL.

`[limits] storage = "redus://:PASS@host"` (a typo in the scheme) and `[reach] store =
"mysql://user:PASS@host/db"` (an unsupported store) are refused; the error is printed on a
terminal, written to CI logs and pasted into issues, so the password is masked there while
the scheme and host, which tell the person what to fix, stay.
"""

from __future__ import annotations

import asyncio

import pytest

from reach_core import ConfigError, Reach
from reach_core.redact import mask_userinfo

PASSWORD = "Hunter2-pw"

# (scheme, userinfo): every spelling of a password a URL can carry
_USERINFO = [
    f"user:{PASSWORD}", f":{PASSWORD}", f"u.ser-name_1:{PASSWORD}", f"user:{PASSWORD}:more",
    f"user:{PASSWORD}%40x", f"user:%21{PASSWORD}", f"admin:{PASSWORD}=", f"user:{PASSWORD}~!$&()*+,;",
]
_TOKEN_USER = f"ghp_{PASSWORD}0123456789abcd"  # a token as the user name, no password


@pytest.mark.parametrize("scheme", ["redus", "REDIS+X", "valkey-x", "mongo", "rediss2", "memcache"])
@pytest.mark.parametrize("userinfo", _USERINFO)
def test_a_refused_limits_storage_never_shows_its_password(scheme: str, userinfo: str) -> None:
    value = f"{scheme}://{userinfo}@cache.internal:6379/0"
    with pytest.raises(ConfigError) as caught:
        Reach({"limits": {"storage": value}}, plugins=[], strict=True)
    text = str(caught.value)
    assert PASSWORD not in text, text
    assert "storage" in text and "cache.internal" in text and scheme in text  # what to fix stays


@pytest.mark.parametrize("scheme", ["mysql", "mysql+pymysql", "mssql", "oracle", "http", "ftp"])
@pytest.mark.parametrize("userinfo", [*_USERINFO, _TOKEN_USER])
def test_an_unsupported_store_never_shows_its_password(scheme: str, userinfo: str) -> None:
    reach = Reach({"reach": {"store": f"{scheme}://{userinfo}@db.internal/app"}}, plugins=[], strict=True)

    async def start() -> None:
        try:
            await reach.start()
        finally:
            await reach.aclose()

    with pytest.raises(ConfigError) as caught:
        asyncio.run(start())
    text = str(caught.value)
    assert PASSWORD not in text, text
    assert "[reach] store" in text and "db.internal" in text and scheme in text


def test_a_wrong_type_still_shows_the_value() -> None:
    """The mask is for URL passwords only: other refused values are quoted as before."""
    with pytest.raises(ConfigError) as caught:
        Reach({"limits": {"storage": 5}}, plugins=[], strict=True)
    assert "got 5" in str(caught.value)


@pytest.mark.parametrize(("text", "shown"), [
    ("'postgresql+psycopg://reach:pw@db/x'", "'postgresql+psycopg://reach:[REDACTED]@db/x'"),
    ("redis://:pw@h:6379/0 and redis://:pw2@h2", "redis://:[REDACTED]@h:6379/0 and redis://:[REDACTED]@h2"),
    ("https://ghp_abcdefghijklmnop1234@github.com/x", "https://[REDACTED]@github.com/x"),
    ("https://bob@example.com/x", "https://bob@example.com/x"),  # a short user name is no secret
    ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
    ("memory://", "memory://"),
    ("mailto:bob@example.com", "mailto:bob@example.com"),
])
def test_mask_userinfo(text: str, shown: str) -> None:
    assert mask_userinfo(text) == shown
