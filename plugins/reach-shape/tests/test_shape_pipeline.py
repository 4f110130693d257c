"""Shaping inside the pipeline: what it leaves alone, per-tool settings, hook order, the big path."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reach_shape.plugin as shape_plugin
from conftest import Echo, tokens
from reach_shape.plugin import shaper_for

from reach_core import BusinessError, ConfigError, Connector, hookimpl
from reach_core.testing import ConnectorConformance, HookRecorder, make_reach

WEATHER = {"city": "北京", "country": "中国", "local_time": "2026-11-30 14:00", "temperature": "21 °C",
           "humidity": "45 %", "condition": "晴", "wind": "12 km/h", "umbrella": False}


async def test_small_results_pass_untouched(make):
    reach, echo = make()
    echo.payload = WEATHER
    result = await reach.invoke("fetch", {}, run_id="r")
    assert result.content == WEATHER and "shaped" not in result.meta
    assert len(shaper_for(reach).store) == 0


async def test_failed_results_are_never_touched(make):
    class Broken(Connector):
        name = "broken"
        description = "Fails with a long message. Use in tests."
        risk = "read"
        input_schema = {"type": "object", "properties": {}}

        async def execute(self, params: dict[str, Any]) -> Any:
            raise BusinessError("no such order; " + "detail " * 4000)

    reach, _ = make({"default_budget": 200})
    reach.register(Broken())
    result = await reach.invoke("broken", {}, run_id="r")
    assert not result.ok and "shaped" not in result.meta
    assert result.error.message.count("detail") == 4000
    unknown = await reach.invoke("no_such_tool", {}, run_id="r")
    assert unknown.error.code == "unknown_tool" and "shaped" not in unknown.meta


async def test_per_tool_budget_and_mode_off(make):
    reach, echo = make({"default_budget": 2000, "tools": {"fetch": {"budget": 200}, "raw_dump": {"mode": "off"}}})
    other = Echo("raw_dump")
    reach.register(other)
    payload = {"rows": [[i, "x" * 20] for i in range(300)]}
    echo.payload = other.payload = payload
    small = await reach.invoke("fetch", {})
    assert tokens(small.content) <= 200 and small.meta["shaped"]["budget"] == 200
    untouched = await reach.invoke("raw_dump", {})
    assert untouched.content == payload


async def test_fields_projection_keeps_what_is_configured(make):
    reach, echo = make({"tools": {"fetch": {"fields": ["city", "temperature", "humidity", "condition"]}}})
    echo.payload = WEATHER
    result = await reach.invoke("fetch", {}, run_id="r")
    content = result.content
    assert {k: content[k] for k in ("city", "temperature", "humidity", "condition")} == {
        "city": "北京", "temperature": "21 °C", "humidity": "45 %", "condition": "晴"}
    assert "wind" not in content and "umbrella" not in content
    note = content["_shaped"]
    assert "only the fields city, temperature, humidity, condition" in note["fields"]
    full = await reach.invoke("read_result", {"handle": note["handle"], "path": "wind"}, run_id="r")
    assert full.content["value"] == "12 km/h"
    assert "北京" in result.to_json()  # non-ASCII kept as is, not escaped


async def test_fields_apply_to_every_item_of_an_array(make):
    reach, echo = make({"tools": {"fetch": {"fields": ["items.name", "total"]}}})
    echo.payload = {"total": 2, "items": [{"name": "a", "secret": 1}, {"name": "b", "secret": 2}]}
    result = await reach.invoke("fetch", {}, run_id="r")
    assert result.content["items"] == [{"name": "a"}, {"name": "b"}] and result.content["total"] == 2


async def test_misspelt_fields_keep_the_result_whole(make):
    reach, echo = make({"tools": {"fetch": {"fields": ["temprature"]}}})
    echo.payload = WEATHER
    result = await reach.invoke("fetch", {})
    assert result.content == WEATHER


async def test_text_mode_shapes_json_as_lines(make):
    reach, echo = make({"tools": {"fetch": {"mode": "text", "budget": 300}}})
    echo.payload = {"entries": [f"entry {i}" for i in range(2000)]}
    result = await reach.invoke("fetch", {}, run_id="r")
    assert isinstance(result.content, str) and result.content.startswith("[reach-shape: text of")
    handle = result.meta["shaped"]["handle"]
    page = await reach.invoke("read_result", {"handle": handle, "offset": 2, "limit": 2}, run_id="r")
    assert page.content["text"] == '  "entry 0",\n  "entry 1",'


async def test_shaping_runs_before_audit_so_audit_sees_what_the_model_saw(make):
    seen: list[Any] = []

    class Audit:
        REACH_PLUGIN_NAME = "fake-audit"
        REACH_HOOK_PRIORITY = {"reach_post_invoke": 90}

        @hookimpl
        def reach_post_invoke(self, call, tool, result, ctx):
            seen.append(result)

    reach, echo = make({"default_budget": 200}, Audit())
    echo.payload = {"rows": list(range(5000))}
    assert reach.hook_order("reach_post_invoke") == ["reach-shape", "fake-audit"]
    result = await reach.invoke("fetch", {}, run_id="r")
    assert seen[-1] is result and "shaped" in seen[-1].meta


async def test_huge_results_are_shaped_off_the_event_loop(make):
    reach, echo = make({"default_budget": 500})
    lines = [f"{i:07d} ok" for i in range(80_000)]
    lines[61_000] = "0061000 FATAL: replica lag exceeded 30s"
    echo.payload = "\n".join(lines)
    assert len(echo.payload) > shape_plugin.THREAD_THRESHOLD
    result = await reach.invoke("fetch", {}, run_id="r", query="replica lag")
    assert "FATAL: replica lag exceeded 30s" in result.content
    handle = result.meta["shaped"]["handle"]
    assert handle in result.content
    page = await reach.invoke("read_result", {"handle": handle, "offset": 61_000, "limit": 1}, run_id="r")
    assert page.content["text"] == lines[61_000]


async def test_invoke_many_gives_each_result_its_own_handle(make):
    reach, echo = make({"default_budget": 200})
    echo.payload = {"rows": list(range(3000))}
    results = await reach.invoke_many([{"id": f"c{i}", "name": "fetch", "arguments": "{}"} for i in range(3)],
                                      run_id="r")
    handles = {r.meta["shaped"]["handle"] for r in results}
    assert len(handles) == 3


async def test_estimate_tokenizer_is_used_when_configured(make):
    reach, echo = make({"default_budget": 400, "tokenizer": "estimate"})
    echo.payload = {"rows": [[i, f"name {i}"] for i in range(2000)]}
    result = await reach.invoke("fetch", {})
    assert result.meta["shaped"]["tokenizer"] == "estimate"
    assert result.meta["shaped"]["tokens"] <= 400
    assert tokens(result.content) <= 400 * 1.1  # the estimate tracks cl100k within a few percent


def test_settings_are_validated_with_the_plugin_name(tmp_path):
    with pytest.raises(ConfigError, match="reach-shape"):
        make_reach(shape_plugin, config={"plugins": {"reach-shape": {"default_budget": 5}}}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="reach-shape"):
        make_reach(shape_plugin, config={"plugins": {"reach-shape": {"tools": {"x": {"mode": "zip"}}}}},
                   data_dir=tmp_path)


async def test_read_result_output_is_not_reshaped(make):
    recorder = HookRecorder()
    reach, echo = make({"default_budget": 200, "read_budget": 3000}, recorder)
    echo.payload = {"rows": [[i, "value"] for i in range(4000)]}
    result = await reach.invoke("fetch", {}, run_id="r")
    page = await reach.invoke("read_result", {"handle": result.meta["shaped"]["handle"], "path": "rows",
                                              "offset": 0, "limit": 200}, run_id="r")
    assert page.content["items"] == echo.payload["rows"][:200]
    assert 200 < tokens(page.content) <= 3000 and "shaped" not in page.meta
    json.loads(page.to_json())


class TestReadResultConformance(ConnectorConformance):
    plugin = "reach-shape"


@pytest.mark.parametrize(("payload", "in_thread"), [
    ({"rows": list(range(20000))}, False),
    ({"rows": ["x" * 40] * 10000}, True),  # large enough to be shaped in a worker thread
], ids=["on-the-loop", "in-the-worker-thread"])
async def test_a_shaping_bug_still_cannot_let_an_oversized_result_through(make, monkeypatch, payload, in_thread):
    reach, echo = make({"default_budget": 300})
    echo.payload = payload
    assert (len(json.dumps(payload)) > shape_plugin.THREAD_THRESHOLD) is in_thread

    def broken(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(shaper_for(reach), "shape", broken)
    result = await reach.invoke("fetch", {}, run_id="r")
    assert result.ok and tokens(result.content) <= 300
    assert result.content.startswith("[reach-shape: result of ") and result.meta["shaped"]["kind"] == "bytes"


async def test_the_usual_call_pays_no_coroutine(make):
    """A result that fits is let through by a plain return, decided from its length and a
    per-tool limit: no coroutine for the core to await (a large one is still awaited)."""
    from reach_core import plugin_instance

    reach, echo = make({"default_budget": 200})
    echo.payload = WEATHER
    result = await reach.invoke("fetch", {}, run_id="r")
    plugin = plugin_instance(reach, "reach-shape")
    assert plugin.reach_post_invoke(None, reach.tool("fetch"), result, None) is None
    echo.payload = {"rows": ["x" * 40] * 10000}
    big = await reach.invoke("fetch", {}, run_id="r")
    assert "shaped" in big.meta  # through the worker thread, awaited by the core
