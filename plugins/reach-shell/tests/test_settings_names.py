"""Command names are checked to their last character: a trailing newline (which `$`
lets through) or any other odd character is refused when the settings load."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from reach_shell.settings import ShellSettings

BAD = ["ls\n", "ls\r\n", "ls\n\n", "ls\x00", "ls ", " ls", "l s", "ls\t", "\nls", "ls\u2028", "/bin/ls", "../ls",
       "", "-ls", "ls;id", "ls\u200b"]


@pytest.mark.parametrize("name", BAD)
def test_odd_command_names_are_refused(name: str, tmp_path) -> None:
    with pytest.raises(ValidationError, match="command name"):
        ShellSettings.model_validate({"root": str(tmp_path), "commands": {name: {}}})


@pytest.mark.parametrize("name", ["ls", "git", "python3.11", "g++", "x_y-z"])
def test_bare_program_names_load(name: str, tmp_path) -> None:
    assert list(ShellSettings.model_validate({"root": str(tmp_path), "commands": {name: {}}}).commands) == [name]
