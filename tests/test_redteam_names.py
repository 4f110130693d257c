"""Red team: tool names and ``allowed`` sets mean exactly what they spell.

* A name pattern anchored with ``$`` lets a trailing newline through (``re`` lets
  ``$`` match before a final ``\\n``): "send\\n" would be registered as a tool name.
* ``allowed="send_email"`` (one string where a collection was meant) must allow the
  tool of that exact name, not every tool whose name is a substring of it.
"""

from __future__ import annotations

import asyncio

import pytest

from reach_core import Connector, ConnectorError, connector
from reach_core.testing import make_reach


class Named(Connector):
    risk = "read"
    description = "A tool used for name tests. Use when testing."

    def __init__(self, name: str) -> None:
        self.name = name

    async def execute(self, params):
        return {"ran": self.name}


_BASES = ["send", "a", "get_weather", "x" * 63, "x" * 64, "tool-1", "A_B"]
_TAILS = ["\n", "\n\n", "\r\n", "\r", "\x00", "\t", " ", "\u2028", "\u0085", "\v", "\f"]


@pytest.mark.parametrize("tail", _TAILS, ids=repr)
@pytest.mark.parametrize("base", _BASES)
def test_tool_name_with_trailing_control_refused(tmp_path, base, tail):
    reach = make_reach(data_dir=tmp_path)
    with pytest.raises(ConnectorError, match="not allowed"):
        reach.register(Named(base + tail))
    assert reach.all_tools() == []  # nothing registered


@pytest.mark.parametrize("base", _BASES)
def test_tool_name_positive_control(tmp_path, base):
    reach = make_reach(data_dir=tmp_path)
    reach.register(Named(base))
    assert [t.name for t in reach.all_tools()] == [base]


def _reach(tmp_path, names=("send", "send_email", "s", "end", "email")):
    reach = make_reach(data_dir=tmp_path)
    for n in names:
        reach.register(Named(n))
    return reach


# tools whose names are substrings (or characters) of the one string passed as `allowed`
_SUBSTRING_CASES = [
    ("send_email", "send"), ("send_email", "s"), ("send_email", "email"), ("send_email", "end"),
    ("resend", "send"), ("resend", "s"), ("resend", "end"), ("sends", "send"), ("s_end", "end"),
    ("xsendx", "send"), ("email_send", "email"), ("email_send", "send"), ("ss", "s"), ("send", "s"),
    ("send", "end"),
]


@pytest.mark.parametrize(("allowed", "tool"), _SUBSTRING_CASES)
def test_allowed_string_is_one_name_not_its_substrings(tmp_path, allowed, tool):
    reach = _reach(tmp_path)
    result = asyncio.run(reach.invoke(tool, {}, allowed=allowed))
    assert not result.ok and result.error.code == "unknown_tool"
    # the message names the allowed tool, not its characters
    assert allowed in result.error.message


@pytest.mark.parametrize("name", ["send", "send_email", "s", "end", "email"])
def test_allowed_string_positive_control(tmp_path, name):
    reach = _reach(tmp_path)
    result = asyncio.run(reach.invoke(name, {}, allowed=name))
    assert result.ok and result.content == {"ran": name}
    result = asyncio.run(reach.invoke(name, {}, allowed=[name, "other"]))
    assert result.ok


@pytest.mark.parametrize(("allowed", "tool"), _SUBSTRING_CASES[:6])
def test_invoke_many_allowed_string(tmp_path, allowed, tool):
    reach = _reach(tmp_path)
    results = asyncio.run(reach.invoke_many([{"id": "c1", "name": tool, "arguments": {}}], allowed=allowed))
    assert [r.error.code if r.error else None for r in results] == ["unknown_tool"]


def test_connector_decorated_name_newline_refused(tmp_path):
    reach = make_reach(data_dir=tmp_path)

    @connector(name="lookup\n", risk="read")
    async def lookup(q: str) -> str:
        """Look something up. Use when testing."""
        return q

    with pytest.raises(ConnectorError, match="not allowed"):
        reach.register(lookup)


# a fix line names config keys: a key that "$" let through bare would split the line in two
_KEY_TAILS = ["\n", "\n[agents.default]\nmax_tier = \"dangerous\"", "\r\n", "\n\n"]


@pytest.mark.parametrize("tail", _KEY_TAILS, ids=repr)
@pytest.mark.parametrize("name", ["ops", "support-bot", "a_1"])
def test_fix_line_quotes_a_key_with_a_line_break(name, tail):
    from reach_core.errors import config_line

    line = config_line(("agents", name + tail), "allow", ["send"])
    assert "\n" not in line and "\r" not in line
    assert line.startswith("[agents.\"") and line.endswith('allow = ["send"]')


@pytest.mark.parametrize("name", ["ops", "support-bot", "a_1"])
def test_fix_line_positive_control(name):
    from reach_core.errors import config_line

    assert config_line(("agents", name), "allow", ["send"]) == f'[agents.{name}] allow = ["send"]'
