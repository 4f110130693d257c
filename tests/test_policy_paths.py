"""Policy holds in every path: delegated approval modes, agents without a table,
and the ``fix`` each denial carries (followed literally, the call then runs).

Real pipeline, policy, guard rails and store; the model is an in-process
stand-in that answers by script (as in ``test_delegate.py``).
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from typing import Any

import pytest

from reach_core import NeedsConfirmation, connector, hookimpl
from reach_core.adapter import ModelRequest, ModelResponse, ModelToolCall, Usage
from reach_core.testing import make_reach

MODES = [None, "never", "once", "run", "always"]
_ids = itertools.count()


def calls(*specs: tuple[str, dict[str, Any]]) -> ModelResponse:
    return ModelResponse(
        tool_calls=[ModelToolCall(f"c{next(_ids)}", name, json.dumps(args)) for name, args in specs],
        usage=Usage(10, 1, 5),
    )


def answer(text: str) -> ModelResponse:
    return ModelResponse(text=text, usage=Usage(10, 1, 5))


class Router:
    """A stand-in model: the script is chosen by the run's first user message."""

    name = "router"

    def __init__(self, scripts: dict[str, list[Any]]) -> None:
        self.scripts = scripts

    async def complete(self, request: ModelRequest) -> ModelResponse:
        task = next(m["content"] for m in request.messages if m["role"] == "user")
        script = self.scripts[task]
        done = sum(1 for m in request.messages if m["role"] == "assistant")
        return script[min(done, len(script) - 1)]


class Person:
    """A confirmer that works as reach-confirm does (the mode it reads is
    ``reach.policy(agent).approval_mode(tool)``; ``once`` remembers the exact call,
    ``run`` the tool in the run), with a person who always says yes and is counted."""

    REACH_PLUGIN_NAME = "test-person"
    REACH_HOOK_PRIORITY = {"reach_pre_invoke": 50}

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str | None]] = []
        self.modes: list[str | None] = []
        self._once: set[tuple[str, str]] = set()
        self._runs: set[tuple[str, str, str | None]] = set()

    @hookimpl
    def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
        if not ctx.needs_confirmation or ctx.approved:
            return
        mode = ctx.reach.policy(ctx.agent).approval_mode(tool) or "always"
        self.modes.append(mode)
        exact = (ctx.agent, tool.name + json.dumps(call.arguments, sort_keys=True))
        in_run = (ctx.agent, tool.name, ctx.run_id)
        if (mode == "once" and exact in self._once) or (mode == "run" and in_run in self._runs):
            ctx.approved = True
            return
        self.asked.append((ctx.agent, tool.name, ctx.run_id))
        self._once.add(exact)
        self._runs.add(in_run)
        ctx.approved = True


def build(tmp_path, agents: dict[str, Any], *plugins: Any, ran: list[str] | None = None, **reach_cfg: Any):
    r = make_reach(*plugins, config={"agents": agents, "reach": reach_cfg}, data_dir=tmp_path / "data")
    ran = ran if ran is not None else []

    @connector(risk="write")
    async def send(to: str) -> str:
        """Send a message.

        Args:
            to: address
        """
        ran.append(to)
        return f"sent to {to}"

    r.register(send)
    return r


def _approval(mode: str | None) -> dict[str, Any]:
    return {"approval": {"send": mode}} if mode is not None else {}


# the asks each mode alone makes in the scenario below: three identical sends, in two child runs
ASKS = {None: 0, "never": 0, "once": 1, "run": 2, "always": 3}


def strictest_asks(*modes: str | None) -> int:
    named = {m for m in modes if m is not None}
    if {"once", "run"} <= named:  # neither covers the other: ask every time
        return 3
    return max(ASKS[m] for m in modes)


async def _delegate_twice(r, top: str, target: str) -> None:
    model = Router({
        "go": [calls(("delegate", {"task": "first", "agent": target})),
               calls(("delegate", {"task": "second", "agent": target})), answer("done")],
        # the first child run sends twice (same arguments), the second once more
        "first": [calls(("send", {"to": "boss"})), calls(("send", {"to": "boss"})), answer("sent")],
        "second": [calls(("send", {"to": "boss"})), answer("sent")],
    })
    result = await r.run("go", agent=top, adapter=model, max_steps=5)
    assert result.outcome == "answered", result


@pytest.mark.parametrize("parent", MODES)
@pytest.mark.parametrize("child", MODES)
async def test_a_childs_approval_mode_is_never_looser_than_its_parents(tmp_path, parent, child):
    person = Person()
    ran: list[str] = []
    agents = {
        "main": {"allow": ["send"], "delegates": ["helper"], **_approval(parent)},
        "helper": {"allow": ["send"], **_approval(child)},
    }
    r = build(tmp_path, agents, person, ran=ran)
    await _delegate_twice(r, "main", "helper")

    assert ran == ["boss"] * 3
    asked = len(person.asked)
    assert asked >= ASKS[parent], f"parent {parent} asked {ASKS[parent]} times, the child only {asked}"
    assert asked >= ASKS[child]
    assert asked == strictest_asks(parent, child)
    if parent == "always":  # every later identical call asks again
        assert asked == 3 and set(person.modes) == {"always"}


@pytest.mark.parametrize("grand", ["once", "run", "always"])
@pytest.mark.parametrize("parent", MODES)
@pytest.mark.parametrize("child", ["never", "once", "run", None])
async def test_multi_level_delegation_keeps_the_strictest_ancestor(tmp_path, grand, parent, child):
    person = Person()
    agents = {
        "top": {"allow": ["send"], "delegates": ["mid"], **_approval(grand)},
        "mid": {"allow": ["send"], "delegates": ["helper"], **_approval(parent)},
        "helper": {"allow": ["send"], **_approval(child)},
    }
    r = build(tmp_path, agents, person, max_delegation_depth=2)
    model = Router({
        "go": [calls(("delegate", {"task": "hand on", "agent": "mid"})), answer("done")],
        "hand on": [calls(("delegate", {"task": "first", "agent": "helper"})),
                    calls(("delegate", {"task": "second", "agent": "helper"})), answer("done")],
        "first": [calls(("send", {"to": "boss"})), calls(("send", {"to": "boss"})), answer("sent")],
        "second": [calls(("send", {"to": "boss"})), answer("sent")],
    })
    result = await r.run("go", agent="top", adapter=model, max_steps=5)
    assert result.outcome == "answered"
    assert len(person.asked) == strictest_asks(grand, parent, child) >= ASKS[grand]


async def test_an_ancestor_that_asks_by_tier_holds_the_child_to_always(tmp_path):
    """No mode named, but the parent's tiers want a person: the child's ``once`` must not loosen that."""
    person = Person()
    agents = {
        "main": {"allow": ["send"], "auto_tier": "read", "delegates": ["helper"]},
        "helper": {"allow": ["send"], "approval": {"send": "once"}},
    }
    r = build(tmp_path, agents, person)
    await _delegate_twice(r, "main", "helper")
    assert len(person.asked) == 3


async def test_outside_a_delegated_run_an_agent_keeps_its_own_mode(tmp_path):
    person = Person()
    agents = {
        "main": {"allow": ["send"], "approval": {"send": "always"}, "delegates": ["helper"]},
        "helper": {"allow": ["send"], "approval": {"send": "once"}},
    }
    r = build(tmp_path, agents, person)
    for _ in range(3):
        res = await r.invoke("send", {"to": "boss"}, agent="helper")
        assert res.ok
    assert len(person.asked) == 1 and r.policy("helper").approval_mode(r.tool("send")) == "once"


# ------------------------------------------------------------------ agents without a table

UNCONFIGURED = [None, "guest", "nobody", "Default", "default ", "guest.1", "ゲスト", "x" * 200]


def _lookup_reach(tmp_path, default: dict[str, Any], ran: list[str], **reach_cfg: Any):
    cfg = {"agents": {"default": default, "staff": {"allow": ["lookup", "send"]}}, "reach": reach_cfg}
    r = make_reach(config=cfg, data_dir=tmp_path / "data")

    @connector(risk="read")
    async def lookup(q: str) -> str:
        """Look something up.

        Args:
            q: what
        """
        ran.append(q)
        return f"facts about {q}"

    r.register(lookup)

    @connector(risk="write")
    async def send(to: str) -> str:
        """Send.

        Args:
            to: address
        """
        return "sent"

    r.register(send)
    return r


@pytest.mark.parametrize("agent", UNCONFIGURED)
async def test_an_agent_without_a_table_gets_defaults_max_calls_per_run(tmp_path, agent):
    ran: list[str] = []
    r = _lookup_reach(tmp_path, {"max_calls_per_run": 3}, ran)
    codes = [(await r.invoke("lookup", {"q": f"q{i}"}, agent=agent, run_id="run-1")).error for i in range(5)]
    assert [c.code if c else "ok" for c in codes] == ["ok"] * 3 + ["budget_exceeded"] * 2
    assert ran == ["q0", "q1", "q2"]
    # an agent with a table of its own is held to that table, not to default's
    for i in range(5):
        assert (await r.invoke("lookup", {"q": f"s{i}"}, agent="staff", run_id="run-2")).ok


@pytest.mark.parametrize("agent", UNCONFIGURED)
async def test_an_agent_without_a_table_gets_defaults_rate_limit(tmp_path, agent):
    ran: list[str] = []
    r = _lookup_reach(tmp_path, {"rate_limit": "3/hour"}, ran)
    results = [await r.invoke("lookup", {"q": f"q{i}"}, agent=agent) for i in range(5)]
    assert [x.error.code if x.error else "ok" for x in results] == ["ok"] * 3 + ["rate_limited"] * 2
    assert len(ran) == 3


@pytest.mark.parametrize("agent", UNCONFIGURED)
async def test_an_agent_without_a_table_gets_defaults_daily_budget(tmp_path, agent):
    ran: list[str] = []
    r = _lookup_reach(tmp_path, {"daily_budget": 2}, ran)
    results = [await r.invoke("lookup", {"q": f"q{i}"}, agent=agent) for i in range(4)]
    assert [x.error.code if x.error else "ok" for x in results] == ["ok", "ok", "budget_exceeded", "budget_exceeded"]
    assert len(ran) == 2
    await r.aclose()


@pytest.mark.parametrize("agent", UNCONFIGURED)
async def test_an_agent_without_a_table_gets_defaults_policy(tmp_path, agent):
    r = _lookup_reach(tmp_path, {"allow": ["lookup"], "max_tier": "read"}, [])
    assert (await r.invoke("lookup", {"q": "a"}, agent=agent)).ok
    refused = await r.invoke("send", {"to": "a"}, agent=agent)
    assert refused.error is not None and refused.error.code == "denied"
    assert [t["function"]["name"] for t in r.tools(agent=agent)] == ["lookup"]


async def test_new_agent_names_are_no_new_allowance(tmp_path):
    """Rotating unconfigured names shares ``default``'s limits: each name is the default agent."""
    ran: list[str] = []
    r = _lookup_reach(tmp_path, {"rate_limit": "4/hour", "daily_budget": 6}, ran)
    names = ["guest", "guest2", None, "other", "again", "more", "x", "y"]
    results = [await r.invoke("lookup", {"q": f"q{i}"}, agent=name) for i, name in enumerate(names)]
    assert sum(1 for x in results if x.ok) == 4 and len(ran) == 4
    await r.aclose()


async def test_an_unconfigured_agent_in_a_run_is_capped_with_reach_and_default(tmp_path):
    """``[reach] max_calls_per_run`` and ``[agents.default]``: the lower one holds for every name."""
    ran: list[str] = []
    r = _lookup_reach(tmp_path, {"max_calls_per_run": 2}, ran, max_calls_per_run=10)
    out = [await r.invoke("lookup", {"q": f"q{i}"}, agent="guest", run_id="r") for i in range(3)]
    assert [x.ok for x in out] == [True, True, False]
    assert "agent `default`" in out[2].error.message


# ------------------------------------------------------------------ the fix, followed literally

_LINE = re.compile(r"\[((?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\")(?:\.(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"))*)\] "
                   r"([A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\") = ")
_PART = re.compile(r"[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"")


def _unquote(part: str) -> str:
    return json.loads(part) if part.startswith('"') else part


def follow(config: dict[str, Any], fix: str) -> dict[str, Any]:
    """Apply every ``[table] key = value`` line of ``fix`` to a copy of ``config``, as written."""
    out = copy.deepcopy(config)
    found = 0
    for m in _LINE.finditer(fix):
        value, _ = json.JSONDecoder().raw_decode(fix, m.end())
        node = out
        for part in _PART.findall(m.group(1)):
            node = node.setdefault(_unquote(part), {})
        node[_unquote(m.group(2))] = value
        found += 1
    assert found, f"the fix names no config line to set: {fix!r}"
    return out


def fix_reach(tmp_path, config: dict[str, Any], n: int):
    data = tmp_path / f"data{n}"
    r = make_reach(config=config, data_dir=data)
    for c in TOOLS:
        r.register(c)
    return r


@connector(risk="read", tags=["lookup"])
async def lookup(q: str) -> str:
    """Look up.

    Args:
        q: what
    """
    return f"facts about {q}"


@connector(risk="write")
async def send_email(to: str) -> str:
    """Send an email.

    Args:
        to: address
    """
    return f"sent to {to}"


@connector(risk="dangerous")
async def drop_table(name: str) -> str:
    """Drop a table.

    Args:
        name: the table
    """
    return f"dropped {name}"


@connector(risk="write")
async def sql_write(q: str) -> str:
    """Write SQL.

    Args:
        q: statement
    """
    return "ok"


TOOLS = [lookup, send_email, drop_table, sql_write]
ARGS = {"lookup": {"q": "a"}, "send_email": {"to": "a@example.com"}, "drop_table": {"name": "t"},
        "sql_write": {"q": "x"}}
AGENT_NAMES = ["support", "default", None, "ops.bot", "guest"]

# (what the agent table says, the tool, the key its fix must name)
DENIALS = [
    ({"allow": ["lookup"]}, "send_email", "allow"),
    ({"allow": ["tag:lookup"]}, "drop_table", "allow"),
    ({"allow": []}, "lookup", "allow"),
    ({"deny": ["send_email"]}, "send_email", "deny"),
    ({"deny": ["send_*", "lookup"]}, "send_email", "deny"),
    ({"deny": ["risk:write"]}, "sql_write", "deny"),
    ({"deny": ["sql_*"], "allow": ["lookup"]}, "sql_write", "allow deny"),
    ({"max_tier": "read"}, "send_email", "max_tier"),
    ({"max_tier": "read"}, "drop_table", "max_tier"),
    ({"max_tier": "write"}, "drop_table", "max_tier"),
    ({"max_tier": "read", "allow": ["lookup", "send_email"]}, "send_email", "max_tier"),
    ({"max_tier": "read", "allow": ["lookup"], "deny": ["send_email"]}, "send_email", "allow deny max_tier"),
    ({"allow": ["lookup"], "deny": ["drop_*"], "max_tier": "write"}, "drop_table", "allow deny max_tier auto_tier"),
    # needs a person and no confirmer is installed
    ({}, "drop_table", "auto_tier"),
    ({"auto_tier": "read"}, "send_email", "auto_tier"),
    ({"approval": {"send_email": "always"}}, "send_email", "approval"),
    ({"approval": {"risk:write": "once"}}, "sql_write", "approval"),
    ({"approval": {"sql_*": "run"}}, "sql_write", "approval"),
    ({"approval": {"write": "always"}}, "send_email", "approval"),
]


def _agent_cfg(agent: str | None, table: dict[str, Any]) -> dict[str, Any]:
    name = agent if agent not in (None, "guest") else "default"
    return {"agents": {name: copy.deepcopy(table)}}


@pytest.mark.parametrize("agent", AGENT_NAMES)
@pytest.mark.parametrize(("table", "tool", "key"), DENIALS)
async def test_following_a_denials_fix_literally_lets_the_call_run(tmp_path, agent, table, tool, key):
    config = _agent_cfg(agent, table)
    res = await fix_reach(tmp_path, config, 0).invoke(tool, ARGS[tool], agent=agent)
    assert res.error is not None and res.error.code == "denied"
    fix = res.meta["fix"]
    for k in key.split():
        assert f"] {k} = " in fix or f".{k}] " in fix, (k, fix)
    for k in {"allow", "deny", "max_tier"} - set(key.split()):
        assert f"] {k} = " not in fix, f"`{k}` does not refuse this call: {fix}"
    followed = follow(config, fix)
    again = await fix_reach(tmp_path, followed, 1).invoke(tool, ARGS[tool], agent=agent)
    assert again.ok, (fix, again.error)


async def test_the_fix_of_a_tier_denial_names_max_tier_and_not_allow(tmp_path):
    config = {"agents": {"support": {"allow": ["lookup", "drop_table"], "max_tier": "write"}}}
    res = await fix_reach(tmp_path, config, 0).invoke("drop_table", ARGS["drop_table"], agent="support")
    fix = res.meta["fix"]
    assert '[agents.support] max_tier = "dangerous"' in fix and '[agents.support] auto_tier = "dangerous"' in fix
    assert "allow =" not in fix


async def test_with_a_confirmer_a_tier_fix_leaves_approval_to_the_person(tmp_path):
    class Queue:
        REACH_PLUGIN_NAME = "test-queue"

        @hookimpl
        def reach_register_confirmers(self, register: Any) -> None:
            register("queue", object())

        @hookimpl
        def reach_pre_invoke(self, call: Any, tool: Any, ctx: Any) -> None:
            if ctx.needs_confirmation and not ctx.approved:
                raise NeedsConfirmation("ask", confirmation_id="c1")

    r = make_reach(Queue(), config={"agents": {"support": {"max_tier": "write"}}}, data_dir=tmp_path / "d")
    r.register(drop_table)
    res = await r.invoke("drop_table", ARGS["drop_table"], agent="support")
    assert res.meta["fix"] == 'set [agents.support] max_tier = "dangerous"'
    r2 = make_reach(Queue(), config=follow({"agents": {"support": {"max_tier": "write"}}}, res.meta["fix"]),
                    data_dir=tmp_path / "d2")
    r2.register(drop_table)
    assert (await r2.invoke("drop_table", ARGS["drop_table"], agent="support")).error.code == "needs_confirmation"


@pytest.mark.parametrize("agent", ["support", None])
@pytest.mark.parametrize(("where", "limit_cfg", "n"), [
    ("reach", {"reach": {"max_calls_per_run": 2}}, 3),
    ("agent", {"agents": {"@": {"max_calls_per_run": 2}}}, 3),
    ("connector", {"connectors": {"lookup": {"max_calls_per_run": 1}}}, 2),
    ("identical", {"connectors": {"send_email": {"identical_call_limit": 1}}}, 2),
])
async def test_following_a_run_limits_fix_lets_the_run_go_on(tmp_path, agent, where, limit_cfg, n):
    name = agent or "default"
    config = json.loads(json.dumps(limit_cfg).replace('"@"', json.dumps(name)))
    tool = "send_email" if where == "identical" else "lookup"

    async def go(cfg: dict[str, Any], k: int) -> list[Any]:
        r = fix_reach(tmp_path, cfg, k)
        out = []
        for i in range(n):
            args = ARGS[tool] if where == "identical" else {"q": f"q{i}"}
            out.append(await r.invoke({"id": f"c{i}", "name": tool, "arguments": args}, agent=agent, run_id="run"))
        return out

    first = await go(config, 0)
    assert first[-1].error is not None and first[-1].error.code in ("budget_exceeded", "denied")
    fix = first[-1].meta["fix"]
    again = await go(follow(config, fix), 1)
    assert all(x.ok for x in again), (fix, [x.error for x in again])


@pytest.mark.parametrize(("scope", "table"), [("agent", "agents"), ("tool", "connectors")])
async def test_following_a_daily_budgets_fix_lets_the_call_run(tmp_path, scope, table):
    key = "support" if scope == "agent" else "lookup"
    config = {table: {key: {"daily_budget": 1}}}
    r = fix_reach(tmp_path, config, 0)
    assert (await r.invoke("lookup", {"q": "1"}, agent="support")).ok
    res = await r.invoke("lookup", {"q": "2"}, agent="support")
    assert res.error.code == "budget_exceeded"
    fix = res.meta["fix"]
    assert f"[{table}.{key}] daily_budget = 2" in fix
    await r.aclose()
    r2 = make_reach(config=follow(config, fix), data_dir=tmp_path / "data0")  # the same day's counts
    r2.register(lookup)
    assert (await r2.invoke("lookup", {"q": "2"}, agent="support")).ok
    await r2.aclose()


class Spy:
    """Every result, the child runs' included."""

    REACH_PLUGIN_NAME = "spy"

    def __init__(self) -> None:
        self.results: list[Any] = []

    @hookimpl
    def reach_post_invoke(self, call: Any, tool: Any, result: Any, ctx: Any) -> None:
        self.results.append(result)


def _spied(tmp_path, config: dict[str, Any], k: int) -> tuple[Any, Spy]:
    spy = Spy()
    r = make_reach(spy, config=config, data_dir=tmp_path / f"d{k}")
    for c in TOOLS:
        r.register(c)
    return r, spy


async def test_following_a_delegation_depth_fix_lets_the_task_be_handed_on(tmp_path):
    config = {"agents": {"main": {"allow": ["lookup"], "delegates": ["helper"]},
                         "helper": {"allow": ["lookup"], "delegates": ["leaf"]}, "leaf": {"allow": ["lookup"]}}}

    def model() -> Router:
        return Router({
            "go": [calls(("delegate", {"task": "hand on", "agent": "helper"})), answer("done")],
            "hand on": [calls(("delegate", {"task": "leaf work", "agent": "leaf"})), answer("done")],
            "leaf work": [calls(("lookup", {"q": "x"})), answer("found")],
        })

    from reach_core.scope import run_scope

    async def hand_on(r) -> Any:
        """``helper``'s delegate call inside its own delegated run (what its model would send
        if the tool were offered to it at this depth)."""
        adapter = model()
        with run_scope(r, run_id="p", agent="main", parent_run_id=None, allowed=None, ends_at=None,
                       adapter=adapter, max_steps=5), \
             run_scope(r, run_id="p/helper", agent="helper", parent_run_id="p", allowed=None, ends_at=None,
                       adapter=adapter, max_steps=5):
            return await r.invoke("delegate", {"task": "leaf work", "agent": "leaf"}, agent="helper",
                                  run_id="p/helper")

    r, _ = _spied(tmp_path, config, 0)
    refused = await hand_on(r)
    assert refused.error.code == "denied"
    fix = refused.meta["fix"]
    assert fix == "set [reach] max_delegation_depth = 2"
    r2, spy2 = _spied(tmp_path, follow(config, fix), 1)
    done = await hand_on(r2)
    assert done.ok and done.content == "found"
    assert [x.ok for x in spy2.results if x.name == "lookup"] == [True]


async def test_following_the_fix_of_an_approval_a_parent_wants_names_the_parents_table(tmp_path):
    config = {"agents": {"main": {"allow": ["send_email"], "auto_tier": "read", "delegates": ["helper"]},
                         "helper": {"allow": ["send_email"], "auto_tier": "dangerous"}}}

    def model() -> Router:
        return Router({"go": [calls(("delegate", {"task": "mail", "agent": "helper"})), answer("done")],
                       "mail": [calls(("send_email", {"to": "x@example.com"})), answer("sent")]})

    r, spy = _spied(tmp_path, config, 0)
    await r.run("go", agent="main", adapter=model())
    [refused] = [x for x in spy.results if x.name == "send_email"]
    assert refused.error.code == "denied"
    fix = refused.meta["fix"]
    assert '[agents.main] auto_tier = "write"' in fix and "helper" not in fix
    r2, spy2 = _spied(tmp_path, follow(config, fix), 1)
    await r2.run("go", agent="main", adapter=model())
    assert [x.ok for x in spy2.results if x.name == "send_email"] == [True]


@pytest.mark.parametrize("agent", ["support", None])
async def test_a_pin_denials_fix_is_the_pin_command_and_pinning_lets_the_call_run(tmp_path, agent):
    name = agent or "default"
    config = {"agents": {name: {}}, "reach": {"data_dir": str(tmp_path / "data")}}
    r = make_reach(config=config, data_dir=tmp_path / "data")
    r.register(lookup)
    r.pin_tools(["lookup"])
    changed = make_reach(config=config, data_dir=tmp_path / "data")

    @connector(risk="read", name="lookup")
    async def lookup_changed(q: str, limit: int = 3) -> str:
        """Look up, now with a limit.

        Args:
            q: what
            limit: how many
        """
        return "changed"

    changed.register(lookup_changed)
    res = await changed.invoke("lookup", {"q": "a"}, agent=agent)
    assert res.error.code == "denied"
    fix = res.meta["fix"]
    command = re.search(r"`reach ([^`]+)`", fix).group(1).split()
    assert command == ["tools", "pin", "lookup"]
    changed.pin_tools(command[2:])  # what the command does (`reach tools pin` pins the CLI's own Reach)
    assert (await changed.invoke("lookup", {"q": "a"}, agent=agent)).ok
