"""Red-team family: OpenSSH tools loading a PKCS#11 or security-key library the agent names.

The ssh guard refused `-o PKCS11Provider=…` and `SecurityKeyProvider`, but not their own options:
`ssh -I lib.so` and `ssh-keygen -D lib.so` (PKCS#11), `ssh-keygen -w lib.so` (FIDO middleware).
`ssh-keygen -D ./x.so` dlopened a library of the root (OpenSSH only checks that the file holds
the string `C_GetFunctionList`), running its constructor: the control proves it without reach.
`ssh -I` loads it only once a server answers (any host the model names), so it is checked at the
grammar level here with the same spellings.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from reach_shell.argv import ArgvRefused, check_and_parse
from reach_shell.programs import SSH
from reach_shell.settings import CommandRule
from shell_attack import exists

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"
_SOURCE = r"""
#include <stdio.h>
__attribute__((constructor)) static void loaded(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
int C_GetFunctionList(void **list) { return 1; }
"""


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Path:
    """`p11.so` in the root, which writes the returned marker when loaded."""
    compiler = shutil.which("cc", path=_SEARCH) or shutil.which("gcc", path=_SEARCH)
    if compiler is None or shutil.which("ssh-keygen", path=_SEARCH) is None:
        pytest.fail("a C compiler and ssh-keygen are needed on this machine")
    mark = tmp_path / "MARK"
    (tmp_path / "p11.c").write_text(_SOURCE % mark)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(root / "p11.so"), str(tmp_path / "p11.c")], check=True)
    return mark


_KEYGEN = [["-D", "{root}/p11.so"], ["-D{root}/p11.so"], ["-q", "-D", "{root}/p11.so"], ["-qD", "{root}/p11.so"],
           ["-e", "-D", "{root}/p11.so"]]


@pytest.mark.parametrize("args", _KEYGEN)
def test_control_ssh_keygen_loads_the_library_without_reach(root: Path, library: Path, args: list[str]) -> None:
    subprocess.run(["ssh-keygen", *[a.format(root=root) for a in args]], cwd=root, capture_output=True, timeout=20,
                   check=False, env={"PATH": _SEARCH, "HOME": str(root / "sub")}, stdin=subprocess.DEVNULL)
    assert exists(library), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _KEYGEN)
async def test_ssh_keygen_loads_no_library(root: Path, library: Path, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"ssh-keygen": {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "ssh-keygen", "args": [a.format(root=root) for a in args]})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(library)


@pytest.mark.parametrize(
    "args",
    [["-I", "./p11.so", "host"], ["-I./p11.so", "host"], ["-vI", "./p11.so", "host"], ["-4I./p11.so", "host"],
     ["host", "-I", "./p11.so"]],
)
def test_ssh_pkcs11_option_is_refused(args: list[str]) -> None:
    with pytest.raises(ArgvRefused) as refused:
        check_and_parse("ssh", args, CommandRule(), max_arg_chars=4096, max_total_chars=32768, grammar=SSH)
    assert "reach-shell refuses" in refused.value.expected


@pytest.mark.parametrize("args", [["-w", "./p11.so", "-t", "ecdsa-sk"], ["-wp11.so", "-K"]])
async def test_ssh_keygen_security_key_provider_is_refused(root: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"ssh-keygen": {}}, timeout=10))
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": "ssh-keygen", "args": args})


async def test_ssh_keygen_still_makes_keys(root: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"ssh-keygen": {}}, timeout=20))
    result = await tool.execute({"command": "ssh-keygen", "args": ["-q", "-t", "ed25519", "-N", "", "-f", "k"]})
    assert result["exit_code"] == 0, result["stderr"]
    assert (root / "k.pub").exists()
