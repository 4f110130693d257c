"""The rsync family against the real rsync (the runner attacks use a stub where rsync is missing).

`-e`/`--rsh` is the program rsync runs to reach a `host:path` (its words split by rsync, no
shell needed): `rsync -e "sh -c 'touch M'" a.txt h:x` ran `sh`. The controls prove each spelling
runs the command without reach; through reach each is refused whatever `confine_paths` says,
while local copies (`-a`, `-av`, `--delete`, `--exclude`) still run. Where paths are confined,
rsync's own `--files-from` is refused too (parser level, test_shell_name_lists.py); the real
rsync also strips `..` and `/` from the names in the list, checked here as a control.
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
_RUN = "sh -c 'touch M'"


@pytest.fixture(autouse=True)
def _rsync() -> None:
    if shutil.which("rsync", path=_SEARCH) is None:
        pytest.fail("rsync is not installed on this machine")


_ATTACKS = [
    ["-e", _RUN, "a.txt", "h:x"],
    [f"-e{_RUN}", "a.txt", "h:x"],
    ["-ave", _RUN, "a.txt", "h:x"],
    ["-avze", _RUN, "a.txt", "h:x"],
    ["-a", "-e", _RUN, "a.txt", "h:x"],
    [f"--rsh={_RUN}", "a.txt", "h:x"],
    ["--rsh", _RUN, "a.txt", "h:x"],
    ["-e", _RUN, "h:x", "sub/"],
    ["-e", _RUN, "a.txt", "user@h:x"],
]


def _rsync_run(root: Path, args: list[str]) -> None:
    subprocess.run(["rsync", *args], cwd=root, capture_output=True, timeout=20, check=False,
                   env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args", _ATTACKS)
def test_control_each_spelling_runs_the_command_without_reach(root: Path, args: list[str]) -> None:
    _rsync_run(root, args)
    assert exists(root / "M"), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _ATTACKS)
async def test_real_rsync_runs_no_remote_shell(root: Path, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"rsync": {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "rsync", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(root / "M")


def test_control_real_rsync_strips_climbing_names_from_its_list(root: Path, outside: Path) -> None:
    """What `--files-from` would do unconfined: names are taken below the source folder."""
    (root / "list").write_text("../outside/secret.txt\n")
    _rsync_run(root, ["-r", "--files-from=list", ".", "sub/"])
    assert not any(p.name == "secret.txt" for p in (root / "sub").rglob("*"))


@pytest.mark.parametrize(
    "args",
    [["-a", "a.txt", "sub/"], ["-av", "a.txt", "b.txt", "sub/"], ["-a", "--delete", "sub/", "copy/"],
     ["-a", "--exclude=b.txt", "./", "sub/"]],
)
async def test_real_rsync_still_copies_inside_the_root(root: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"rsync": {}}, timeout=10))
    result = await tool.execute({"command": "rsync", "args": args})
    assert result["exit_code"] == 0, result["stderr"]
