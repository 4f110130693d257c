"""The invoke path builds its ``ToolCall``, ``CallContext`` and ``ToolResult`` without
calling their classes (``object.__new__`` and the stores written out: a class whose
``__init__`` is Python code costs as much again per call). These tests hold each such
object equal to the one its public constructor builds from the same values, so a field
added to a class but not to the written-out copy fails here instead of reaching a hook
as an unset slot or a class default."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from reach_core import Reach, connector, hookimpl
from reach_core.calls import ToolCall, to_call
from reach_core.context import CallContext
from reach_core.result import ToolResult

GENERATED = re.compile(r"call_[0-9]+")


def _every_field(obj: Any) -> dict[str, Any]:
    """Every dataclass field of ``obj``, read (an unset slot raises AttributeError)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


@pytest.mark.parametrize("cid", ["c1", "", None, 5, 0, "call_1", "x" * 200, "é"])
@pytest.mark.parametrize("name", ["add", "", 7, "name with spaces"])
@pytest.mark.parametrize("args", [{"arguments": '{"a": 1}'}, {"args": {"a": 1}}, {}, {"arguments": None}])
@pytest.mark.parametrize("key", [None, "k-1"])
def test_a_dict_call_is_the_tool_call_its_constructor_builds(cid, name, args, key) -> None:
    shape: dict[str, Any] = {"name": name, **args}
    if cid is not None:
        shape["id"] = cid
    if key is not None:
        shape["idempotency_key"] = key
    fast = to_call(shape)
    assert type(fast) is ToolCall
    want_args = args.get("arguments", args.get("args"))
    usable = isinstance(cid, str) and bool(cid)  # a non-string id is replaced, like a missing one
    want_id = cid if usable else fast.id  # no usable id: a generated one, checked below
    assert fast == ToolCall(str(name), want_args, want_id, key)
    assert _every_field(fast) == _every_field(ToolCall(str(name), want_args, want_id, key))
    if not usable:
        assert GENERATED.fullmatch(fast.id) and to_call(dict(shape)).id != fast.id  # unique per call


def test_arguments_given_apart_win_over_the_dicts() -> None:
    fast = to_call({"id": "c1", "name": "add", "arguments": '{"a": 1}'}, {"a": 2})
    assert fast == ToolCall("add", {"a": 2}, "c1")


class Capture:
    """Keeps the context each pre-invoke hook sees."""

    REACH_PLUGIN_NAME = "capture"

    def __init__(self) -> None:
        self.contexts: list[CallContext] = []

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: CallContext) -> None:
        self.contexts.append(ctx)


def _reach(tmp_path: Any, capture: Capture) -> Reach:
    @connector(risk="read")
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[capture])
    reach.register(add)
    return reach


@pytest.mark.parametrize("extra", [{}, {"query": "what is 1+2", "parent_run_id": "run-0"},
                                   {"agent": "other", "run_id": "run-1"}, {"query": ""}])
async def test_the_pipeline_context_is_the_one_its_constructor_builds(tmp_path, extra) -> None:
    capture = Capture()
    reach = _reach(tmp_path, capture)
    res = await reach.invoke({"id": "c9", "name": "add", "arguments": '{"a": 1, "b": 2}'}, **extra)
    assert res.ok and res.content == 3
    (ctx,) = capture.contexts
    built = CallContext(ctx.rt, ctx.tool, extra.get("agent", "default"), extra.get("run_id"), "c9",
                        ctx.trace_id, None, extra.get("query"), extra.get("parent_run_id"), ctx.started)
    seen = dict(vars(ctx))
    seen.pop("arguments", None)  # set by the pipeline after the context is built (validated arguments)
    for later in ("attempt", "_guard_counted", "_guard_pending"):  # the guard rails' marks in a run
        seen.pop(later, None)
    assert seen == vars(built)
    assert ctx.started > 0 and ctx.trace_id == res.trace_id
    await reach.aclose()


async def test_the_pipeline_result_is_the_one_its_constructor_builds(tmp_path) -> None:
    reach = _reach(tmp_path, Capture())
    res = await reach.invoke({"id": "c1", "name": "add", "arguments": '{"a": 40, "b": 2}'})
    built = ToolResult(res.call_id, res.name, True, 42, None, res.elapsed_ms, res.trace_id, {"attempts": 1})
    assert _every_field(res) == _every_field(built)
    assert res == built and res.to_message() == built.to_message() == {
        "role": "tool", "tool_call_id": "c1", "content": "42"}
    await reach.aclose()
