"""The ``reach`` command, run as a user runs it (a subprocess, the installed entry point)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

REACH = shutil.which("reach") or ""


def reach(*args, cwd, env=None, check=True):
    cmd = [REACH, *args] if REACH else [sys.executable, "-m", "reach_core.cli", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})},
                         timeout=60)
    if check:
        assert out.returncode == 0, out.stderr
    return out


@pytest.fixture
def project(tmp_path):
    (tmp_path / "reach.toml").write_text(
        '[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-sample", "reach-broken"]\n'
    )
    return tmp_path


def test_version(project):
    assert reach("--version", cwd=project).stdout.strip().startswith("reach, version")


def test_version_answers_before_click_loads_and_says_what_click_would(project):
    """``reach --version`` (the entry point ``reach_core.__main__:main``) prints click's own
    version line without importing click or any plugin."""
    probe = ("import sys; sys.argv = ['reach', '--version']; from reach_core.__main__ import main; main(); "
             "sys.stderr.write(repr(sorted(m for m in sys.modules if m == 'click' or m.startswith('reach_') "
             "and not m.startswith('reach_core'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=project, check=True)
    assert out.stderr == "[]"
    from click.testing import CliRunner

    from reach_core.cli import cli

    assert out.stdout == CliRunner().invoke(cli, ["--version"], prog_name="reach").output


def test_plugins_json(project):
    rows = json.loads(reach("plugins", "--json", cwd=project).stdout)
    by = {r["name"]: r for r in rows}
    assert by["reach-sample"]["status"] == "loaded"
    assert by["reach-sample"]["distribution"] == "reach-sample"
    assert "reach_register_tools" in by["reach-sample"]["hooks"]
    assert by["reach-broken"]["status"] == "failed" and "broken on purpose" in by["reach-broken"]["reason"]
    text = reach("plugins", cwd=project).stdout
    assert "reach-sample" in text and "[failed]" in text


def test_plugins_hook_order(project):
    out = json.loads(reach("plugins", "--hook", "reach_post_invoke", "--json", cwd=project).stdout)
    assert out == {"hook": "reach_post_invoke", "order": []}


def test_tools_json_and_call(project):
    tools = json.loads(reach("tools", "--json", cwd=project).stdout)
    assert [t["function"]["name"] for t in tools] == ["add_numbers"]
    out = json.loads(reach("call", "add_numbers", "--args", '{"a": 2, "b": 40}', "--json", cwd=project).stdout)
    assert out["ok"] is True and out["content"] == 42
    bad = reach("call", "add_numbers", "--args", '{"a": "x"}', "--json", cwd=project, check=False)
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "invalid_arguments"


def test_tools_lint_json(project):
    out = reach("tools", "lint", "--json", cwd=project, check=False)
    report = json.loads(out.stdout)
    assert report == {"add_numbers": []} and out.returncode == 0


def test_plugin_command_added_by_hook(project):
    assert reach("sample-hello", cwd=project).stdout.strip() == "hello from reach-sample"


def test_bad_config_is_a_clear_error(tmp_path):
    (tmp_path / "reach.toml").write_text("[reach]\nconcurrency = 'x'\n")
    out = reach("tools", cwd=tmp_path, check=False)
    assert out.returncode != 0 and "`[reach] concurrency`" in out.stderr and "Traceback" not in out.stderr


def test_plugins_says_what_it_checked_and_marks_disabled_hooks(project):
    plain = reach("plugins", cwd=project).stdout
    assert "imported to find their hooks, not started" in plain and "--check" in plain
    checked = reach("plugins", "--check", cwd=project).stdout
    assert "checked: 2 plugin(s) started" in checked and "1 tool(s)" in checked and "1 failed" in checked
    with open(project / "reach.toml", "a") as f:
        f.write('[plugins.reach-sample]\nhooks_disabled = ["reach_register_commands"]\n')
    text = reach("plugins", cwd=project).stdout
    assert "reach_register_commands (off: hooks_disabled)" in text
    assert "reach_register_tools (off" not in text


def test_plugins_lists_the_built_ins_and_which_are_off(project):
    """The built-in plugins have names a user disables them by: ``reach plugins`` shows them."""
    assert "built in: reach.tagged [on], reach.delegation [on]" in reach("plugins", cwd=project).stdout
    (project / "reach.toml").write_text('[reach]\ndata_dir = "state"\n[plugins]\nload = ["reach-sample"]\n'
                                        'disable = ["reach.delegation"]\n')
    text = reach("plugins", cwd=project).stdout
    assert "reach.tagged [on], reach.delegation [disabled]" in text


@pytest.mark.parametrize(("table", "agent"), [
    ('[agents.nobody]\nallow = ["nothing_*"]\n', "nobody"),
    ('[agents.default]\ndeny = ["*"]\n', None),
])
def test_tools_says_when_an_agent_has_none(project, table, agent):
    with open(project / "reach.toml", "a") as f:
        f.write(table)
    out = reach("tools", *(["--agent", agent] if agent else []), cwd=project).stdout
    assert out.startswith("no tools for ") and "1 registered" in out and "allow / deny" in out


@pytest.mark.parametrize(("text", "width", "expected"), [
    ("Add two integers. Use when the user asks for a sum.", 110, "Add two integers. Use when the user asks for a sum."),
    ("Add two integers. Use when the user asks for a sum.", 20, "Add two integers…"),
    ("Add two integers. Use when the user asks for a sum.", 22, "Add two integers. Use…"),
    ("Supercalifragilisticexpialidocious words", 10, "Supercali…"),
    ("a  b\tc   d", 110, "a b c d"),
])
def test_descriptions_are_cut_at_a_word_boundary(text, width, expected):
    from reach_core.cli import shorten

    assert shorten(text, width) == expected
    assert len(shorten(text, width)) <= width
