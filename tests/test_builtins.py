"""The core's built-in plugins: registered by name before the installed ones, and
switched off by name like any plugin."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import reach_core
from reach_core import ConfigError
from reach_core.testing import make_reach

AGENTS = {"main": {"allow": ["*"], "delegates": ["helper"]}, "helper": {"allow": ["*"]}}


def test_both_built_ins_are_registered_by_name_before_the_installed_plugins(tmp_path):
    class Other:
        pass

    r = make_reach(("other", Other()), config={"agents": AGENTS}, data_dir=tmp_path)
    names = [n for n, _ in r.runtime.pm.list_name_plugin()]
    assert names.index("reach.tagged") < names.index("other")
    assert names.index("reach.delegation") < names.index("other")
    assert [t.name for t in r.all_tools()] == ["delegate"] and r.tool("delegate").plugin == "reach-core"
    assert "tagged" in r.providers("parser")


@pytest.mark.parametrize("how", ["config", "argument"])
def test_delegation_is_disabled_like_any_plugin(tmp_path, how):
    config: dict = {"agents": AGENTS}
    kwargs = {}
    if how == "config":
        config["plugins"] = {"disable": ["reach.delegation"]}
    else:
        kwargs["disable"] = ["reach.delegation"]
    r = make_reach(config=config, data_dir=tmp_path, **kwargs)
    assert r.all_tools() == []
    assert r.hook_order("reach_pre_invoke") == []
    assert [t["function"]["name"] for t in r.tools(agent="main")] == []


def test_without_the_tagged_parser_text_calls_need_another_parser(tmp_path):
    r = make_reach(config={"plugins": {"disable": ["reach.tagged"]}}, data_dir=tmp_path)
    assert r.providers("parser") == {}
    with pytest.raises(ConfigError, match="reach.tagged"):
        r.parse_tagged('<tool_call>{"name": "x", "arguments": {}}</tool_call>')


def test_with_the_tagged_parser_text_calls_parse(tmp_path):
    r = make_reach(data_dir=tmp_path)
    calls, errors = r.parse_tagged('<tool_call>{"name": "x", "arguments": {}}</tool_call>')
    assert [c.name for c in calls] == ["x"] and errors == []


def test_without_delegates_in_config_delegation_costs_no_hook(tmp_path):
    r = make_reach(config={"agents": {"a": {"allow": ["*"]}}}, data_dir=tmp_path)
    assert r.hook_order("reach_pre_invoke") == [] and r.all_tools() == []


def test_the_loop_does_not_import_delegation():
    tree = ast.parse((Path(reach_core.__file__).parent / "loop.py").read_text(encoding="utf-8"))
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in modules if m and ("delegat" in m or "builtin" in m)}


def test_config_check_accepts_a_built_in_in_disable(tmp_path):
    from reach_core.config import load_config
    from reach_core.config_cli import _check_installed

    cfg = load_config({"plugins": {"disable": ["reach.delegation", "reach.tagged"]}})
    assert _check_installed(cfg, []) == []
    cfg = load_config({"plugins": {"disable": ["reach.delegatoin"]}})
    assert _check_installed(cfg, [])  # a misspelt name is still a problem
