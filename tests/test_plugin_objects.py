"""Per-``Reach`` plugin objects: ``reach_plugin_instance`` builds one per plugin and ``Reach``,
and its ``@hookimpl`` methods count as the plugin's hooks wherever a plugin is named."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

from reach_core import PluginError, connector, hookimpl, plugin_instance
from reach_core.testing import make_reach


class Settings(BaseModel):
    label: str = "plain"


class Tagger:
    """A plugin object: its settings, the Reach it was built for, what it saw."""

    REACH_HOOK_PRIORITY = {"reach_post_invoke": 10}

    def __init__(self, reach: Any, settings: Settings) -> None:
        self.reach = reach
        self.settings = settings
        self.seen: list[str] = []

    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        label = self.settings.label

        @connector(risk="read")
        def tag() -> str:
            """Return this Reach's label. Use when asked for the label."""
            return label

        register(tag)

    @hookimpl
    def reach_post_invoke(self, call: Any, result: Any) -> Any:
        self.seen.append(call.name)
        return None


def tagger_module(**extra: Any) -> SimpleNamespace:
    """Stands in for a plugin's entry-point module."""
    return SimpleNamespace(
        reach_plugin_settings=hookimpl(lambda: Settings),
        reach_plugin_instance=hookimpl(lambda reach, settings: Tagger(reach, settings)),
        **extra,
    )


def other_module(name: str) -> SimpleNamespace:
    def reach_post_invoke(call: Any) -> None:
        return None

    return SimpleNamespace(REACH_PLUGIN_NAME=name, reach_post_invoke=hookimpl(reach_post_invoke))


async def test_each_reach_gets_its_own_object_with_its_settings():
    module = tagger_module()
    one = make_reach(("reach-tagger", module), config={"plugins": {"reach-tagger": {"label": "one"}}})
    two = make_reach(("reach-tagger", module), config={"plugins": {"reach-tagger": {"label": "two"}}})
    first, second = plugin_instance(one, "reach-tagger"), plugin_instance(two, "reach-tagger")
    assert isinstance(first, Tagger) and isinstance(second, Tagger) and first is not second
    assert (first.reach, second.reach) == (one, two)
    assert (await one.invoke("tag", {})).content == "one"
    assert (first.seen, second.seen) == (["tag"], [])
    assert (await two.invoke("tag", {})).content == "two"
    assert (first.seen, second.seen) == (["tag"], ["tag"])
    assert plugin_instance(one, "reach-missing") is None


async def test_the_objects_hooks_are_named_as_the_plugin():
    reach = make_reach(("reach-tagger", tagger_module()), other_module("reach-other"))
    info = {p.name: p for p in reach.plugin_info}
    assert info["reach-tagger"].hooks == sorted(
        ["reach_plugin_instance", "reach_plugin_settings", "reach_post_invoke", "reach_register_tools"])
    # REACH_HOOK_PRIORITY on the object (10) puts it before the default (100)
    assert reach.hook_order("reach_post_invoke") == ["reach-tagger", "reach-other"]
    ordered = make_reach(("reach-tagger", tagger_module()), other_module("reach-other"),
                         config={"hooks": {"reach_post_invoke": ["reach-other", "reach-tagger"]}})
    assert ordered.hook_order("reach_post_invoke") == ["reach-other", "reach-tagger"]
    off = make_reach(("reach-tagger", tagger_module()), other_module("reach-other"),
                     config={"plugins": {"reach-tagger": {"hooks_disabled": ["reach_post_invoke"]}}})
    assert off.hook_order("reach_post_invoke") == ["reach-other"]
    await off.invoke("tag", {})
    assert plugin_instance(off, "reach-tagger").seen == []


def test_a_disabled_plugin_builds_no_object():
    built: list[Any] = []
    module = SimpleNamespace(
        reach_plugin_instance=hookimpl(lambda reach: built.append(reach) or Tagger(reach, Settings()))
    )
    reach = make_reach(("reach-tagger", module), config={"plugins": {"disable": ["reach-tagger"]}})
    assert built == [] and plugin_instance(reach, "reach-tagger") is None
    assert reach.hook_order("reach_post_invoke") == []


def test_the_objects_hook_wins_over_the_modules():
    module = tagger_module(reach_post_invoke=hookimpl(lambda call: pytest.fail("the module's hook ran")))
    reach = make_reach(("reach-tagger", module))
    impls = [i for i in reach.runtime.pm.hook.reach_post_invoke.get_hookimpls() if i.plugin_name == "reach-tagger"]
    assert len(impls) == 1 and impls[0].function.__self__ is plugin_instance(reach, "reach-tagger")


def _broken(reach: Any) -> Any:
    raise RuntimeError("no database")


def test_a_factory_that_raises_fails_its_plugin_only():
    reach = make_reach(("reach-broken-object", SimpleNamespace(reach_plugin_instance=hookimpl(_broken))),
                       other_module("reach-other"))
    info = {p.name: p for p in reach.plugin_info}
    assert info["reach-broken-object"].status == "failed"
    assert "could not build its object for this Reach" in info["reach-broken-object"].reason
    assert "no database" in info["reach-broken-object"].reason
    assert info["reach-other"].status == "loaded"
    with pytest.raises(PluginError, match="reach-broken-object.*no database"):
        make_reach(("reach-broken-object", SimpleNamespace(reach_plugin_instance=hookimpl(_broken))),
                   config={"reach": {"strict": True}})


def test_a_factory_returning_none_keeps_the_module():
    module = SimpleNamespace(reach_plugin_instance=hookimpl(lambda: None),
                             reach_post_invoke=hookimpl(lambda call: None))
    reach = make_reach(("reach-plain", module))
    assert plugin_instance(reach, "reach-plain") is None
    assert reach.hook_order("reach_post_invoke") == ["reach-plain"]


class Unlisted(Tagger):
    """Refuses to be listed: the core must find its hooks on the class, not by dir() of the
    object (which on CPython 3.11+ gives an unslotted object a __dict__ and slows every
    ``self.x`` its hooks read)."""

    def __dir__(self) -> list[str]:
        raise AssertionError("dir() of the plugin object")


async def test_the_objects_hooks_are_read_off_its_class():
    module = SimpleNamespace(
        reach_plugin_settings=hookimpl(lambda: Settings),
        reach_plugin_instance=hookimpl(lambda reach, settings: Unlisted(reach, settings)),
    )
    reach = make_reach(("reach-tagger", module), config={"plugins": {"reach-tagger": {"label": "cls"}}})
    assert (await reach.invoke("tag", {})).content == "cls"
    assert plugin_instance(reach, "reach-tagger").seen == ["tag"]
