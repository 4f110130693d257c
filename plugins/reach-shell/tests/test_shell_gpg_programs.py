"""Red-team family: gpg starting a helper program the agent names.

gpg starts gpg-agent and dirmngr when it needs them, and the program it starts is an option:
`--agent-program ./x.sh`, `--dirmngr-program`, `--keyboxd-program` (also `=value` and by
unique prefix, `--agent-prog`), or a line of a config file: `--options opts.conf`, or the
`gpg.conf` of a `--homedir` folder in the root (its `gpg-agent.conf` names `pinentry-program`
too). `gpg -c h.txt` with any of them ran the script. Every call below did before the fix (the
controls run each without reach); now each is refused whatever the allow-list says.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import exists

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"
_ENCRYPT = ["-c", "--passphrase", "x", "--yes", "h.txt"]


@pytest.fixture
def armed(root: Path) -> Path:
    """`x.sh` in the root touches `M`; `gh` an empty gpg home, `gh2` a home and `opts.conf` naming `x.sh`."""
    if shutil.which("gpg", path=_SEARCH) is None:
        pytest.fail("gpg is not installed on this machine")
    (root / "x.sh").write_text(f"#!/bin/sh\ntouch {root}/M\n")
    (root / "x.sh").chmod(0o755)
    (root / "h.txt").write_text("hello\n")
    for home in ("gh", "gh2"):
        (root / home).mkdir(mode=0o700)
    (root / "gh2" / "gpg.conf").write_text(f"agent-program {root}/x.sh\n")
    (root / "opts.conf").write_text(f"agent-program {root}/x.sh\n")
    return root / "M"


_ATTACKS = [
    ["--batch", "--homedir", "gh", "--agent-program", "./x.sh", *_ENCRYPT],
    ["--batch", "--homedir", "gh", "--agent-program=./x.sh", *_ENCRYPT],
    ["--batch", "--homedir", "gh", "--agent-prog", "./x.sh", *_ENCRYPT],
    ["--batch", "--homedir", "gh2", *_ENCRYPT],
    ["--batch", "--homedir=gh2", *_ENCRYPT],
    ["--batch", "--homedir", "gh", "--options", "opts.conf", *_ENCRYPT],
    ["--batch", "--homedir", "gh", "--options=opts.conf", *_ENCRYPT],
    ["--batch", "--homedir", "gh", "--dirmngr-program", "./x.sh", "--recv-keys", "0x12345678"],
]


@pytest.mark.parametrize("args", _ATTACKS)
def test_control_each_call_starts_the_script_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    subprocess.run(["gpg", *args], cwd=root, capture_output=True, timeout=30, check=False,
                   env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)
    assert exists(armed), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _ATTACKS)
async def test_gpg_starts_no_program_the_agent_names(root: Path, armed: Path, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"gpg": {}}, timeout=20, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "gpg", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(armed)


async def test_gpg_still_prints_packets(root: Path, armed: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"gpg": {}}, timeout=20))
    result = await tool.execute({"command": "gpg", "args": ["--version"]})
    assert result["exit_code"] == 0 and "gpg" in result["stdout"]
