"""Test helpers for reach itself and for anyone writing a plugin.

* :func:`make_reach` — a fresh ``Reach`` with entry-point autoload off: only the
  plugins you pass, so tests never depend on what else is installed.
* :class:`HookRecorder` — a plugin that records every runtime hook call.
* :class:`ConnectorConformance` — subclass it in a connector plugin's tests
  (``class TestWeatherConformance(ConnectorConformance): plugin = "reach-weather"``)
  to check the entry point, registration, schemas, lint (as warnings) and one
  example call per tool.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path
from typing import Any

from .hookspecs import hookimpl
from .reach import Reach

__all__ = ["ConnectorConformance", "HookRecorder", "make_reach"]


def make_reach(*plugins: Any, config: dict[str, Any] | None = None, data_dir: Path | str | None = None,
               **kwargs: Any) -> Reach:
    """A ``Reach`` holding only ``plugins`` (modules, objects or ``(name, obj)`` pairs)."""
    cfg = dict(config or {})
    if data_dir is not None:
        cfg.setdefault("reach", {})
        cfg["reach"] = {**cfg["reach"], "data_dir": str(data_dir)}
    return Reach(cfg, plugins=list(plugins), **kwargs)


class HookRecorder:
    """Records ``(hook, tool name, details)`` for every runtime hook call."""

    REACH_PLUGIN_NAME = "hook-recorder"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, dict[str, Any]]] = []

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    @hookimpl
    def reach_pre_validate(self, call: Any, tool: Any, ctx: Any) -> None:
        self.calls.append(("reach_pre_validate", tool.name if tool else None, {"arguments": call.arguments}))

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        self.calls.append(("reach_pre_invoke", tool.name if tool else None, {"arguments": call.arguments}))

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> None:
        self.calls.append(("reach_post_invoke", call.name, {"ok": result.ok,
                                                             "code": result.error.code if result.error else None}))

    @hookimpl
    def reach_run_step(self, step: Any, ctx: Any) -> None:
        self.calls.append(("reach_run_step", None, {"step": step}))

    @hookimpl
    def reach_tool_progress(self, event: Any, ctx: Any) -> None:
        self.calls.append(("reach_tool_progress", event.get("tool"), dict(event)))


class ConnectorConformance:
    """Base class of a plugin's conformance tests (pytest collects subclasses named ``Test*``).

    Set ``plugin`` (the entry-point name). Override :meth:`config` to give settings
    (``tmp_path`` is a fresh directory) and :meth:`example_calls` to return
    ``[(tool_name, arguments), ...]`` that must succeed against whatever
    :meth:`config` points at (start local servers in fixtures of the subclass).
    """

    plugin: str = ""

    def config(self, tmp_path: Path) -> dict[str, Any]:
        return {"reach": {"data_dir": str(tmp_path / "data")}}

    def example_calls(self) -> list[tuple[str, dict[str, Any]]]:
        return []

    # -- helpers
    def _entry_point(self) -> Any:
        from importlib.metadata import entry_points

        eps = [ep for ep in entry_points(group="reach") if ep.name == self.plugin]
        assert eps, f"no entry point named {self.plugin!r} in group 'reach': is the distribution installed?"
        return eps[0]

    def make(self, tmp_path: Path) -> Reach:
        module = self._entry_point().load()
        return Reach(self.config(tmp_path), plugins=[(self.plugin, module)], strict=True)

    # -- the checks
    def test_entry_point_named_after_distribution(self) -> None:
        ep = self._entry_point()
        dist = getattr(ep, "dist", None)
        assert dist is not None
        assert dist.name.replace("_", "-").lower() == self.plugin.lower(), (
            f"entry point {self.plugin!r} is provided by {dist.name!r}; name it after the distribution"
        )

    def test_registers_valid_tools(self, tmp_path: Path) -> None:
        reach = self.make(tmp_path)
        info = [p for p in reach.plugin_info if p.name == self.plugin]
        assert info and info[0].status == "loaded", info
        tools = [t for t in reach.all_tools() if t.plugin == self.plugin]
        assert tools, f"{self.plugin} registered no tools"
        for decl in reach.tools():
            fn = decl["function"]
            assert fn["parameters"]["type"] == "object" and "properties" in fn["parameters"]
            assert fn["description"], f"{fn['name']} has no description"
            json.dumps(decl)
        for tool in tools:
            assert tool.risk in ("read", "write", "dangerous")

    def test_lint_warnings(self, tmp_path: Path) -> None:
        from .lint import lint_tool

        reach = self.make(tmp_path)
        for tool in reach.all_tools():
            for problem in lint_tool(tool):
                warnings.warn(f"{tool.name}: {problem.message}", stacklevel=1)

    def test_example_calls_succeed(self, tmp_path: Path) -> None:
        calls = self.example_calls()
        if not calls:
            return
        reach = self.make(tmp_path)

        async def go() -> list[Any]:
            try:
                return [await reach.invoke(name, args, run_id="conformance") for name, args in calls]
            finally:
                await reach.aclose()

        for (name, _), result in zip(calls, asyncio.run(go()), strict=True):
            assert result.ok, f"{name}: {result.error}"
            text = result.to_json()
            assert isinstance(text, str)
            if not isinstance(result.content, str):  # strings are sent to the model as they are
                json.loads(text)
