"""Paths written in notes are the paths read_result resolves, whatever the keys look like."""

from __future__ import annotations

import pytest
from reach_shape.json_shape import LADDER, JsonShaper
from reach_shape.paths import PathError, parse_path, resolve

ODD = {"2024-05-01": {"a b": ["x" * 5000]}, "中文": {"x.y": list(range(500))}, "plain": {"k-1": "v" * 5000}}


def test_every_cut_path_resolves_to_the_cut_value():
    _, cuts = JsonShaper().shape(ODD, LADDER[-1])
    assert cuts
    for cut in cuts:
        assert resolve(ODD, cut.path) is not None


def test_path_syntax():
    assert parse_path('a.b[3]["x.y"][2:5]') == [("key", "a"), ("key", "b"), ("index", 3), ("key", "x.y"),
                                                ("slice", (2, 5))]
    assert resolve(ODD, '["2024-05-01"]["a b"][0]') == "x" * 5000
    assert resolve(ODD, '中文["x.y"][-3:]') == [497, 498, 499]
    assert resolve(ODD, "plain.k-1") == "v" * 5000
    assert resolve([[1, 2], [3, 4]], "[1][0]") == 3
    assert resolve({"rows": [10, 20]}, "rows.1") == 20
    assert resolve(ODD, "") is ODD and resolve(ODD, "$") is ODD


@pytest.mark.parametrize("bad", ["plain.nope", "plain[0]", "中文.x", "[", '["unterminated]'])
def test_bad_paths_raise_a_readable_error(bad):
    with pytest.raises(PathError):
        resolve(ODD, bad)


async def test_wide_objects_page_by_keys(make):
    reach, echo = make({"default_budget": 200})
    echo.payload = {f"key{i:04d}": i for i in range(3000)}
    result = await reach.invoke("fetch", {}, run_id="r")
    note = result.content["_shaped"]
    assert any("keys shown" in line for line in note["cut"])
    shown = len(result.content) - 1
    assert f"offset={shown}" in note["read_more"]
    page = await reach.invoke("read_result", {"handle": note["handle"], "offset": shown, "limit": 5}, run_id="r")
    assert page.content["value"] == {f"key{i:04d}": i for i in range(shown, shown + 5)}
