"""Red-team family: ssh, scp and sftp options that load code, run batch files or open files outside.

Three walk-arounds of the ssh guard, each real:

* `SmartcardDevice` is OpenSSH's alias of `PKCS11Provider`; the guard knew only the latter, so
  `-o SmartcardDevice=./p11.so` (any case, `=` or space, attached, quoted keyword; through scp and
  sftp too) loaded a library of the root, running its code, as soon as a TCP port answered (a
  listener on 127.0.0.1 here; the controls do it without reach). `XAuthLocation` (the xauth
  program run for X11 forwarding) joins the list too.
* sftp's `-b batchfile` runs the batch's `!cmd` lines as local commands and its `put`/`get`
  name local files no check sees; it was not refused (no sftp server on this machine: checked
  through reach, no control).
* while paths are confined, the path check read `-o Key=/x` but not the other spellings ssh
  reads alike: `-o "IdentityFile ../elsewhere/id"`, a quoted value, `Key = value`; ssh read the
  key outside the root (its `-v` log says `identity file … type 3`).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from reach_shell.argv import ArgvRefused, check_and_parse
from reach_shell.paths import check_paths
from reach_shell.programs import SFTP, SSH
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
def port() -> Iterator[str]:
    """A TCP port on 127.0.0.1 that accepts and closes: ssh gets as far as loading its keys."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)  # so the thread sees `stop` soon after the test
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield str(server.getsockname()[1])
    stop.set()
    thread.join(timeout=5)
    server.close()


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Path:
    """`p11.so` in the root, which writes the returned marker (in the root) when loaded."""
    compiler = shutil.which("cc", path=_SEARCH) or shutil.which("gcc", path=_SEARCH)
    if compiler is None or shutil.which("ssh", path=_SEARCH) is None:
        pytest.fail("a C compiler and ssh are needed on this machine")
    mark = root / "LOADED"
    (tmp_path / "p11.c").write_text(_SOURCE % mark)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(root / "p11.so"), str(tmp_path / "p11.c")], check=True)
    return mark


def _loads(port: str) -> list[tuple[str, list[str]]]:
    ssh = ["-o", "BatchMode=yes", "-p", port, "127.0.0.1"]
    return [
        ("ssh", ["-o", "SmartcardDevice=./p11.so", *ssh]),
        ("ssh", ["-oSmartcardDevice=./p11.so", *ssh]),
        ("ssh", ["-o", "smartcarddevice ./p11.so", *ssh]),
        ("ssh", ["-o", "SMARTCARDDEVICE\t./p11.so", *ssh]),
        ("ssh", ["-o", "SmartCardDevice = ./p11.so", *ssh]),
        ("ssh", ["-o", '"SmartcardDevice" ./p11.so', *ssh]),
        ("ssh", ["-vo", "SmartcardDevice=./p11.so", *ssh]),
        ("ssh", ["-qoSmartcardDevice=./p11.so", *ssh]),
        ("scp", ["-o", "BatchMode=yes", "-o", "SmartcardDevice=./p11.so", "-P", port, "a.txt", "127.0.0.1:b"]),
        ("scp", ["-oSmartcardDevice ./p11.so", "-o", "BatchMode=yes", "-P", port, "127.0.0.1:b", "c.txt"]),
        ("sftp", ["-o", "BatchMode=yes", "-o", "smartcardDevice=./p11.so", "-P", port, "127.0.0.1"]),
    ]


def _run(root: Path, command: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([command, *args], cwd=root, capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": _SEARCH, "HOME": str(root / "sub")}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("index", range(11))
def test_control_each_spelling_loads_the_library_without_reach(root: Path, library: Path, port: str,
                                                               index: int) -> None:
    command, args = _loads(port)[index]
    _run(root, command, args)
    assert exists(library), (command, args)


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("index", range(11))
async def test_ssh_scp_sftp_load_no_library(root: Path, library: Path, port: str, index: int, confine: bool) -> None:
    command, args = _loads(port)[index]
    tool = RunCommand(ShellSettings(root=root, commands={command: {}}, timeout=20, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": command, "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(library)


@pytest.mark.parametrize("arg", ["XAuthLocation=./x.sh", "xauthlocation ./x.sh", "-oxauthLocation=x.sh"])
def test_xauth_location_is_refused(arg: str) -> None:
    with pytest.raises(ArgvRefused, match="xauthlocation"):
        check_and_parse("ssh", ["-o", arg, "-X", "host"], CommandRule(), max_arg_chars=4096,
                        max_total_chars=32768, grammar=SSH)


_BATCHES = [["-b", "batch", "host"], ["-bbatch", "host"], ["-qb", "batch", "host"], ["-vqbbatch", "host"],
            ["host", "-b", "batch"], ["--", "-b", "batch", "host"], ["-P", "22", "-b", "batch", "host"],
            ["-b", "-", "host"]]


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _BATCHES)
async def test_sftp_reads_no_batch_file(root: Path, args: list[str], confine: bool) -> None:
    (root / "batch").write_text("!touch MARK\nput ../outside/secret.txt\n")
    tool = RunCommand(ShellSettings(root=root, commands={"sftp": {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "sftp", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(root / "MARK")


def test_sftp_ordinary_options_still_pass_the_check() -> None:
    rule = CommandRule()
    for args in (["-P", "2222", "-o", "BatchMode=yes", "host"], ["-q", "-i", "key", "user@host:dir"]):
        check_and_parse("sftp", args, rule, max_arg_chars=4096, max_total_chars=32768, grammar=SFTP)


@pytest.fixture
def key(outside: Path) -> Path:
    """An ed25519 key beside the root: what a read outside finds."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(outside / "id")], check=True,
                   capture_output=True)
    return outside / "id"


def _reads(key: Path, port: str) -> list[list[str]]:
    rel = "../outside/id"
    lines = [f"IdentityFile {rel}", f"IdentityFile\t{key}", f'IdentityFile "{key}"', f"IdentityFile '{rel}'",
             f'"IdentityFile" {rel}', f"identityfile  =  {rel}", f'IdentityFile="{key}"', f"IDENTITYFILE = '{key}'",
             f"CertificateFile {rel}", f'CertificateFile "{key}.pub"']
    tail = ["-v", "-o", "BatchMode=yes", "-p", port, "127.0.0.1"]
    return [["-o", line, *tail] for line in lines] + [[f"-o{lines[0]}", *tail], ["-vo", lines[3], *tail[1:]]]


@pytest.mark.parametrize("index", range(12))
def test_control_ssh_reads_a_key_outside_without_reach(root: Path, key: Path, port: str, index: int) -> None:
    done = _run(root, "ssh", _reads(key, port)[index])
    assert any(("identity file" in line or "certificate file" in line.lower()) and " type 3" in line
               for line in done.stderr.splitlines()), done.stderr


@pytest.mark.parametrize("index", range(12))
async def test_ssh_reads_no_key_outside(root: Path, key: Path, port: str, index: int) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"ssh": {}}, timeout=20))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "ssh", "args": _reads(key, port)[index]})
    assert "outside the root" in refused.value.message or "reach-shell refuses" in refused.value.message


@pytest.mark.parametrize("line", [
    "UserKnownHostsFile=known /elsewhere/kh", "UserKnownHostsFile known ../elsewhere/kh", 'ControlPath "/tmp/cm"',
    "IdentityAgent /run/user/1000/agent.sock", "GlobalKnownHostsFile '~/kh'", "RevokedHostKeys ../r",
    "IdentityFile \\/etc\\/ssh\\/key",
])
@pytest.mark.parametrize("command", ["ssh", "scp", "sftp"])
def test_every_word_of_an_option_line_is_a_path(root: Path, line: str, command: str) -> None:
    grammar = SFTP if command == "sftp" else SSH
    for args in (["-o", line, "host"], [f"-o{line}", "host"], ["-vo", line, "host"], ["-4o", line, "host"]):
        with pytest.raises(ArgvRefused, match="outside the root|`~`"):
            check_paths(command, args, root, [[root]] * len(args), grammar)


async def test_ssh_option_lines_inside_the_root_still_run(root: Path, port: str) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"ssh": {}}, timeout=20))
    done = await tool.execute({"command": "ssh", "args": [
        "-o", "IdentityFile sub/id", "-o", "UserKnownHostsFile = sub/kh", "-o", "BatchMode yes", "-p", port,
        "127.0.0.1"]})
    assert done["exit_code"] == 255, done  # the listener closes: ssh ran, and said so
    assert f"127.0.0.1 port {port}" in done["stderr"], done


def _tokens(port: str) -> list[list[str]]:
    """`%k` (HostKeyAlias), `%r` (the remote user) and `${HOME}` complete a path outside (`-i` once a
    file named `.%k` exists: ssh checks the name as written, then expands it)."""
    alias = ["-o", "HostKeyAlias=./outside/id"]
    tail = ["-v", "-o", "BatchMode=yes", "-p", port, "127.0.0.1"]
    return [[*args, *tail] for args in (
        ["-o", "IdentityFile .%k", *alias],
        ["-o", "IdentityFile=.%k", "-o", "HostKeyAlias ./outside/id"],
        ["-o", "IdentityFile '.%k'", *alias],
        ["-o", "identityfile = %r%k", "-l", ".", *alias],
        ["-o", "CertificateFile .%k.pub", *alias],
        ["-i", ".%k", *alias],
        ["-vi", ".%k", *alias],
        ["-i.%k", *alias],
        ["-o", "IdentityFile ${HOME}/../../outside/id"],
        ["-o", "IdentityFile \"${HOME}/../../outside/id\""],
    )]


@pytest.mark.parametrize("index", range(10))
def test_control_ssh_tokens_complete_a_path_outside_without_reach(root: Path, key: Path, port: str,
                                                                  index: int) -> None:
    (root / ".%k").write_text("")  # ssh -i wants the file, as written, to exist before it expands it
    done = _run(root, "ssh", _tokens(port)[index])
    assert any("outside/id" in line and " type 3" in line for line in done.stderr.splitlines()), done.stderr


@pytest.mark.parametrize("index", range(10))
async def test_ssh_tokens_are_refused_while_confined(root: Path, key: Path, port: str, index: int) -> None:
    (root / ".%k").write_text("")
    tool = RunCommand(ShellSettings(root=root, commands={"ssh": {}}, timeout=20))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "ssh", "args": _tokens(port)[index]})
    assert "token" in refused.value.message or "reach-shell refuses" in refused.value.message
