"""Configuration is strict: a typo never widens what an agent may do.

Families (each parametrised over many variants):

* misspelt keys in every core table: near misspellings (a letter dropped, doubled,
  swapped, replaced), case changes, dashes for underscores, far misspellings;
* unknown top-level tables; values of the wrong type;
* unknown hook names in ``[hooks]`` and ``hooks_disabled``;
* unknown strategy providers and error formatters;
* unknown plugin names in ``[plugins] disable/load``, ``[plugins.NAME]``,
  ``[hooks]``, ``[limits.plugins.NAME]``, ``provider``, ``plugin:NAME`` patterns
  and ``REACH_DISABLE_PLUGINS`` / ``REACH_PLUGINS`` (checked before any import);
* a plugin named by its entry-point name or its distribution name;
* ``reach config check`` / ``reach config show``; the generated reference page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from reach_core import ConfigError, Reach, connector, hookimpl
from reach_core.config import (
    AgentConfig,
    Config,
    ConnectorConfig,
    ReachSection,
    StrategiesSection,
    load_config,
)
from reach_core.guard.config import LimitsConfig, PluginLimits
from reach_core.testing import make_reach

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ helpers
def _variants(key: str) -> list[tuple[str, bool]]:
    """Misspellings of ``key``: ``(variant, near)``; a near one must be suggested back."""
    out: list[tuple[str, bool]] = []
    if len(key) > 4:
        out.append((key[:2] + key[3:], True))  # a letter dropped
    out.append((key[:2] + key[2] + key[2:], True))  # a letter doubled
    if len(key) > 3:
        out.append((key[:1] + key[2] + key[1] + key[3:], True))  # two letters swapped
    out.append((key[:-1] + ("x" if key[-1] != "x" else "y"), True))  # the last letter replaced
    out.append((key.upper(), True))
    out.append((key.capitalize(), True) if key.capitalize() != key else (key + "s", True))
    if "_" in key:
        out.append((key.replace("_", "-"), True))
        out.append((key.replace("_", ""), True))
    out.append(("zq" + "x" * 9, False))
    return [(v, near) for v, near in dict.fromkeys(out) if v != key]


def _raises(data, *, plugins=(), **kwargs) -> str:
    with pytest.raises(ConfigError) as info:
        make_reach(*plugins, config=data, **kwargs)
    return str(info.value)


def _tables() -> list[tuple[str, dict, type]]:
    """(where, how to wrap one key into a config, the model) for every core table."""
    return [
        ("[reach]", lambda k, v: {"reach": {k: v}}, ReachSection),
        ("[strategies]", lambda k, v: {"strategies": {k: v}}, StrategiesSection),
        ("[connectors.get_weather]", lambda k, v: {"connectors": {"get_weather": {k: v}}}, ConnectorConfig),
        ("[agents.support]", lambda k, v: {"agents": {"support": {k: v}}}, AgentConfig),
        ("[limits]", lambda k, v: {"limits": {k: v}}, LimitsConfig),
        ("[limits.plugins.user]", lambda k, v: {"limits": {"plugins": {"user": {k: v}}}}, PluginLimits),
    ]


CASES = [
    (where, key, variant, near, wrap)
    for where, wrap, model in _tables()
    for key in model.model_fields
    for variant, near in _variants(key)
    if variant not in model.model_fields and not any(variant == (f.alias or "") for f in model.model_fields.values())
]


# ------------------------------------------------------------------ misspelt keys
@pytest.mark.parametrize(("where", "key", "variant", "near", "wrap"), CASES,
                         ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_misspelt_key_in_every_table_is_an_error(where, key, variant, near, wrap):
    message = _raises(wrap(variant, 1))
    assert f"`{where} {variant}`: unknown key" in message
    if near:
        hint = re.search(r"did you mean `([^`]+)`", message)
        assert hint, message
        # the suggestion is a valid key of that table, the meant one when the typo is a plain one
        assert hint.group(1) == key, message
    else:
        assert "did you mean" not in message and "valid keys:" in message


@pytest.mark.parametrize("variant", ["disabel", "Disable", "DISABLE", "disabled", "lod", "Load", "loads", "dissable"])
def test_misspelt_key_in_plugins_table(variant):
    message = _raises({"plugins": {variant: ["reach-sample"]}})
    assert f"`[plugins] {variant}`" in message and "did you mean" in message


@pytest.mark.parametrize("variant", ["hooks-disabled", "hooks_disable", "Hooks_Disabled", "hook_disabled"])
def test_misspelt_hooks_disabled_is_the_plugins_own_problem(variant):
    """``[plugins.NAME]`` belongs to the plugin's own (strict) settings model."""
    with pytest.raises(ConfigError, match=r"\[plugins\.reach-sample\]"):
        Reach({"plugins": {"load": ["reach-sample"], "reach-sample": {variant: ["reach_post_invoke"]}}})


# ------------------------------------------------------------------ a typo never widens an agent
WEATHER_AND_MAIL = None


def _tools_plugin():
    class Tools:
        REACH_PLUGIN_NAME = "demo-tools"

        @hookimpl
        def reach_register_tools(self, register):
            @connector(risk="read")
            def get_weather(city: str) -> str:
                """Weather of a city."""
                return city

            @connector(risk="write")
            def send_email(to: str) -> str:
                """Send an email."""
                return to

            @connector(risk="dangerous")
            def delete_all(scope: str) -> str:
                """Delete everything."""
                return scope

            register(get_weather)
            register(send_email)
            register(delete_all)

    return Tools()


NARROWING = [("allow", ["get_weather"]), ("deny", ["send_email", "delete_all"]), ("max_tier", "read")]


@pytest.mark.parametrize(("key", "value", "variant"), [
    (k, v, variant) for k, v in NARROWING for variant, _ in _variants(k)
] + [("allow", ["get_weather"], v) for v in ("allowed", "allow_list", "permit", "Allow ", "al low", "alow")])
def test_a_typo_never_leaves_an_agent_with_more_tools(tmp_path, key, value, variant):
    intended = make_reach(_tools_plugin(), config={"agents": {"support": {key: value}}}, data_dir=tmp_path)
    allowed = {t["function"]["name"] for t in intended.tools(agent="support")}
    assert allowed < {"get_weather", "send_email", "delete_all"}
    try:
        typo = make_reach(_tools_plugin(), config={"agents": {"support": {variant: value}}}, data_dir=tmp_path)
    except ConfigError as exc:
        assert f"[agents.support] {variant}" in str(exc)
        return
    pytest.fail(f"{variant!r} was accepted: support may use {typo.tools(agent='support')}")


async def test_alow_is_refused_and_allow_limits_the_agent(tmp_path):
    toml = tmp_path / "reach.toml"
    toml.write_text('[agents.support]\nalow = ["get_weather"]\n')
    with pytest.raises(ConfigError, match=r"`\[agents\.support\] alow`: unknown key; did you mean `allow`\?"):
        Reach(toml, plugins=[_tools_plugin()])
    toml.write_text(f'[reach]\ndata_dir = "{tmp_path}"\n[agents.support]\nallow = ["get_weather"]\n')
    reach = Reach(toml, plugins=[_tools_plugin()])
    assert [t["function"]["name"] for t in reach.tools(agent="support")] == ["get_weather"]
    result = await reach.invoke("send_email", {"to": "x"}, agent="support")
    assert result.error.code == "denied"


# ------------------------------------------------------------------ tables and types
@pytest.mark.parametrize(("table", "hint"), [
    ("plugin", "plugins"), ("agent", "agents"), ("connector", "connectors"), ("strategy", "strategies"),
    ("hook", "hooks"), ("limit", "limits"), ("Reach", "reach"), ("REACH", "reach"), ("Agents", "agents"),
    ("reach_", "reach"), ("conectors", "connectors"), ("stratgies", "strategies"), ("server", None),
    ("audit", None), ("zzqxxx", None), ("policy", None),
])
def test_unknown_top_level_table(table, hint):
    message = _raises({table: {"x": 1}})
    assert f"`[{table}]`: unknown table" in message
    if hint:
        assert f"did you mean `[{hint}]`?" in message
    else:
        assert "valid tables:" in message


@pytest.mark.parametrize(("data", "where"), [
    ({"agents": {"a": {"allow": "get_weather"}}}, "[agents.a] allow"),
    ({"agents": {"a": {"deny": "send_email"}}}, "[agents.a] deny"),
    ({"agents": {"a": {"deny": [1]}}}, "[agents.a] deny[0]"),
    ({"agents": {"a": {"max_tier": "Read"}}}, "[agents.a] max_tier"),
    ({"agents": {"a": {"max_tier": "none"}}}, "[agents.a] max_tier"),
    ({"agents": {"a": {"auto_tier": "dangerous "}}}, "[agents.a] auto_tier"),
    ({"agents": {"a": {"approval": {"send_email": "alwayz"}}}}, "[agents.a] approval.send_email"),
    ({"agents": {"a": {"approval": ["send_email"]}}}, "[agents.a] approval"),
    ({"agents": {"a": {"daily_budget": "10"}}}, "[agents.a] daily_budget"),
    ({"agents": {"a": {"daily_budget": -1}}}, "[agents.a] daily_budget"),
    ({"agents": {"a": {"max_calls_per_run": True}}}, "[agents.a] max_calls_per_run"),
    ({"agents": {"a": {"rate_limit": "lots"}}}, "[agents.a] rate_limit"),
    ({"agents": {"a": "all"}}, "[agents.a]"),
    ({"agents": ["a"]}, "agents"),
    ({"connectors": {"t": {"risk": "Read"}}}, "[connectors.t] risk"),
    ({"connectors": {"t": {"enabled": "false"}}}, "[connectors.t] enabled"),
    ({"connectors": {"t": {"enabled": 0}}}, "[connectors.t] enabled"),
    ({"connectors": {"t": {"timeout": "5"}}}, "[connectors.t] timeout"),
    ({"connectors": {"t": {"timeout": 0}}}, "[connectors.t] timeout"),
    ({"connectors": {"t": {"retries": 1.5}}}, "[connectors.t] retries"),
    ({"connectors": {"t": {"idempotent": "yes"}}}, "[connectors.t] idempotent"),
    ({"connectors": {"t": {"tags": "a,b"}}}, "[connectors.t] tags"),
    ({"connectors": {"t": {"idle_timeout": -1}}}, "[connectors.t] idle_timeout"),
    ({"reach": {"strict": "true"}}, "[reach] strict"),
    ({"reach": {"concurrency": "5"}}, "[reach] concurrency"),
    ({"reach": {"concurrency": 0}}, "[reach] concurrency"),
    ({"reach": {"max_delegation_depth": 4}}, "[reach] max_delegation_depth"),
    ({"reach": {"max_delegation_depth": "2"}}, "[reach] max_delegation_depth"),
    ({"reach": {"budget_timezone": "Mars/Olympus"}}, "[reach] budget_timezone"),
    ({"reach": {"data_dir": 3}}, "[reach] data_dir"),
    ({"reach": "fast"}, "[reach]"),
    ({"plugins": {"disable": "reach-sample"}}, "[plugins] disable"),
    ({"plugins": {"load": [1]}}, "[plugins] load[0]"),
    ({"plugins": {"reach-sample": "on"}}, "[plugins] reach-sample"),
    ({"strategies": {"selector": 1}}, "[strategies] selector"),
    ({"hooks": {"reach_post_invoke": "reach-sample"}}, "[hooks] reach_post_invoke"),
    ({"limits": {"strategy": "leaky-bucket"}}, "[limits] strategy"),
    ({"limits": {"plugins": {"user": {"max_concurrency": 0}}}}, "[limits.plugins.user] max_concurrency"),
    ({"limits": {"plugins": {"user": {"max_concurrency": "4"}}}}, "[limits.plugins.user] max_concurrency"),
    ({"limits": {"plugins": {"user": {"max_concurrency": True}}}}, "[limits.plugins.user] max_concurrency"),
    ({"limits": {"plugins": {"user": {"max_concurrency": 4.0}}}}, "[limits.plugins.user] max_concurrency"),
    ({"limits": {"plugins": {"user": {"rate_limit": ["1/second"]}}}}, "[limits.plugins.user] rate_limit"),
    ({"limits": {"plugins": {"user": {"rate_limit": 10}}}}, "[limits.plugins.user] rate_limit"),
    ({"limits": {"plugins": {"user": "4"}}}, "[limits.plugins.user]"),
    ({"limits": {"storage": 6379}}, "[limits] storage"),
    ({"limits": {"plugins": ["user"]}}, "[limits] plugins"),
])
def test_wrong_type_names_table_and_key(data, where):
    message = _raises(data)
    assert f"`{where}`" in message or where in message, message


def test_every_problem_is_reported_at_once():
    message = _raises({"reach": {"timout": 1, "data_dri": "x"}, "plugin": {}, "agents": {"a": {"alow": []}}})
    for part in ("`[reach] timout`", "`[reach] data_dri`", "`[plugin]`", "`[agents.a] alow`"):
        assert part in message


def test_keys_read_by_the_guard_rails_and_the_core_are_fields():
    """Keys that were read from leftovers are declared, typed and documented."""
    cfg = load_config({
        "reach": {"max_delegation_depth": 2, "max_calls_per_run": 9, "budget_timezone": "Europe/Berlin",
                  "identical_call_limit": 4, "failing_call_limit": 3, "read_cache": True, "retry_backoff_max": 5,
                  "thread_pool": 4, "store": "x.db", "pins": "p.json"},
        "connectors": {"t": {"idle_timeout": 0.5, "rate_limit": "5/second", "daily_budget": 3,
                             "identical_call_limit": 2, "read_cache": False, "retries": 2}},
        "agents": {"a": {"rate_limit": "10/minute", "daily_budget": 1, "max_calls_per_run": 2}},
        "limits": {"storage": "memory://", "plugins": {"user": {"max_concurrency": 2, "rate_limit": "1/second"}}},
    })
    assert cfg.reach.max_delegation_depth == 2 and cfg.connectors["t"].idle_timeout == 0.5
    assert cfg.connectors["t"].max_retries == 2 and cfg.agents["a"].daily_budget == 1
    for model in (ReachSection, ConnectorConfig, AgentConfig, StrategiesSection, LimitsConfig, PluginLimits):
        assert all(f.description for f in model.model_fields.values()), model


# ------------------------------------------------------------------ hooks
HOOK_TYPOS = ["reach_post_invok", "reach_postinvoke", "reach-post-invoke", "REACH_POST_INVOKE", "post_invoke",
              "reach_post_invokes", "reach_pre_invok", "reach_pre_valdate", "Reach_Format_Error", "reach_nothing"]


@pytest.mark.parametrize("hook", HOOK_TYPOS)
def test_unknown_hook_in_hooks_table(hook):
    message = _raises({"hooks": {hook: ["reach-sample"]}})
    assert f"`[hooks] {hook}`: unknown hook" in message


@pytest.mark.parametrize("hook", HOOK_TYPOS + ["reach_register_tool", "reach_startup_"])
def test_unknown_hook_in_hooks_disabled(hook):
    message = _raises({"plugins": {"reach-sample": {"hooks_disabled": [hook]}}})
    assert f"`[plugins.reach-sample] hooks_disabled`: `{hook}` is an unknown hook" in message
    if hook != "reach_nothing":
        assert "did you mean `reach_" in message


@pytest.mark.parametrize("hook", HOOK_TYPOS)
def test_hooks_disabled_in_the_wrong_table(hook):
    message = _raises({"plugins": {"hooks_disabled": [hook]}})
    assert "`[plugins] hooks_disabled`: belongs in one plugin's table" in message
    assert f"`{hook}` is an unknown hook" in message


@pytest.mark.parametrize("hook", ["reach_register_tools", "reach_startup"])
def test_setup_hooks_have_no_order(hook):
    assert "only runtime hooks have an order" in _raises({"hooks": {hook: ["reach-sample"]}})


def test_hooks_disabled_still_works(tmp_path):
    reach = make_reach(_tools_plugin(),
                       config={"plugins": {"demo-tools": {"hooks_disabled": ["reach_register_tools"]}}},
                       data_dir=tmp_path)
    assert reach.all_tools() == []


# ------------------------------------------------------------------ strategy providers
class _Selectors:
    REACH_PLUGIN_NAME = "sel-plugin"

    @hookimpl
    def reach_register_selectors(self, register):
        class Sel:
            def select(self, query, tools, ctx, limit):
                return [t.name for t in tools][:limit]

        register("alpha", Sel())


class _Formatter:
    REACH_PLUGIN_NAME = "fmt-plugin"

    @hookimpl
    def reach_format_error(self, call, error, ctx):
        return "formatted"


@pytest.mark.parametrize(("kind", "name", "hint"), [
    ("selector", "nobody", None), ("selector", "alpah", "alpha"), ("selector", "Alpha", "alpha"),
    ("selector", "alph", "alpha"), ("adapter", "openai", None), ("confirmer", "queue", None),
    ("parser", "taged", "tagged"), ("parser", "json", None),
])
def test_unknown_strategy_provider(tmp_path, kind, name, hint):
    message = _raises({"strategies": {kind: name}}, plugins=[_Selectors()], data_dir=tmp_path)
    assert f"`[strategies] {kind}`" in message and "no installed plugin provides" in message
    assert (f"did you mean `{hint}`?" in message) if hint else "did you mean" not in message


@pytest.mark.parametrize(("name", "hint"), [("nobody", None), ("fmt-plugn", "fmt-plugin"), ("FMT-PLUGIN", "fmt-plugin"),
                                            ("fmt_plugin", "fmt-plugin"), ("reach-sampel", "reach-sample")])
def test_unknown_error_formatter(tmp_path, name, hint):
    message = _raises({"strategies": {"error_formatter": name}}, plugins=[_Formatter()], data_dir=tmp_path)
    assert f"`[strategies] error_formatter`: `{name}` is not an installed plugin" in message
    assert (f"did you mean `{hint}`?" in message) if hint else "installed:" in message


def test_strategy_by_provider_or_plugin_name(tmp_path):
    by_provider = make_reach(_Selectors(), config={"strategies": {"selector": "alpha"}}, data_dir=tmp_path)
    by_plugin = make_reach(_Selectors(), config={"strategies": {"selector": "sel-plugin"}}, data_dir=tmp_path)
    assert by_plugin.config.strategies.selector == "alpha"
    assert by_provider.provider("selector") is not None and by_plugin.provider("selector") is not None


# ------------------------------------------------------------------ plugin names
PLUGIN_TYPOS = [("reach-sampel", "reach-sample"), ("reach_sample", "reach-sample"), ("Reach-Sample", "reach-sample"),
                ("reach-smple", "reach-sample"), ("reachsample", "reach-sample"), ("sample", "reach-sample"),
                ("reach-sample ", None), ("nobody", None), ("reach-weather-x", None)]


@pytest.mark.parametrize(("name", "hint"), PLUGIN_TYPOS)
@pytest.mark.parametrize("key", ["disable", "load"])
def test_unknown_plugin_in_disable_or_load(name, hint, key):
    if name.strip() == "reach-sample":
        make_reach(config={"plugins": {key: [name]}})  # surrounding spaces are not a different name
        return
    message = _raises({"plugins": {key: [name]}})
    assert f"`[plugins] {key}`: `{name}` is not an installed plugin" in message
    if hint:
        assert f"did you mean `{hint}`?" in message


@pytest.mark.parametrize(("name", "hint"), PLUGIN_TYPOS)
@pytest.mark.parametrize("var", ["REACH_DISABLE_PLUGINS", "REACH_PLUGINS"])
def test_unknown_plugin_in_environment(monkeypatch, name, hint, var):
    monkeypatch.setenv(var, f"reach-broken, {name}")
    if name.strip() == "reach-sample":
        make_reach()
        return
    message = _raises({})
    assert f"`{var}`: `{name.strip()}` is not an installed plugin" in message
    if hint:
        assert f"did you mean `{hint}`?" in message


@pytest.mark.parametrize(("data", "where"), [
    ({"plugins": {"reach-sampel": {"offset": 1}}}, "[plugins.reach-sampel]"),
    ({"plugins": {"reach-sample": {}, "nobody-plugin": {}}}, "[plugins.nobody-plugin]"),
    ({"hooks": {"reach_post_invoke": ["reach-sampel"]}}, "[hooks] reach_post_invoke"),
    ({"limits": {"plugins": {"reach-sampel": {"max_concurrency": 1}}}}, "[limits.plugins.reach-sampel]"),
    ({"connectors": {"t": {"provider": "reach-sampel"}}}, "[connectors.t] provider"),
    ({"agents": {"a": {"deny": ["plugin:reach-sampel"]}}}, "[agents.a] deny"),
    ({"agents": {"a": {"allow": ["plugin:reach-sampel"]}}}, "[agents.a] allow"),
    ({"agents": {"a": {"approval": {"plugin:reach-sampel": "always"}}}}, "[agents.a] approval"),
])
def test_unknown_plugin_named_anywhere_else(data, where):
    message = _raises(data)
    assert f"`{where}`" in message and "reach-sample" in message


def test_plugin_globs_and_core_names_are_accepted(tmp_path):
    make_reach(config={"agents": {"a": {"deny": ["plugin:reach-*", "plugin:user", "plugin:reach-core"]}},
                       "limits": {"plugins": {"user": {"max_concurrency": 1}}}}, data_dir=tmp_path)


def test_a_misspelt_deny_by_plugin_cannot_leave_the_plugin_allowed(tmp_path):
    """``deny = ["plugin:demo-tols"]`` would deny nothing."""
    with pytest.raises(ConfigError, match="did you mean `demo-tools`"):
        make_reach(_tools_plugin(), config={"agents": {"a": {"deny": ["plugin:demo-tols"]}}}, data_dir=tmp_path)
    ok = make_reach(_tools_plugin(), config={"agents": {"a": {"deny": ["plugin:demo-tools"]}}}, data_dir=tmp_path)
    assert ok.tools(agent="a") == []


def _probe(code: str, env: dict[str, str], cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    if path is not None:
        full["PYTHONPATH"] = os.pathsep.join([str(path), full.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=60)


@pytest.mark.parametrize(("config", "env"), [
    ('{"plugins": {"disable": ["reach-sampel"]}}', {}),
    ('{"plugins": {"load": ["reach-sampl"]}}', {}),
    ("{}", {"REACH_DISABLE_PLUGINS": "reach-sampe"}),
    ("{}", {"REACH_PLUGINS": "reach-smaple"}),
])
def test_a_misspelt_name_fails_before_any_plugin_is_imported(tmp_path, config, env):
    mark = tmp_path / "mark"
    out = _probe(f"""
        from reach_core import Reach
        Reach({{"reach": {{"data_dir": "d"}}}} | {config})
    """, {**env, "REACH_SAMPLE_IMPORT_MARK": str(mark)}, tmp_path)
    assert out.returncode != 0 and "did you mean `reach-sample`" in out.stderr
    assert not mark.exists(), "a plugin was imported before the names were checked"


# ------------------------------------------------------------------ entry-point name vs distribution name
def _acme(where: Path, module: str = "acme_reach_plugin") -> Path:
    """An installed distribution ``Acme_Tools`` whose ``reach`` entry point is named ``acme``."""
    (where / f"{module}.py").write_text(textwrap.dedent("""
        import os
        from pathlib import Path
        from pydantic import BaseModel, ConfigDict
        from reach_core import connector, hookimpl

        if os.environ.get("ACME_MARK"):
            Path(os.environ["ACME_MARK"]).write_text("imported")

        class Settings(BaseModel):
            model_config = ConfigDict(extra="forbid")
            greeting: str = "hi"

        @hookimpl
        def reach_plugin_settings():
            return Settings

        @hookimpl
        def reach_register_tools(register, settings):
            @connector(risk="read")
            def acme_greet(name: str) -> str:
                \"\"\"Greet someone.\"\"\"
                return f"{settings.greeting} {name}"
            register(acme_greet)

        @hookimpl
        def reach_post_invoke(call, tool, result, ctx):
            return None

        @hookimpl
        def reach_format_error(call, error, ctx):
            return "acme says no"
    """))
    meta = where / "Acme_Tools-1.2.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: Acme_Tools\nVersion: 1.2.0\n\nbody\n")
    (meta / "entry_points.txt").write_text(f"[reach]\nacme = {module}\n")
    return where


DIST_NAMES = ["acme", "Acme_Tools", "acme-tools"]


@pytest.mark.parametrize("name", DIST_NAMES)
def test_disable_by_either_name_blocks_before_import(tmp_path, name):
    site = tmp_path / "site"
    site.mkdir()
    _acme(site)
    mark = tmp_path / "mark"
    out = _probe(f"""
        import json
        from reach_core import Reach
        r = Reach({{"reach": {{"data_dir": "d"}}, "plugins": {{"disable": [{name!r}]}}}})
        print(json.dumps({{p.name: p.status for p in r.plugin_info}}))
    """, {"ACME_MARK": str(mark)}, tmp_path, site)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["acme"] == "blocked"
    assert not mark.exists()


@pytest.mark.parametrize("name", DIST_NAMES)
def test_every_plugin_naming_place_takes_either_name(tmp_path, name):
    site = tmp_path / "site"
    site.mkdir()
    _acme(site)
    out = _probe(f"""
        import asyncio, json
        from reach_core import Reach
        name = {name!r}
        r = Reach({{"reach": {{"data_dir": "d"}},
                   "plugins": {{"load": [name], name: {{"greeting": "hello", "hooks_disabled": []}}}},
                   "hooks": {{"reach_post_invoke": [name]}},
                   "strategies": {{"error_formatter": name}},
                   "limits": {{"plugins": {{name: {{"max_concurrency": 2}}}}}},
                   "connectors": {{"acme_greet": {{"provider": name}}}},
                   "agents": {{"a": {{"deny": ["plugin:" + name]}}}}}})
        res = asyncio.run(r.invoke("acme_greet", {{"name": "bo"}}))
        print(json.dumps({{"content": res.content, "order": r.hook_order("reach_post_invoke"),
                          "denied": r.tools(agent="a"), "plugins": [p.to_dict() for p in r.plugin_info]}}))
    """, {}, tmp_path, site)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["content"] == "hello bo" and got["order"] == ["acme"] and got["denied"] == []
    acme = [p for p in got["plugins"] if p["name"] == "acme"][0]
    assert acme["distribution"] == "Acme_Tools" and set(DIST_NAMES) <= set(acme["aliases"])


def test_reach_plugins_shows_both_names(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _acme(site)
    env = {**os.environ, "PYTHONPATH": str(site), "REACH_PLUGINS": "acme"}
    text = subprocess.run([sys.executable, "-m", "reach_core.cli", "plugins"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)
    assert text.returncode == 0, text.stderr
    assert "acme (distribution Acme_Tools) 1.2.0" in text.stdout
    listed = subprocess.run([sys.executable, "-m", "reach_core.cli", "plugins", "--json"], capture_output=True,
                            text=True, env=env, cwd=tmp_path, timeout=60)
    row = [p for p in json.loads(listed.stdout) if p["name"] == "acme"][0]
    assert row["entry_point"] == "acme" and row["distribution"] == "Acme_Tools"


def test_two_tables_for_one_plugin_are_an_error(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _acme(site)
    out = _probe("""
        from reach_core import Reach
        Reach({"reach": {"data_dir": "d"}, "plugins": {"load": ["acme"], "acme": {}, "acme-tools": {}}})
    """, {}, tmp_path, site)
    assert out.returncode != 0 and "keep one table" in out.stderr


# ------------------------------------------------------------------ the CLI
def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reach_core.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=60)


BAD = """\
[reach]
data_dri = "x"

[agents.support]
alow = ["get_weather"]

[plugin]
disable = ["reach-sample"]
"""


@pytest.mark.parametrize("command", [("tools",), ("plugins", "--check"), ("call", "add_numbers"), ("tools", "lint")])
def test_cli_exits_non_zero_with_the_message_on_stderr(tmp_path, command):
    (tmp_path / "reach.toml").write_text(BAD)
    out = _cli(*command, cwd=tmp_path)
    assert out.returncode != 0 and out.stdout == ""
    assert "did you mean `allow`?" in out.stderr and "Traceback" not in out.stderr


def test_config_check(tmp_path):
    (tmp_path / "reach.toml").write_text(BAD)
    out = _cli("config", "check", cwd=tmp_path)
    assert out.returncode == 1 and out.stdout == ""
    assert "`[reach] data_dri`: unknown key; did you mean `data_dir`?" in out.stderr
    assert "`[agents.support] alow`: unknown key; did you mean `allow`?" in out.stderr
    assert "`[plugin]`: unknown table; did you mean `[plugins]`?" in out.stderr
    report = json.loads(_cli("config", "check", "--json", cwd=tmp_path).stdout)
    assert report["ok"] is False
    assert {(p["table"], p["key"], p["suggestion"]) for p in report["problems"]} >= {
        ("reach", "data_dri", "data_dir"), ("agents.support", "alow", "allow"), ("plugin", None, "plugins")}


def test_config_check_names_and_settings_without_starting(tmp_path):
    mark = tmp_path / "mark"
    bad = tmp_path / "names.toml"
    bad.write_text('[plugins]\ndisable = ["reach-sampel"]\n')
    out = _cli("config", "check", str(bad), cwd=tmp_path, env={"REACH_SAMPLE_IMPORT_MARK": str(mark)})
    assert out.returncode == 1 and "did you mean `reach-sample`?" in out.stderr and not mark.exists()
    settings = tmp_path / "settings.toml"
    settings.write_text('[plugins.reach-sample]\noffset = "lots"\n[strategies]\nselector = "nobody"\n')
    out = _cli("config", "check", "--json", str(settings), cwd=tmp_path)
    problems = json.loads(out.stdout)["problems"]
    assert out.returncode == 1
    assert any(p["table"] == "plugins.reach-sample" and p["key"] == "offset" for p in problems), problems
    assert any(p["table"] == "strategies" and p["key"] == "selector" for p in problems), problems
    good = tmp_path / "good.toml"
    good.write_text('[plugins.reach-sample]\noffset = 2\n[agents.support]\nallow = ["add_numbers"]\n')
    out = _cli("config", "check", str(good), cwd=tmp_path, env={"REACH_DISABLE_PLUGINS": "reach-broken"})
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    assert not (tmp_path / ".reach").exists(), "check must not start anything"


@pytest.mark.parametrize(("toml", "secret"), [
    ('[plugins.reach-sample]\ntoken = { env = "SAMPLE_TOKEN" }\n', "tok-very-secret"),
    ('[reach]\nstore = "postgresql://app:pg-s3cret-pw@db:5432/reach"\n', "pg-s3cret-pw"),
    ('[plugins.reach-sample]\napi_key = "sk-live-123456"\n', "sk-live-123456"),
    ('[plugins.reach-sample]\npassword = "hunter2hunter2"\n', "hunter2hunter2"),
    ('[plugins.reach-sample]\nurl = "https://api.example.com/v1?key=abcdef123456"\n', "abcdef123456"),
    ('[plugins.reach-sample.auth]\nclient_secret = "cs-0987654321"\n', "cs-0987654321"),
])
def test_config_show_masks_secrets(tmp_path, toml, secret):
    (tmp_path / "reach.toml").write_text(toml)
    env = {"SAMPLE_TOKEN": secret}
    for args in (("config", "show"), ("config", "show", "--json")):
        out = _cli(*args, cwd=tmp_path, env=env)
        assert out.returncode == 0, out.stderr
        assert secret not in out.stdout and "***" in out.stdout
    shown = _cli("config", "show", cwd=tmp_path, env=env).stdout
    effective = tomllib.loads(shown)  # valid TOML, every default filled in
    assert effective["reach"]["concurrency"] == 5 and effective["agents"] == {} or "agents" not in effective


def test_config_show_rejects_a_bad_file(tmp_path):
    (tmp_path / "reach.toml").write_text(BAD)
    out = _cli("config", "show", cwd=tmp_path)
    assert out.returncode != 0 and "did you mean `allow`?" in out.stderr


# ------------------------------------------------------------------ the generated reference
def test_configuration_reference_is_generated_from_the_models():
    from reach_core.config_doc import render

    committed = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == render(), "run: python -m reach_core.config_doc --write docs/configuration.md"
    for model in (ReachSection, ConnectorConfig, AgentConfig, StrategiesSection, LimitsConfig, PluginLimits):
        for name in model.model_fields:
            assert f"`{name}`" in committed


def _doc_snippets() -> list[tuple[str, dict]]:
    """Every ``toml`` block of the docs that is a whole reach config (not a fragment, not a
    plugin's pyproject.toml), as data."""
    out = []
    for path in sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]):
        if path.name == "configuration.md":
            continue  # the reference shows bad configs on purpose
        for i, block in enumerate(re.findall(r"```toml\n(.*?)```", path.read_text(encoding="utf-8"), re.S)):
            try:
                data = tomllib.loads(block)
            except tomllib.TOMLDecodeError:
                continue
            if "project" in data or "build-system" in data:
                continue
            out.append((f"{path.relative_to(ROOT)}#{i}", data.get("tool", {}).get("reach", data)))
    return out


SNIPPETS = _doc_snippets()


def test_the_docs_hold_config_examples():
    assert len(SNIPPETS) >= 10


@pytest.mark.parametrize(("where", "data"), SNIPPETS, ids=[w for w, _ in SNIPPETS])
def test_every_toml_example_in_the_docs_is_valid_config(where, data):
    Config.model_validate(data)


# ------------------------------------------------------------------ tool names (known only once tools are registered)
@pytest.mark.parametrize(("data", "where", "hint"), [
    ({"agents": {"a": {"deny": ["send_emial"]}}}, "[agents.a] deny", "send_email"),
    ({"agents": {"a": {"deny": ["Send_Email"]}}}, "[agents.a] deny", "send_email"),
    ({"agents": {"a": {"approval": {"delete-all": "always"}}}}, "[agents.a] approval", "delete_all"),
    ({"agents": {"a": {"allow": ["get_wether"]}}}, "[agents.a] allow", "get_weather"),
    ({"agents": {"a": {"pinned": ["getweather"]}}}, "[agents.a] pinned", "get_weather"),
    ({"connectors": {"send_emails": {"daily_budget": 1}}}, "[connectors.send_emails]", "[connectors.send_email]"),
    ({"connectors": {"zzqxxxxx": {"daily_budget": 1}}}, "[connectors.zzqxxxxx]", None),
])
async def test_a_tool_name_no_tool_has_is_logged_at_start(tmp_path, caplog, data, where, hint):
    reach = make_reach(_tools_plugin(), config=data, data_dir=tmp_path)
    with caplog.at_level("WARNING", logger="reach"):
        await reach.start()
    warned = [r.reach_event["problem"] for r in caplog.records
              if getattr(r, "reach_event", {}).get("event") == "reach.config_unknown_tool"]
    assert len(warned) == 1 and f"`{where}`" in warned[0], warned
    assert (f"did you mean `{hint}`" in warned[0]) if hint else "did you mean" not in warned[0]
    await reach.aclose()


async def test_right_tool_names_patterns_and_tiers_are_not_logged(tmp_path, caplog):
    reach = make_reach(_tools_plugin(), data_dir=tmp_path, config={
        "agents": {"a": {"allow": ["get_*", "tag:x", "plugin:demo-tools", "risk:read", "send_email"],
                         "deny": ["delete_all"], "approval": {"write": "always", "send_email": "once"},
                         "pinned": ["get_weather"]}},
        "connectors": {"get_weather": {"timeout": 3}}})
    with caplog.at_level("WARNING", logger="reach"):
        await reach.start()
    assert "reach.config_unknown_tool" not in caplog.text
    await reach.aclose()


def test_a_rejected_secret_is_not_printed(tmp_path, monkeypatch):
    from pydantic import BaseModel, Field

    class S(BaseModel):
        token: str = Field(min_length=40)

    class P:
        REACH_PLUGIN_NAME = "secretive"

        @hookimpl
        def reach_plugin_settings(self):
            return S

    monkeypatch.setenv("SECRETIVE_TOKEN", "tok-short-but-secret")
    with pytest.raises(ConfigError) as info:
        make_reach(P(), config={"plugins": {"secretive": {"token": {"env": "SECRETIVE_TOKEN"}}}}, data_dir=tmp_path)
    assert "`[plugins.secretive] token`" in str(info.value) and "tok-short-but-secret" not in str(info.value)


@pytest.mark.parametrize(("toml", "imported"), [
    ('[agents.support]\nallow = ["add_numbers"]\n[connectors.add_numbers]\ntimeout = 3\n', False),
    ('[plugins]\ndisable = ["reach-broken"]\n[limits.plugins.reach-sample]\nmax_concurrency = 2\n', False),
    ('[plugins.reach-sample]\noffset = 1\n', True),  # its settings model is in the plugin
    ('[strategies]\nparser = "tagged"\n', True),  # provider names are known once registered
])
def test_config_check_imports_a_plugin_only_when_a_check_needs_it(tmp_path, toml, imported):
    mark = tmp_path / "mark"
    (tmp_path / "reach.toml").write_text(toml)
    out = _cli("config", "check", cwd=tmp_path, env={"REACH_SAMPLE_IMPORT_MARK": str(mark)})
    assert out.returncode == 0, out.stdout + out.stderr
    assert mark.exists() is imported


def test_config_check_sees_a_hook_order_naming_a_plugin_without_that_hook(tmp_path):
    (tmp_path / "reach.toml").write_text('[hooks]\nreach_post_invoke = ["reach-sample"]\n')
    out = _cli("config", "check", cwd=tmp_path)
    assert out.returncode == 1 and "`reach-sample` implements no `reach_post_invoke`" in out.stderr
