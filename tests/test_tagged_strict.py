"""The tagged parser reads a call's JSON as strictly as ``decode_arguments`` reads arguments.

It decoded the body with plain ``json.loads``, which keeps the *last* of two equal keys:
``{"name": "get_weather", "arguments": {}, "name": "delete_all"}`` ran ``delete_all``, and
``{"arguments": {"path": "/srv/ok", "path": "/etc/passwd"}}`` ran with ``/etc/passwd``,
while the reply (what a person or a log reader sees) shows the first. Arguments sent as
text are refused for exactly that (``decode_arguments``); the tagged body now is too, at
any depth and however the key is spelt (``\\u0061`` is ``a``). NaN/Infinity and overflowing
numbers are refused at parse time, and a body nested past Python's recursion limit is an
error for the model instead of a ``RecursionError`` out of ``parse_tagged``.
"""

from __future__ import annotations

import pytest

from reach_core import TaggedParser, connector
from reach_core.testing import make_reach

DUPLICATES = [
    ('{"name": "f", "arguments": {}, "name": "g"}', "name"),
    ('{"name": "f", "name": "f", "arguments": {}}', "name"),
    ('{"name": "f", "arguments": {"path": "/srv/ok", "path": "/etc/passwd"}}', "path"),
    ('{"name": "f", "arguments": {"path": "/srv/ok", "\\u0070ath": "/etc/passwd"}}', "path"),
    ('{"name": "f", "arguments": {"p\\u0061th": "/srv/ok", "path": "/etc/passwd"}}', "path"),
    ('{"name": "f", "arguments": {"\\u00e9": 1, "é": 2}}', "é"),
    ('{"name": "f", "arguments": {"a": {"b": 1, "b": 2}}}', "b"),
    ('{"name": "f", "arguments": {"a": [{"b": 1}, {"c": 1, "c": 2}]}}', "c"),
    ('{"name": "f", "arguments": {"x": 1}, "arguments": {"x": 2}}', "arguments"),
    ('{"name": "\\u0066", "arguments": {}, "n\\u0061me": "g"}', "name"),
    ('{"name":"f","arguments":{"":1,"":2}}', ""),
    ('{"name": "f", "arguments": {"a": 1, "b": 2, "a": 3}}', "a"),
    ('{"name": "f", "arguments": {"😀": 1, "\\ud83d\\ude00": 2}}', "😀"),
]
WRAPS = ["<tool_call>{}</tool_call>", "<tool_call>\n{}\n</tool_call>", "<tool_call>```json\n{}\n```</tool_call>",
         "Sure. <tool_call> {} </tool_call> done"]


@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize(("body", "key"), DUPLICATES)
def test_a_key_given_twice_is_an_error_not_the_last_value(body: str, key: str, wrap: str) -> None:
    calls, errors = TaggedParser().parse(wrap.replace("{}", body))
    assert calls == [], calls
    assert len(errors) == 1 and f"`{key}` more than once" in errors[0], errors


@pytest.mark.parametrize("body", [
    '{"name": "f", "arguments": {"path": "/srv/ok", "Path": "/etc/passwd"}}',  # case: two fields
    '{"name": "f", "arguments": {"a": {"b": 1}, "b": 2}}',  # same name at different depths
    '{"name": "f", "arguments": [{"a": 1}, {"a": 2}]}',
    '{"name": "f", "arguments": {"e\\u0301": 1, "é": 2}}',  # NFD and NFC are different keys in JSON
])
def test_distinct_keys_still_parse(body: str) -> None:
    calls, errors = TaggedParser().parse(f"<tool_call>{body}</tool_call>")
    assert len(calls) == 1 and errors == []


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "[NaN]", '{"x": Infinity}'])
def test_not_json_numbers_are_errors(value: str) -> None:
    calls, errors = TaggedParser().parse(f'<tool_call>{{"name": "f", "arguments": {{"n": {value}}}}}</tool_call>')
    assert calls == [] and "not valid JSON" in errors[0]


@pytest.mark.parametrize("depth", [5_000, 50_000, 300_000])
@pytest.mark.parametrize("bracket", ["[]", '{"a":}'])
def test_deep_nesting_is_an_error_not_an_exception(depth: int, bracket: str) -> None:
    opening, closing = (bracket[0], bracket[1]) if bracket == "[]" else ('{"a":', "}")
    body = '{"name": "f", "arguments": {"x": ' + opening * depth + "1" + closing * depth + "}}"
    text = f"<tool_call>{body}</tool_call> and <tool_call>{{\"name\": \"g\", \"arguments\": {{}}}}</tool_call>"
    calls, errors = TaggedParser().parse(text)
    assert [c.name for c in calls] == ["g"]  # the other call in the reply is unaffected
    assert len(errors) == 1 and "#1" in errors[0]


async def test_through_parse_tagged_nothing_runs_with_the_hidden_value(tmp_path) -> None:
    seen: list[str] = []

    @connector(risk="read")
    def read_file(path: str) -> str:
        """Read a file."""
        seen.append(path)
        return "ok"

    reach = make_reach(data_dir=tmp_path)
    reach.register(read_file)
    calls, errors = reach.parse_tagged(
        '<tool_call>{"name": "read_file", "arguments": {"path": "/srv/ok", "\\u0070ath": "/etc/passwd"}}'
        '</tool_call><tool_call>{"name": "read_file", "arguments": {"path": "/srv/ok"}}</tool_call>'
    )
    for call in calls:
        assert (await reach.invoke(call)).ok
    assert seen == ["/srv/ok"] and len(errors) == 1
