"""Plugin discovery by entry point, blocking before import, isolation, conflicts, settings."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from reach_core import ConfigError, Connector, Reach, connector, hookimpl
from reach_core.testing import make_reach


def _run(code: str, env: dict[str, str], tmp_path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full, cwd=tmp_path, timeout=60)


PROBE = """
import json
from reach_core import Reach
r = Reach({"reach": {"data_dir": "d"}} | CONFIG)
print(json.dumps({p.name: p.status for p in r.plugin_info}))
print(json.dumps(sorted(t.name for t in r.all_tools())))
"""


@pytest.mark.parametrize(
    ("config", "env"),
    [
        ('{"plugins": {"disable": ["reach-sample"]}}', {}),
        ("{}", {"REACH_DISABLE_PLUGINS": "reach-sample, reach-broken"}),
        ('{"plugins": {"load": ["reach-broken"]}}', {}),
        ("{}", {"REACH_PLUGINS": ""}),
    ],
)
def test_blocked_plugin_is_never_imported(tmp_path, config, env):
    mark = tmp_path / "mark"
    out = _run(PROBE.replace("CONFIG", config), {**env, "REACH_SAMPLE_IMPORT_MARK": str(mark)}, tmp_path)
    assert out.returncode == 0, out.stderr
    statuses = __import__("json").loads(out.stdout.splitlines()[0])
    assert statuses["reach-sample"] == "blocked"
    assert not mark.exists(), "a blocked plugin's module was imported"


def test_sample_plugin_loads_by_entry_point(tmp_path):
    mark = tmp_path / "mark"
    out = _run(PROBE.replace("CONFIG", "{}"), {"REACH_SAMPLE_IMPORT_MARK": str(mark)}, tmp_path)
    assert out.returncode == 0, out.stderr
    statuses, tools = (__import__("json").loads(line) for line in out.stdout.splitlines()[:2])
    assert statuses["reach-sample"] == "loaded" and mark.exists()
    assert "add_numbers" in tools


def test_broken_plugin_isolated_unless_strict(tmp_path):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}, "plugins": {"load": ["reach-broken", "reach-sample"]}})
    info = {p.name: p for p in reach.plugin_info}
    assert info["reach-broken"].status == "failed" and "broken on purpose" in info["reach-broken"].reason
    assert info["reach-sample"].status == "loaded"
    from reach_core import PluginError

    with pytest.raises(PluginError, match="reach-broken"):
        Reach({"reach": {"data_dir": str(tmp_path)}, "plugins": {"load": ["reach-broken"]}}, strict=True)


def test_plugin_settings_validated_with_names(tmp_path):
    cfg = {"plugins": {"load": ["reach-sample"], "reach-sample": {"offset": "lots"}}}
    with pytest.raises(ConfigError, match=r"\[plugins.reach-sample\] offset"):
        Reach(cfg)


async def test_plugin_settings_reach_connectors(tmp_path):
    reach = Reach({"reach": {"data_dir": str(tmp_path)},
                   "plugins": {"load": ["reach-sample"], "reach-sample": {"offset": 100}}})
    assert (await reach.invoke("add_numbers", {"a": 1, "b": 2})).content == 103


def test_secrets_from_env(tmp_path, monkeypatch):
    from pydantic import BaseModel

    class S(BaseModel):
        token: str

    class P:
        REACH_PLUGIN_NAME = "needs-secret"

        @hookimpl
        def reach_plugin_settings(self):
            return S

    monkeypatch.setenv("MY_TOKEN", "s3cret")
    reach = make_reach(P(), config={"plugins": {"needs-secret": {"token": {"env": "MY_TOKEN"}}}}, data_dir=tmp_path)
    assert reach.plugin_settings("needs-secret").token == "s3cret"
    monkeypatch.delenv("MY_TOKEN")
    with pytest.raises(ConfigError, match="MY_TOKEN"):
        make_reach(P(), config={"plugins": {"needs-secret": {"token": {"env": "MY_TOKEN"}}}}, data_dir=tmp_path)


async def test_secrets_from_env_never_reach_the_error_logs(tmp_path, monkeypatch, caplog):
    """A connector's exception may carry its API key (a URL with a token); the logs get a mask."""
    from pydantic import BaseModel

    class S(BaseModel):
        token: str

    class Leaky(Connector):
        name = "get_leak"
        description = "Fails with its token in the message. Use never."
        risk = "read"
        input_schema = {"type": "object", "properties": {}}

        async def execute(self, params, ctx):
            raise RuntimeError(f"GET https://api.example.com/v1?key={ctx.settings.token} -> 401")

    class P:
        REACH_PLUGIN_NAME = "leaky"

        @hookimpl
        def reach_plugin_settings(self):
            return S

        @hookimpl
        def reach_register_tools(self, register):
            register(Leaky())

    monkeypatch.setenv("LEAKY_TOKEN", "tok-8f2b9c41d7")
    reach = make_reach(P(), config={"plugins": {"leaky": {"token": {"env": "LEAKY_TOKEN"}}}}, data_dir=tmp_path)
    with caplog.at_level("DEBUG", logger="reach"):
        result = await reach.invoke("get_leak", {})
    assert result.error.code == "execution_failed" and "tok-8f2b9c41d7" not in result.to_json()
    events = [r.reach_event for r in caplog.records if r.reach_event["event"] == "reach.connector_exception"]
    assert events and "key=" in events[0]["error"] and "key=" in events[0]["traceback"]
    assert "RuntimeError" in events[0]["traceback"]
    assert "tok-8f2b9c41d7" not in caplog.text and "tok-8f2b9c41d7" not in repr(events)


def _provider(name, result):
    class P:
        REACH_PLUGIN_NAME = name

        @hookimpl
        def reach_register_tools(self, register):
            @connector(name="convert_currency", risk="read")
            def convert(amount: float) -> str:
                """Convert money. Use when asked about exchange rates."""
                return result

            register(convert)

    return P()


async def test_two_plugins_same_tool_unavailable_until_config_picks(tmp_path):
    a, b = _provider("fx-a", "from a"), _provider("fx-b", "from b")
    reach = make_reach(a, b, data_dir=tmp_path)
    assert reach.conflicts == {"convert_currency": ["fx-a", "fx-b"]}
    assert (await reach.invoke("convert_currency", {"amount": 1})).error.code == "unknown_tool"
    picked = make_reach(a, b, config={"connectors": {"convert_currency": {"provider": "fx-b"}}}, data_dir=tmp_path)
    assert (await picked.invoke("convert_currency", {"amount": 1})).content == "from b"


def test_connector_disabled_by_config(tmp_path):
    reach = make_reach(_provider("fx-a", "x"), config={"connectors": {"convert_currency": {"enabled": False}}},
                       data_dir=tmp_path)
    assert reach.tools() == []


def test_connector_overrides_from_config(tmp_path):
    reach = make_reach(_provider("fx-a", "x"), data_dir=tmp_path, config={
        "connectors": {"convert_currency": {"timeout": 3, "retries": 1, "risk": "write", "tags": ["finance"]}}})
    tool = reach.tool("convert_currency")
    assert (tool.timeout, tool.max_retries, tool.risk, tool.tags) == (3.0, 1, "write", ("finance",))
    assert tool.idempotent is False  # raising the tier drops the read default


def test_lowering_risk_is_visible(tmp_path):
    @connector(risk="dangerous")
    def drop_table(name: str) -> str:
        """Drop. Use when asked."""
        return name

    reach = make_reach(config={"connectors": {"drop_table": {"risk": "read"}}}, data_dir=tmp_path)
    reach.register(drop_table)
    assert reach.tool("drop_table").risk_note == "risk lowered by config from dangerous to read"


def test_config_file_and_pyproject(tmp_path, monkeypatch):
    (tmp_path / "reach.toml").write_text('[reach]\ndata_dir = "state"\nconcurrency = 7\n')
    monkeypatch.chdir(tmp_path)
    assert Reach(plugins=[]).config.reach.concurrency == 7
    (tmp_path / "reach.toml").unlink()
    (tmp_path / "pyproject.toml").write_text('[tool.reach.reach]\nconcurrency = 9\n')
    assert Reach(plugins=[]).config.reach.concurrency == 9
    other = tmp_path / "other.toml"
    other.write_text("[reach]\nconcurrency = 11\n")
    monkeypatch.setenv("REACH_CONFIG", str(other))
    assert Reach(plugins=[]).config.reach.concurrency == 11


def test_bad_config_names_the_field(tmp_path):
    bad = tmp_path / "reach.toml"
    bad.write_text("[reach]\nconcurrency = 'many'\n")
    with pytest.raises(ConfigError, match=r"`\[reach\] concurrency`"):
        Reach(bad, plugins=[])
    bad.write_text("[reach\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Reach(bad, plugins=[])
    with pytest.raises(ConfigError, match="does not exist"):
        Reach(tmp_path / "missing.toml", plugins=[])
