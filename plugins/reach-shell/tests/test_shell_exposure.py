"""A shell root the agent can write through reach-files: warned at start-up and by lint."""

from __future__ import annotations

import logging
import types
from pathlib import Path
from typing import Any

import pytest
import reach_shell.plugin as shell_plugin
from pydantic import BaseModel
from reach_shell import RunCommand, ShellSettings

from reach_core import hookimpl
from reach_core.lint import lint_tool
from reach_core.testing import make_reach


class _FilesSettings(BaseModel):
    roots: list[str] = []


def _files_plugin() -> types.SimpleNamespace:
    """Stands in for reach-files' settings only (that plugin is not in this venv)."""

    @hookimpl
    def reach_plugin_settings() -> type[_FilesSettings]:
        return _FilesSettings

    return types.SimpleNamespace(reach_plugin_settings=reach_plugin_settings)


def _config(shell_root: Path, files_roots: list[str] | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "plugins": {"reach-shell": {"root": str(shell_root), "commands": {"echo": {}}}}
    }
    if files_roots is not None:
        config["plugins"]["reach-files"] = {"roots": files_roots}
    return config


@pytest.mark.parametrize(
    "files_root",
    ["{root}", "{root}/", "{root}/sub", "{parent}", "{root}/../work", "{link}"],
    ids=["same", "trailing-slash", "inside", "around", "dotdot", "symlink"],
)
def test_overlap_is_warned_at_start_and_reported_by_lint(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, files_root: str
) -> None:
    link = tmp_path / "link"
    link.symlink_to(root)
    given = files_root.format(root=root, parent=root.parent, link=link)
    with caplog.at_level(logging.WARNING, logger="reach.shell"):
        reach = make_reach(
            ("reach-shell", shell_plugin),
            ("reach-files", _files_plugin()),
            config=_config(root, [given]),
            data_dir=tmp_path / "d",
        )
    assert any(r.name == "reach.shell" and "overlaps the reach-files root" in r.getMessage() for r in caplog.records)
    problems = lint_tool(reach.tool("run_command"))
    assert [p.rule for p in problems] == ["shell_root_overlap"]
    assert "docs/plugins/reach-shell.md" in problems[0].message


def test_reach_files_default_root_counts_too(root: Path, tmp_path: Path) -> None:
    data = tmp_path / "d"
    (data / "files").mkdir(parents=True)
    reach = make_reach(
        ("reach-shell", shell_plugin),
        ("reach-files", _files_plugin()),
        config=_config(data / "files", None)
        | {"plugins": {**_config(data / "files", None)["plugins"], "reach-files": {}}},
        data_dir=data,
    )
    assert [p.rule for p in lint_tool(reach.tool("run_command"))] == ["shell_root_overlap"]


@pytest.mark.parametrize("files_root", ["{tmp}/elsewhere", "{tmp}/work2"])
def test_separate_roots_are_quiet(
    root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, files_root: str
) -> None:
    given = files_root.format(tmp=tmp_path)
    Path(given).mkdir()
    with caplog.at_level(logging.WARNING, logger="reach.shell"):
        reach = make_reach(
            ("reach-shell", shell_plugin),
            ("reach-files", _files_plugin()),
            config=_config(root, [given]),
            data_dir=tmp_path / "d",
        )
    assert not [r for r in caplog.records if r.name == "reach.shell"]
    assert lint_tool(reach.tool("run_command")) == []


def test_without_reach_files_nothing_is_reported(root: Path, tmp_path: Path) -> None:
    reach = make_reach(("reach-shell", shell_plugin), config=_config(root, None), data_dir=tmp_path / "d")
    assert lint_tool(reach.tool("run_command")) == []


def test_a_search_path_or_binary_in_a_writable_root_is_reported(root: Path, tmp_path: Path) -> None:
    tools = tmp_path / "files" / "bin"
    tools.mkdir(parents=True)
    program = tools / "hello"
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o755)
    settings = ShellSettings(root=root, commands={"hello": {}}, search_path=f"{tools}:/usr/bin:/bin")
    tool = RunCommand(settings, writable_roots=[tmp_path / "files"])
    text = " ".join(message for _, message in tool.lint_problems())
    assert "search_path entry" in text and "the binary of `hello`" in text


@pytest.mark.parametrize(
    "key", ["HOME", "TMPDIR", "GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF",
            "LD_PRELOAD", "XDG_CONFIG_HOME", "PAGER", "GIT_PAGER", "EDITOR", "TAR_OPTIONS", "BASH_ENV"]
)
def test_env_cannot_undo_isolation(root: Path, key: str) -> None:
    with pytest.raises(ValueError, match="reach-shell sets these itself"):
        ShellSettings(root=root, commands={"echo": {}}, env={key: "x"})


def test_private_dirs_are_never_inside_a_writable_root(tmp_path: Path, root: Path) -> None:
    import tempfile

    tool = RunCommand(ShellSettings(root=root, commands={"echo": {}}), writable_roots=[Path(tempfile.gettempdir())])
    base = tool.isolation.base
    assert base is not None and not base.is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert not base.is_relative_to(root)


@pytest.mark.parametrize("version", ["git version 2.30.9", "git version 1.8.3.1", "no version here"])
def test_a_git_too_old_for_the_overrides_is_a_config_error(root: Path, tmp_path: Path, version: str) -> None:
    from reach_core import ConfigError

    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho '{version}'\n")
    fake.chmod(0o755)
    with pytest.raises(ConfigError, match="2.31 or later"):
        RunCommand(ShellSettings(root=root, commands={"git": {"path": str(fake)}}))
