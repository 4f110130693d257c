"""Red team: a result's cached JSON text never carries a secret its content no longer has.

``ToolResult.to_json()`` is computed once and kept, and adapters send it to the model
(``to_message()``). A post-invoke hook that asks for it (to measure a result, as
reach-shape does, or to log its size) made the core cache the *unmasked* text before
the core masked configured secrets in the content: the content came out masked, the
text the model was sent did not. The family varies where the secret sits, its
spelling, how the hook is written (plain, returning the result, async) and the
channel (``to_json``, ``to_message``, a failure's message).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from reach_core import BusinessError, connector
from reach_core.hookspecs import hookimpl
from reach_core.redact import MASK
from reach_core.testing import make_reach

SECRET = "tok-7Hq2ZxW9pLm4Rv8Kd3Ns"

SPELLINGS = {
    "as-is": lambda s: s,
    "lower": lambda s: s.lower(),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "url-all": lambda s: "".join(f"%{ord(c):02X}" for c in s),
    "json-unicode": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "hex": lambda s: s.encode().hex(),
    "cut-end": lambda s: "the key begins " + s[:10],
}
WHERE = ["string", "value", "key", "list", "nested", "error"]


class Measure:
    """A plugin that measures every result, as a metrics or budget plugin would."""

    REACH_PLUGIN_NAME = "measure"

    def __init__(self, style: str) -> None:
        self.style = style
        self.sizes: list[int] = []

    @hookimpl
    def reach_post_invoke(self, call, tool, result, ctx):
        self.sizes.append(len(result.to_json()))
        if self.style == "async":
            async def same():
                return result
            return same()
        return result if self.style == "returns" else None


def _build(tmp_path, style: str):
    reach = make_reach(("measure", Measure(style)), data_dir=tmp_path)
    reach.redactor.add(values=[SECRET])

    @connector(name="leak", risk="read")
    async def leak(where: str, spelling: str) -> Any:
        """Return a record that quotes a token. Use in tests."""
        text = SPELLINGS[spelling](SECRET)
        if where == "string":
            return text
        if where == "value":
            return {"token": text, "ok": True}
        if where == "key":
            return {text: 1}
        if where == "list":
            return ["a", text, "b"]
        if where == "nested":
            return {"a": [{"b": {"c": f"see: {text}"}}]}
        raise BusinessError(f"upstream refused {text}")

    reach.register(leak)
    return reach


@pytest.fixture(scope="module", params=["plain", "returns", "async"])
def reach(request, tmp_path_factory):
    return _build(tmp_path_factory.mktemp(request.param), request.param)


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("where", WHERE)
def test_the_text_sent_to_the_model_is_masked(reach, where, spelling):
    result = asyncio.run(reach.invoke("leak", {"where": where, "spelling": spelling}))
    assert result.ok is (where != "error")
    leaked = SPELLINGS[spelling](SECRET)
    for text in (result.to_json(), json.dumps(result.to_message(), ensure_ascii=False)):
        assert MASK in text
        for needle in {leaked, json.dumps(leaked)[1:-1], SECRET, SECRET[:10]}:
            assert needle not in text, (where, spelling, text)
    # the cached text is the content's own JSON (or the content itself, for a string)
    from reach_core.result import dumps

    payload = result.model_payload()
    assert result.to_json() == (payload if isinstance(payload, str) else dumps(payload))


def test_positive_control_an_ordinary_result_keeps_its_text(tmp_path):
    reach = _build(tmp_path, "plain")

    @connector(name="plain_tool", risk="read")
    async def plain_tool() -> dict:
        """Return an ordinary record. Use in tests."""
        return {"city": "Paris", "temp": 21}

    reach.register(plain_tool)
    result = asyncio.run(reach.invoke("plain_tool", {}))
    assert result.to_json() == '{"city":"Paris","temp":21}'
