"""Red team: a configured secret nested deep in a result still never reaches the model.

``KnownSecrets.mask_data`` stopped at 64 levels and returned the rest as it was,
while the core lets a connector's result nest about 450 levels: a token 64 or more
levels down (a reflected request inside a trace inside a trace ...) reached the
model whole. Every level is masked now; the family varies the depth, where the
secret sits (value, key, list item, number), its spelling, and the channel
(``invoke`` content and meta, a streamed item).
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from reach_core import connector
from reach_core.redact import MASK
from reach_core.testing import make_reach

SECRET = "sk-live-9c8b7a6f5e4d3c2b1a0f"
NUMBER = 987654321012  # a secret that is a number (a PIN, an account id)

SPELLINGS = {
    "as-is": lambda s: s,
    "upper": lambda s: s.upper(),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "url-all": lambda s: "".join(f"%{ord(c):02X}" for c in s),
    "json-unicode": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "hex": lambda s: s.encode().hex(),
    "in-sentence": lambda s: f"Authorization: Bearer {s} (reflected)",
}
DEPTHS = [64, 65, 66, 100, 200, 400]
WHERE = ["value", "key", "list", "mixed"]


def _nest(leaf: Any, depth: int, where: str) -> Any:
    """``leaf`` ``depth`` containers down (``mixed`` alternates objects and lists)."""
    if where == "key":
        data: Any = {leaf: "x"}
    elif where == "list":
        data = ["ok", leaf]
    else:
        data = {"v": leaf}
    for i in range(depth - 1):
        data = [data] if where == "mixed" and i % 2 else {"trace": data, "n": i}
    return data


@pytest.fixture(scope="module")
def reach(tmp_path_factory):
    reach = make_reach(data_dir=tmp_path_factory.mktemp("deep"))
    reach.redactor.add(values=[SECRET, str(NUMBER)])

    @connector(name="deep", risk="read")
    async def deep(depth: int, where: str, spelling: str) -> Any:
        """Return a deeply nested record. Use in tests."""
        leaf: Any = NUMBER if spelling == "number" else SPELLINGS[spelling](SECRET)
        return _nest(leaf, depth, where)

    @connector(name="deep_stream", risk="read")
    async def deep_stream(depth: int, where: str, spelling: str):
        """Stream deeply nested records. Use in tests."""
        yield {"first": "ok"}
        yield _nest(SPELLINGS[spelling](SECRET), depth, where)

    reach.register(deep)
    reach.register(deep_stream)
    return reach


def _assert_masked(text: str, spelling: str) -> None:
    leaked = SPELLINGS[spelling](SECRET) if spelling != "number" else str(NUMBER)
    for needle in {leaked, json.dumps(leaked)[1:-1], SECRET, str(NUMBER)}:
        assert needle.lower() not in text.lower(), (spelling, needle)
    assert MASK in text


@pytest.mark.parametrize(("where", "spelling"), [(w, s) for w in WHERE for s in [*SPELLINGS, "number"]
                                                  if (w, s) != ("key", "number")])  # a JSON key is a string
@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_secret_is_masked(reach, depth, where, spelling):
    result = asyncio.run(reach.invoke("deep", {"depth": depth, "where": where, "spelling": spelling}))
    assert result.ok, result.error
    _assert_masked(result.to_json(), spelling)


@pytest.mark.parametrize("spelling", ["as-is", "base64", "in-sentence"])
@pytest.mark.parametrize("depth", [64, 150])
def test_deep_secret_in_a_streamed_item_is_masked(reach, depth, spelling):
    async def run() -> list[Any]:
        return [e async for e in reach.invoke_stream("deep_stream", {"depth": depth, "where": "mixed",
                                                                       "spelling": spelling})]

    events = asyncio.run(run())
    items = [e["item"] for e in events[:-1] if e.get("type") == "item"]
    assert items[0] == {"first": "ok"} and len(items) == 2
    _assert_masked(json.dumps(items[1]), spelling)
    _assert_masked(events[-1].to_json(), spelling)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("depth", [63, 64, 65, 300])
def test_deep_ordinary_content_is_unchanged(reach, depth, where):
    """Positive control: masking every level keeps the structure, order and values as they were."""
    from reach_core.known_secrets import KnownSecrets

    known = KnownSecrets()
    known.add([SECRET])
    data = _nest("ordinary words", depth, where)
    data = {"z": 1, "a": [True, None, 1.5, "é"], "deep": data}
    assert known.mask_data(data) == data
    assert json.dumps(known.mask_data(data)) == json.dumps(data)  # key order too
