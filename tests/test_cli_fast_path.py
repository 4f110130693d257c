"""``reach plugins`` and ``reach plugins --json`` are answered before click loads
(``reach_core.plugins_cli``), and say exactly what click's command says.

Every case runs both ways in a subprocess, as a user runs them: the entry point
(``python -m reach_core``, i.e. ``reach_core.__main__:main``) and the click command
itself (``reach_core.cli.main``), and compares exit code, stdout and stderr byte for
byte. The plugins are the test fixtures and small distributions written into a
temporary folder put on ``PYTHONPATH`` (a ``*.dist-info`` with a ``reach`` entry point).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CLICK = "import sys; sys.argv[0] = 'reach'; from reach_core.cli import main; main()"


def _env(tmp_path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REACH_PLUGINS", "REACH_DISABLE_PLUGINS", "REACH_CONFIG",
                                                            "_REACH_COMPLETE", "PYTHONIOENCODING")}
    plugins = tmp_path / "site"
    if plugins.is_dir():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugins), env.get("PYTHONPATH")]))
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the entry-point store of this test only
    env.update(extra or {})
    return env


def _both(tmp_path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None):
    """(fast path, click) results of ``reach ARGS`` in ``tmp_path / "project"``."""
    cwd = tmp_path / "project"
    cwd.mkdir(exist_ok=True)
    full = _env(tmp_path, env)
    runs = []
    for cmd in ([sys.executable, "-m", "reach_core", *args], [sys.executable, "-c", CLICK, *args]):
        out = subprocess.run(cmd, capture_output=True, cwd=cwd, env=full, timeout=60)
        runs.append(_comparable(out.returncode, out.stdout, out.stderr))
    return runs


def _comparable(code: int, out: bytes, err: bytes) -> tuple[int, bytes, bytes]:
    """What must be equal: a crash (a stream that cannot encode a reason, as under click) is
    compared by the exception it ends with; the frames above it differ by design."""
    if b"Traceback (most recent call last)" in err:
        err = err.rstrip().splitlines()[-1]
    return code, out, err


def _plugin(tmp_path, name: str, body: str) -> None:
    """A distribution ``name`` (``reach-x`` -> module ``reach_x``) whose entry point is its module."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    module = name.replace("-", "_")
    (site / f"{module}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    meta = site / f"{module}-0.1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n\n")
    (meta / "entry_points.txt").write_text(f"[reach]\n{name} = {module}\n")


def _config(tmp_path, text: str, file: str = "reach.toml") -> None:
    (tmp_path / "project").mkdir(exist_ok=True)
    (tmp_path / "project" / file).write_text(textwrap.dedent(text), encoding="utf-8")


FIXTURES = 'load = ["reach-sample", "reach-broken"]'

CONFIGS = {
    "none": None,
    "fixtures": f"[plugins]\n{FIXTURES}\n",
    "disabled": f'[plugins]\n{FIXTURES}\ndisable = ["reach-broken"]\n',
    "builtin off": f'[plugins]\n{FIXTURES}\ndisable = ["reach.delegation", "reach.tagged"]\n',
    "hooks off": f'[plugins]\n{FIXTURES}\n[plugins.reach-sample]\nhooks_disabled = ["reach_register_tools"]\n',
    "hooks off by distribution name": (f'[plugins]\n{FIXTURES}\n[plugins.reach_sample]\n'
                                       'hooks_disabled = ["reach_plugin_settings"]\n'),
    "misspelt disable": '[plugins]\ndisable = ["reach-sampel"]\n',
    "misspelt load": '[plugins]\nload = ["reach-smaple"]\n',
    "look-alike name": '[plugins]\nload = ["reach-sаmple"]\n',  # Cyrillic а
    "case": '[plugins]\nload = ["Reach-Sample"]\n',
    "not TOML": "[plugins\nload = 1\n",
    "load not a list": '[plugins]\nload = "reach-sample"\n',
    "strict, a broken plugin": f"[reach]\nstrict = true\n[plugins]\n{FIXTURES}\n",
    "strict not a bool": f'[reach]\nstrict = "yes"\n[plugins]\n{FIXTURES}\n',
    "unknown table": f"[plugins]\n{FIXTURES}\n[nonsense]\nx = 1\n",
    "unicode in the file": f'# ünïcödé ✓\n[plugins]\n{FIXTURES}\n',
    "empty": "",
}


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_same_as_click_for_every_config(tmp_path, config, as_json):
    if CONFIGS[config] is not None:
        _config(tmp_path, CONFIGS[config])
    fast, slow = _both(tmp_path, "plugins", *(["--json"] if as_json else []),
                       env={"REACH_PLUGINS": "reach-sample,reach-broken"} if config == "none" else None)
    assert fast == slow


@pytest.mark.parametrize("where", ["reach.toml", "pyproject.toml", "REACH_CONFIG"])
def test_same_as_click_wherever_the_config_is(tmp_path, where):
    text = f'[plugins]\n{FIXTURES}\ndisable = ["reach-broken"]\n'
    env = None
    if where == "pyproject.toml":
        _config(tmp_path, "[project]\nname = 'x'\n[tool.reach.plugins]\n" + FIXTURES + "\n", "pyproject.toml")
    elif where == "REACH_CONFIG":
        (tmp_path / "elsewhere.toml").write_text(text)
        env = {"REACH_CONFIG": str(tmp_path / "elsewhere.toml")}
    else:
        _config(tmp_path, text)
    fast, slow = _both(tmp_path, "plugins", env=env)
    assert fast == slow


@pytest.mark.parametrize("env", [
    {"REACH_PLUGINS": "reach-sample"},
    {"REACH_PLUGINS": "reach_sample,reach-broken"},
    {"REACH_PLUGINS": "reach-sample", "REACH_DISABLE_PLUGINS": "reach-sample"},
    {"REACH_DISABLE_PLUGINS": "reach-nope"},
    {"REACH_PLUGINS": "reach-sample, ,reach-broken,"},
    {"REACH_PLUGINS": ""},
    {"REACH_CONFIG": "/nonexistent/reach.toml"},
], ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_same_as_click_for_the_environment(tmp_path, env, as_json):
    fast, slow = _both(tmp_path, "plugins", *(["--json"] if as_json else []), env=env)
    assert fast == slow


REASONS = {
    "ansi colour": "\\x1b[31mred\\x1b[0m and \\x1b[1mbold\\x1b[22m",
    "ansi cursor": "\\x1b[2K\\x1b[1Gcleared",
    "bare escape": "an \\x1b escape alone",
    "unicode": "naïve café ✓ — 日本語",
    "look-alike": "rеach (Cyrillic е)",
    "newline": "two\\nlines",
    "carriage return": "over\\rwritten",
    "long": "x" * 5000,
    "empty": "",
}


@pytest.mark.parametrize("encoding", [None, "ascii", "latin-1"])
@pytest.mark.parametrize("reason", list(REASONS))
def test_same_as_click_for_what_a_failing_plugin_says(tmp_path, reason, encoding):
    """A failed plugin's reason is its exception's text: escape codes are stripped (stdout is not
    a terminal) and an encoding that cannot write it is handled as click handles it."""
    _plugin(tmp_path, "reach-failing", f'raise RuntimeError("{REASONS[reason]}")\n')
    env = {"REACH_PLUGINS": "reach-failing"}
    if encoding:
        env["PYTHONIOENCODING"] = encoding
    for args in (["plugins"], ["plugins", "--json"]):
        fast, slow = _both(tmp_path, *args, env=env)
        assert fast == slow


LOGS = {
    "reach warning": 'import logging\nlogging.getLogger("reach.noisy").warning("careful: %s", "x")\n',
    "reach info (below the level)": 'import logging\nlogging.getLogger("reach.noisy").info("quiet")\n',
    "reach error with traceback": ('import logging\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n'
                                   '    logging.getLogger("reach").exception("boom")\n'),
    "another library's logger": 'import logging\nlogging.getLogger("other").warning("not reach")\n',
    "root logger": 'import logging\nlogging.warning("root")\n',
    "logging.handlers first": 'import logging.handlers\nlogging.getLogger("reach.x").warning("handlers")\n',
    "from-import": 'from logging import getLogger\ngetLogger("reach.x").error("from")\n',
    "import_module": ('import importlib\nimportlib.import_module("logging").getLogger("reach.x")'
                      '.warning("import_module")\n'),
    "reach's structlog logger": ('from reach_core.logs import get_logger\n'
                                 'get_logger("reach.x").warning("structured", n=1)\n'),
    "at hook time, not import": 'import sys\n',
}


@pytest.mark.parametrize("log", list(LOGS))
def test_same_logs_as_click_when_a_plugin_logs_on_import(tmp_path, log):
    """The fast path configures logging when logging is first imported: a plugin that logs
    while it is imported gets the same lines on stderr as under click's set-up."""
    _plugin(tmp_path, "reach-noisy", LOGS[log] + "from reach_core import hookimpl\n\n@hookimpl\n"
                                                  "def reach_register_tools(register):\n    pass\n")
    fast, slow = _both(tmp_path, "plugins", env={"REACH_PLUGINS": "reach-noisy"})
    assert fast == slow


@pytest.mark.parametrize("args", [["plugins"], ["plugins", "--json"]])
@pytest.mark.parametrize("config", ["fixtures", "not TOML"])
def test_a_closed_pipe_ends_as_under_click(tmp_path, args, config):
    """``reach plugins | true``: the reader is gone before the first line (the process is still
    importing when the pipe is closed); exit code and stderr as click's."""
    _config(tmp_path, CONFIGS[config])
    results = []
    for cmd in ([sys.executable, "-m", "reach_core", *args], [sys.executable, "-c", CLICK, *args]):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path / "project",
                                env=_env(tmp_path))
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read()
        results.append(_comparable(proc.wait(timeout=60), b"", err))
    assert results[0] == results[1]


@pytest.mark.parametrize("args", [
    ["plugins", "--check"], ["plugins", "--json", "--json"], ["plugins", "--hook", "reach_pre_invoke"],
    ["--config", "reach.toml", "plugins"], ["-v", "plugins"], ["plugins", "-h"], ["plugins", "extra"],
    ["PLUGINS"], ["plugin"], ["plugins", "--JSON"],
])
def test_other_command_lines_go_to_click(tmp_path, args):
    _config(tmp_path, f"[reach]\ndata_dir = 'state'\n[plugins]\n{FIXTURES}\n")
    fast, slow = _both(tmp_path, *args)
    assert fast == slow


def test_shell_completion_goes_to_click(tmp_path):
    env = {"_REACH_COMPLETE": "bash_complete", "COMP_WORDS": "reach plu", "COMP_CWORD": "1"}
    fast, slow = _both(tmp_path, "plugins", env=env)
    assert fast == slow


def _modules_after(tmp_path, args: list[str], env: dict[str, str]) -> set[str]:
    probe = textwrap.dedent(f"""
        import sys
        sys.argv = ["reach", *{args!r}]
        from reach_core.__main__ import main
        try:
            main()
        except SystemExit as exc:
            assert not exc.code, exc.code
        sys.stderr.write(repr(sorted(sys.modules)))
    """)
    (tmp_path / "project").mkdir(exist_ok=True)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path / "project",
                         env=_env(tmp_path, env), timeout=60)
    assert out.returncode == 0, out.stderr
    return set(eval(out.stderr))  # noqa: S307 - our own probe's repr of a list of names


@pytest.mark.parametrize("args", [["plugins"], ["plugins", "--json"]])
@pytest.mark.parametrize("selection", ["every installed plugin", "none loaded", "a light plugin"])
def test_plugins_imports_neither_click_nor_logging(tmp_path, args, selection):
    """Fails before the fast path: click was imported for every command but ``--version``, and
    logging by the CLI's set-up."""
    _plugin(tmp_path, "reach-light", "from reach_core import hookimpl\n\n@hookimpl\n"
                                     "def reach_register_tools(register):\n    pass\n")
    env = {"every installed plugin": {}, "none loaded": {"REACH_PLUGINS": ""},
           "a light plugin": {"REACH_PLUGINS": "reach-light"}}[selection]
    modules = _modules_after(tmp_path, args, env)
    assert "click" not in modules
    if selection != "every installed plugin":  # an installed plugin may import logging itself
        assert "logging" not in modules
