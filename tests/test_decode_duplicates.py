"""A key given twice is refused even when an escaped colon balances the count.

``decode_arguments`` tells duplicate keys apart by counting: ``:`` in the text minus
``:`` inside the decoded strings must equal the number of keys. A ``\\u003a`` in the
text is a ``:`` in the value but not in the text, so one escaped colon in the kept
value hid one duplicate: ``{"url": "https://ok.example", "url": "https\\u003a//evil"}``
ran with the second URL while the text shows the first. Escaped colons are counted now.
"""

from __future__ import annotations

import json

import pytest

from reach_core import ToolFailure, connector
from reach_core.calls import decode_arguments
from reach_core.testing import make_reach

HIDDEN_DUPLICATES = [
    r'{"a":"q","a":"\u003a"}',
    r'{"a":"q","a":"\u003A"}',
    r'{"url":"https://ok.example","url":"https\u003a//evil.example"}',
    r'{"url":"https\u003a//ok.example","url":"https\u003a//evil.example"}',
    r'{"path":"/srv/ok","path":"/etc/passwd\u003a"}',
    r'{"x":{"p":"/ok","p":"\u003a/bad"}}',
    r'{"x":[{"p":"/ok","p":"\u003a/bad"}]}',
    r'{"a\u003a":1,"a\u003a":2}',
    r'{"a":"q","a":"\u003a","b":"\u00e9"}',
    r'{"a":1,"b":2,"a":"\u003a","b":"\u003A"}',
    r'{"a":"x","a":"y","a":"\u003a\u003a"}',
    r'{"n":{"m":{"k":"v","k":"\u003aw"}},"o":"\u00fc"}',
    r'{"cmd":"ls","cmd":"rm -rf /\u003a","note":"\ud83d\ude00"}',
]


@pytest.mark.parametrize("raw", HIDDEN_DUPLICATES)
def test_a_hidden_duplicate_is_refused(raw: str) -> None:
    with pytest.raises(ToolFailure) as err:
        decode_arguments(raw)
    assert err.value.code == "invalid_arguments" and "more than once" in str(err.value)


@pytest.mark.parametrize("raw", [r'{"a":"\u003a"}', r'{"a":"\\u003a"}', r'{"a\u003a":1,"b":"\u003A:"}',
                                 r'{"url":"https\u003a//ok.example","n":{"t":"\u003a"}}',
                                 r'{"a":"\\\u003a","b":"\\\\u003a"}', r'{"u":"\u00e9:\u003a"}'])
def test_escaped_colons_without_duplicates_decode(raw: str) -> None:
    assert decode_arguments(raw) == json.loads(raw)


async def test_through_invoke_the_hidden_value_never_runs(tmp_path) -> None:
    fetched: list[str] = []

    @connector(risk="read")
    def fetch(url: str) -> str:
        """Fetch a URL."""
        fetched.append(url)
        return "ok"

    reach = make_reach(data_dir=tmp_path)
    reach.register(fetch)
    r = await reach.invoke({"id": "c1", "name": "fetch",
                            "arguments": r'{"url":"https://ok.example","url":"https\u003a//evil.example"}'})
    assert not r.ok and r.error.code == "invalid_arguments"
    assert (await reach.invoke({"id": "c2", "name": "fetch", "arguments": r'{"url":"https\u003a//ok.example"}'})).ok
    assert fetched == ["https://ok.example"]
