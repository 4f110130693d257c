"""read_result returns exactly the slice asked for, within its own budget, never reshaped."""

from __future__ import annotations

import json

import pytest
from conftest import tokens

LOG = "\n".join(f"line {i}: " + "event " * (i % 9) for i in range(5000))
ROWS = {"columns": ["id", "name"], "rows": [[i, f"name-{i}"] for i in range(3000)],
        "meta": {"source": {"db": "shop", "table": "customers"}, "took_ms": 12}}


async def handle_for(make, payload, *, run_id="run", agent=None, shape=None):
    reach, echo = make({"default_budget": 300, **(shape or {})})
    echo.payload = payload
    result = await reach.invoke("fetch", {}, run_id=run_id, agent=agent)
    handle = result.meta["shaped"]["handle"]
    assert handle and handle in result.to_json()
    return reach, handle


async def read(reach, run_id="run", agent=None, **args):
    return await reach.invoke("read_result", args, run_id=run_id, agent=agent)


async def test_text_offset_and_limit_return_exactly_those_lines(make):
    reach, h = await handle_for(make, LOG)
    res = await read(reach, handle=h, offset=1234, limit=25)
    assert res.ok
    assert res.content["text"] == "\n".join(LOG.split("\n")[1234:1259])
    assert res.content["offset"] == 1234 and res.content["lines"] == 25
    assert res.content["total_lines"] == 5000 and res.content["next_offset"] == 1259
    assert "shaped" not in res.meta  # its own budget, no second shaping


async def test_array_path_slices_and_paging(make):
    reach, h = await handle_for(make, ROWS)
    res = await read(reach, handle=h, path="rows[20:40]")
    assert res.content["value"] == ROWS["rows"][20:40]
    res = await read(reach, handle=h, path="rows", offset=100, limit=7)
    assert res.content["items"] == ROWS["rows"][100:107]
    assert res.content["total"] == 3000 and res.content["next"] == "rows[107:114]"
    res = await read(reach, handle=h, path="meta.source.table")
    assert res.content["value"] == "customers"
    res = await read(reach, handle=h, path="rows[-1][1]")
    assert res.content["value"] == "name-2999"


async def test_a_slice_larger_than_the_budget_returns_the_longest_exact_prefix(make):
    reach, h = await handle_for(make, ROWS, shape={"read_budget": 500})
    res = await read(reach, handle=h, path="rows", offset=10, limit=1000)
    items = res.content["items"]
    assert 0 < len(items) < 1000
    assert items == ROWS["rows"][10:10 + len(items)]
    assert "did not fit 500 tokens" in res.content["truncated"]
    assert res.content["next"].startswith(f"rows[{10 + len(items)}:")
    assert tokens(res.content) <= 500
    text = await read(reach, handle=h, path=None, offset=0, limit=1)
    assert text.ok  # a dict paged by keys
    assert list(text.content["value"]) == ["columns"]


async def test_text_page_over_budget_is_a_prefix_with_next_offset(make):
    reach, h = await handle_for(make, LOG, shape={"read_budget": 300})
    res = await read(reach, handle=h, offset=0, limit=1000)
    n = res.content["lines"]
    assert 0 < n < 1000
    assert res.content["text"] == "\n".join(LOG.split("\n")[:n])
    assert res.content["next_offset"] == n
    assert tokens(res.content) <= 300


async def test_one_line_longer_than_the_budget_is_cut_and_said_so(make):
    text = "short\n" + "x" * 50_000 + "\nend"
    reach, h = await handle_for(make, text, shape={"read_budget": 300})
    res = await read(reach, handle=h, offset=1, limit=1)
    assert "line 1 has 50,000 chars" in res.content["line_cut"]
    assert tokens(res.content) <= 300 and res.content["next_offset"] == 2


async def test_query_over_text_and_json(make):
    reach, h = await handle_for(make, LOG.replace("line 4321: ", "line 4321: DISK FULL on /var ", 1))
    res = await read(reach, handle=h, query="disk full")
    assert res.content["matches"][0]["offset"] == 4321
    assert res.content["matches"][0]["text"].startswith("line 4321: DISK FULL")
    reach, h = await handle_for(make, ROWS)
    res = await read(reach, handle=h, query="name-2718")
    assert res.content["matches"][0] == {"path": "rows[2718]", "value": [2718, "name-2718"]}
    res = await read(reach, handle=h, query="zebra")
    assert res.content["matches"] == [] and "nothing matches" in res.content["note"]


@pytest.mark.parametrize(("args", "field"), [
    ({"path": "rows[9999]"}, "path"),
    ({"path": "nope.x"}, "path"),
    ({"path": "rows[1:2"}, "path"),
    ({"path": "rows", "offset": 5000}, "offset"),
])
async def test_bad_paths_and_offsets_say_how_to_fix_them(make, args, field):
    reach, h = await handle_for(make, ROWS)
    res = await read(reach, handle=h, **args)
    assert not res.ok and res.error.code == "invalid_arguments"
    assert f"`{field}`" in res.error.message


async def test_path_errors_name_what_is_there(make):
    reach, h = await handle_for(make, ROWS)
    res = await read(reach, handle=h, path="meta.nope")
    assert "no key 'nope'" in res.error.message and "source, took_ms" in res.error.message


async def test_whole_value_too_big_for_the_read_budget_is_shaped_with_paths_kept(make):
    reach, h = await handle_for(make, {"a": {"b": [{"text": "y" * 3000, "n": i} for i in range(200)]}},
                                shape={"read_budget": 400})
    res = await read(reach, handle=h, path="a")
    assert res.ok and tokens(res.content) <= 400
    assert any(line.startswith("a.b: ") for line in res.content["cut"])
    json.dumps(res.content)
