"""Per-route hook selection (``REACH_HOOK_WHEN``, ``reach_core.hooks.for_route``): an
implementation that declares on which calls it can act is left out of the other tool
routes, and nothing it would have done on a call is lost."""

from __future__ import annotations

from typing import Any

import pytest

from reach_core import hookimpl
from reach_core.connectors import connector
from reach_core.testing import make_reach


@connector(risk="read")
def look(q: str) -> str:
    """Look something up."""
    return f"about {q}"


@connector(risk="dangerous")
def wipe(path: str) -> str:
    """Wipe a path."""
    return f"wiped {path}"


class Tools:
    @hookimpl
    def reach_register_tools(self, register: Any) -> None:
        register(look)
        register(wipe)


class Asker:
    """A confirmer: approves every call that needs a person, and records what it saw."""

    REACH_PLUGIN_NAME = "asker"
    REACH_HOOK_PRIORITY = {"reach_pre_invoke": 50}
    REACH_HOOK_WHEN = {"reach_pre_invoke": "confirmation", "reach_post_invoke": "confirmation"}

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        self.seen.append(("pre", tool.name))
        if ctx.needs_confirmation:
            ctx.approved, ctx.confirm_reason = True, "asker"

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> None:
        self.seen.append(("post", tool.name))
        if ctx.approved:
            result.meta["approved_by"] = "asker"


class AsksFor:
    """A plain pre-invoke hook (no condition) that asks for a person on calls of ``names``."""

    REACH_PLUGIN_NAME = "asks-for"

    def __init__(self, names: set[str], priority: int) -> None:
        self.names = names
        self.REACH_HOOK_PRIORITY = {"reach_pre_invoke": priority}

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        if tool.name in self.names:
            ctx.needs_confirmation = True


async def test_a_confirmer_is_left_out_of_routes_where_nothing_asks_and_runs_where_the_policy_asks(tmp_path):
    asker = Asker()
    reach = make_reach(Tools(), asker, data_dir=tmp_path)
    for _ in range(3):
        assert (await reach.invoke("look", {"q": "x"})).ok
    assert asker.seen == []  # a read tool under the default policy: nothing can ask
    res = await reach.invoke("wipe", {"path": "/tmp/x"})  # dangerous: the policy asks a person
    assert res.ok and res.meta["approved_by"] == "asker"
    assert asker.seen == [("pre", "wipe"), ("post", "wipe")]


@pytest.mark.parametrize("priority", [10, 49])
async def test_a_confirmer_stays_where_an_earlier_hook_may_ask_mid_call(tmp_path, priority):
    """An implementation without a condition before the confirmer may set
    ctx.needs_confirmation (delegation does): the confirmer must then see every call."""
    asker = Asker()
    reach = make_reach(Tools(), AsksFor({"look"}, priority), asker, data_dir=tmp_path)
    res = await reach.invoke("look", {"q": "x"})
    assert res.ok and res.meta["approved_by"] == "asker"
    assert asker.seen == [("pre", "look"), ("post", "look")]


async def test_an_ask_after_the_confirmer_is_refused_as_before(tmp_path):
    """A hook that asks after the confirmer ran: no person was asked, so the call is denied
    (whether or not the confirmer was on the route: it would have seen nothing to ask)."""
    asker = Asker()
    reach = make_reach(Tools(), asker, AsksFor({"look"}, 60), data_dir=tmp_path)
    res = await reach.invoke("look", {"q": "x"})
    assert not res.ok and res.error.code == "denied"
    assert "approved_by" not in res.meta


async def test_an_argument_hook_keeps_the_confirmer(tmp_path):
    """``reach_pre_validate`` runs before every pre-invoke hook and sees the context: it may ask."""

    class ValidatorAsks:
        REACH_PLUGIN_NAME = "validator-asks"

        @hookimpl
        def reach_pre_validate(self, call: Any, tool: Any, ctx: Any) -> None:
            ctx.needs_confirmation = True

    asker = Asker()
    reach = make_reach(Tools(), ValidatorAsks(), asker, data_dir=tmp_path)
    res = await reach.invoke("look", {"q": "x"})
    assert res.ok and res.meta["approved_by"] == "asker"


class Tagger:
    """Acts only on the tools it names (reach-preselect's ``find_tools``)."""

    REACH_PLUGIN_NAME = "tagger"

    def __init__(self, when: Any) -> None:
        self.REACH_HOOK_WHEN = {"reach_post_invoke": when}
        self.seen: list[str] = []

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> None:
        self.seen.append(tool.name if tool is not None else call.name)


async def test_a_hook_for_named_tools_runs_on_those_only_and_on_one_registered_later(tmp_path):
    tagger = Tagger(("tools", frozenset({"look", "later"})))
    reach = make_reach(Tools(), tagger, data_dir=tmp_path)
    await reach.invoke("look", {"q": "x"})
    await reach.invoke("wipe", {"path": "p"})  # (refused: no person to ask; still not a named tool)
    await reach.invoke("nope", {})  # no such tool: every implementation sees the failure
    assert tagger.seen == ["look", "nope"]

    @connector(risk="read", name="later")
    def later() -> str:
        """Registered after the first calls."""
        return "here"

    reach.register(later)
    assert (await reach.invoke("later", {})).ok
    assert tagger.seen == ["look", "nope", "later"]


@pytest.mark.parametrize("when", ["sometimes", ("tools",), ("names", frozenset({"look"})), 42])
async def test_an_unknown_condition_keeps_the_hook_everywhere(tmp_path, when):
    tagger = Tagger(when)
    reach = make_reach(Tools(), tagger, data_dir=tmp_path)
    await reach.invoke("look", {"q": "x"})
    await reach.invoke("wipe", {"path": "p"})
    assert tagger.seen == ["look", "wipe"]


async def test_a_condition_set_by_a_plugins_object_counts(tmp_path):
    """A plugin whose hooks are methods of its per-Reach object (``reach_plugin_instance``)
    may set ``REACH_HOOK_WHEN`` there, from its settings (reach-preselect does)."""
    from types import SimpleNamespace

    class Obj:
        def __init__(self, settings: Any) -> None:
            self.REACH_HOOK_WHEN = {"reach_post_invoke": ("tools", frozenset({"look"}))}
            self.seen: list[str] = []

        @hookimpl
        def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> None:
            self.seen.append(call.name)

    built: list[Obj] = []

    def instance(settings: Any) -> Obj:
        built.append(Obj(settings))
        return built[-1]

    module = SimpleNamespace(REACH_PLUGIN_NAME="obj", reach_plugin_instance=hookimpl(instance))
    reach = make_reach(Tools(), ("obj", module), data_dir=tmp_path)
    await reach.invoke("look", {"q": "x"})
    await reach.invoke("wipe", {"path": "p"})
    assert built[0].seen == ["look"]
