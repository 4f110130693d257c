"""What a shell would interpret reaches the program as literal text, or not at all."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import exists

from reach_core import ConfigError, InvalidArguments


@pytest.mark.parametrize(
    "payload",
    [
        "hi; touch {marker}",
        "$(touch {marker})",
        "`touch {marker}`",
        "hi && touch {marker}",
        "hi | touch {marker}",
        "hi\ntouch {marker}",
        "hi > {marker}",
        "${{IFS}}touch${{IFS}}{marker}",
    ],
)
async def test_shell_syntax_is_printed_not_run(make_tool, tmp_path: Path, payload: str) -> None:
    marker = tmp_path / "pwned"
    text = payload.format(marker=marker)
    result = await make_tool(echo={}).execute({"command": "echo", "args": [text]})
    assert result["exit_code"] == 0
    assert result["stdout"] == text + "\n"
    assert not exists(marker)


async def test_globs_stay_literal(make_tool, root: Path) -> None:
    tool = make_tool(echo={}, ls={})
    echoed = await tool.execute({"command": "echo", "args": ["*.txt", "?.txt", "[ab].txt"]})
    assert echoed["stdout"] == "*.txt ?.txt [ab].txt\n"
    listed = await tool.execute({"command": "ls", "args": ["*.txt"]})
    assert listed["exit_code"] != 0
    assert "*.txt" in listed["stderr"] and "a.txt" not in listed["stdout"]


async def test_option_injection_is_refused_before_running(make_tool, tmp_path: Path) -> None:
    tool = make_tool(sort={"forbid_options": ["--output*", "-o*"]})
    target = tmp_path / "written"
    for args in (
        ["--output=/etc/x", "a.txt"],
        [f"--output={target}", "a.txt"],
        [f"--out={target}", "a.txt"],
        ["-ro", str(target), "a.txt"],
    ):
        with pytest.raises(InvalidArguments) as refused:
            await tool.execute({"command": "sort", "args": args})
        assert "forbidden" in refused.value.message
    assert not target.exists()
    ok = await tool.execute({"command": "sort", "args": ["-r", "a.txt", "b.txt"]})
    assert ok["stdout"] == "beta\nalpha\n"


async def test_huge_arguments_are_refused(make_tool) -> None:
    tool = make_tool(echo={})
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "echo", "args": ["A" * 1_000_000]})
    assert refused.value.field == "args[0]"
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": "echo", "args": ["x"] * 1000})


@pytest.mark.parametrize("command", ["sh", "bash", "/bin/sh", "rm", "echo;sh", ""])
async def test_command_not_on_the_list_is_refused(make_tool, command: str) -> None:
    with pytest.raises(InvalidArguments) as refused:
        await make_tool(echo={}, ls={}).execute({"command": command, "args": ["-c", "id"]})
    assert refused.value.field == "command"
    assert "echo, ls" in refused.value.message


async def test_environment_is_fixed_and_inherits_no_secret(
    monkeypatch: pytest.MonkeyPatch, root: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    tool = RunCommand(ShellSettings(root=root, commands={"env": {}}, env={"TZ": "UTC"}))
    out = await tool.execute({"command": "env", "args": []})
    variables = dict(line.split("=", 1) for line in out["stdout"].splitlines())
    assert "sk-very-secret" not in out["stdout"]
    assert variables["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert variables["TZ"] == "UTC"
    isolation = {"HOME", "TMPDIR", "PAGER", "EDITOR", "VISUAL", "TAR_OPTIONS", "RSYNC_RSH"}
    extra = {k for k in variables if not k.startswith("GIT_")} - isolation
    assert extra == {"PATH", "LANG", "TZ"}
    home = Path(variables["HOME"])
    assert variables["RSYNC_RSH"] == f"ssh -F {home.parent / 'ssh_config'}"
    assert not home.is_relative_to(root) and not Path(variables["TMPDIR"]).is_relative_to(root)


async def test_what_a_command_leaves_in_home_or_tmpdir_never_reaches_the_next_call(
    root: Path,
) -> None:
    """Private dirs are reused only when untouched; a set with leftovers is deleted."""
    code = (
        "import os, sys\n"
        "print(os.environ['HOME'], os.environ['TMPDIR'], sorted(os.listdir(os.environ['HOME'])),"
        " sorted(os.listdir(os.environ['TMPDIR'])))\n"
        "open(os.path.join(os.environ['TMPDIR'], 'left'), 'w').write('x')\n"
        "try:\n"
        "    open(os.path.join(os.environ['HOME'], '.gitconfig'), 'w').write('[core]\\n')\n"
        "except OSError:\n"
        "    pass\n"
        "open(os.environ['GIT_CONFIG_GLOBAL'], 'a').write('[core]\\n') "
        "if os.access(os.environ['GIT_CONFIG_GLOBAL'], os.W_OK) else None\n"
    )
    tool = RunCommand(ShellSettings(root=root, commands={"python": {"path": sys.executable}}))
    seen = set()
    for _ in range(4):
        out = await tool.execute({"command": "python", "args": ["-c", code]})
        assert out["exit_code"] == 0, out["stderr"]
        home, tmp, home_list, tmp_list = out["stdout"].split(" ", 3)
        assert home_list == "[]" and tmp_list.strip() == "[]"
        assert not Path(home).is_relative_to(root)
        seen.add(home)
    assert len(seen) == 4  # each dirtied set was thrown away, not handed on
    clean = [await tool.execute({"command": "python", "args": ["-c", "import os; print(os.environ['HOME'])"]})
             for _ in range(3)]
    assert len({c["stdout"] for c in clean}) == 1  # untouched sets are reused


async def test_working_directory_stays_inside_the_root(
    make_tool, root: Path, tmp_path: Path
) -> None:
    tool = make_tool(pwd={})
    real = root  # the fixture resolves it
    assert (await tool.execute({"command": "pwd"}))["stdout"] == f"{real}\n"
    assert (await tool.execute({"command": "pwd", "cwd": "sub"}))["stdout"] == f"{real}/sub\n"
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "link")
    for cwd in ("..", "../outside", "/etc", "link", "sub/../..", "missing"):
        with pytest.raises(InvalidArguments) as refused:
            await tool.execute({"command": "pwd", "cwd": cwd})
        assert refused.value.field == "cwd"


def test_binaries_are_resolved_at_start_up(root: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"ls": {}}))
    assert tool.binaries["ls"] in ("/usr/bin/ls", "/bin/ls")
    with pytest.raises(ConfigError, match="no executable found"):
        RunCommand(ShellSettings(root=root, commands={"no-such-program-xyz": {}}))
    with pytest.raises(ValueError, match="absolute"):
        ShellSettings(root=root, commands={"ls": {"path": "bin/ls"}})
    with pytest.raises(ValueError, match="bare program name"):
        ShellSettings(root=root, commands={"/bin/ls": {}})
    with pytest.raises(ValueError, match="root"):
        ShellSettings(commands={"ls": {}})
