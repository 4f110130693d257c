"""Red-team family: the agent's ssh read the host user's ~/.ssh and /etc/ssh/ssh_config.

reach-shell gives every call an empty private HOME, but OpenSSH takes its home folder from the
password database (getpwuid), not from HOME: ssh, scp, sftp, and the ssh that git and rsync
start, read the host user's ~/.ssh/config (ProxyCommand, LocalCommand, Include), offered the
default keys ~/.ssh/id_*, and looked up (and, with `accept-new`, wrote) ~/.ssh/known_hosts.
Real OpenSSH tells what it reads: `ssh -G` prints the effective config, and `-v` logs each config
file it reads and each identity file it tries (a listener on 127.0.0.1 accepts and closes, so
ssh gets as far as its keys). Every call now reads a config file of its own (`-F`), unless the
operator sets `ssh_host_config`.
"""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from reach_shell import RunCommand

from reach_core import ConfigError

HOST_HOME = pwd.getpwuid(os.getuid()).pw_dir
HOST_SSH = os.path.join(HOST_HOME, ".ssh")
_SEARCH = "/usr/local/bin:/usr/bin:/bin"


def run(tool: RunCommand, command: str, *args: str, cwd: str | None = None) -> dict[str, Any]:
    import asyncio

    params: dict[str, Any] = {"command": command, "args": list(args)}
    if cwd:
        params["cwd"] = cwd
    return asyncio.run(tool.execute(params))


@pytest.fixture
def port() -> Iterator[str]:
    """A TCP port on 127.0.0.1 that accepts and closes: ssh gets as far as loading its keys."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
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
def verbose_path(tmp_path: Path) -> str:
    """A search path whose `ssh` is the real one with `-v` first: what git and rsync start logs what it
    reads. (scp and sftp run /usr/bin/ssh by its compiled-in path; their own `-v` is passed on.)"""
    bin_dir = tmp_path / "vbin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    wrapper.write_text('#!/bin/sh\nexec /usr/bin/ssh -v "$@"\n')
    wrapper.chmod(0o755)
    return f"{bin_dir}:{_SEARCH}"


def host_files_read(text: str) -> list[str]:
    """The lines of ssh's -v log (or -G output) naming a file of the host user's or the system config."""
    return [
        line for line in text.splitlines()
        if HOST_SSH in line or "Reading configuration data /etc/ssh/ssh_config" in line
    ]


def own_config_read(text: str) -> bool:
    return any(line.startswith("debug1: Reading configuration data") and line.endswith("/ssh_config")
               and "/etc/ssh/" not in line for line in text.splitlines())


# ---- ssh -G: the effective config of the agent's ssh ----------------------------------------------------

G_VARIANTS = [
    ("plain", ["-G", "example.org"]),
    ("user@host", ["-G", "git@example.org"]),
    ("port", ["-G", "-p", "2222", "example.org"]),
    ("-l user", ["-G", "-l", "deploy", "example.org"]),
    ("ssh:// URI", ["-G", "ssh://deploy@example.org:2200"]),
    ("bundled -vG", ["-vG", "example.org"]),
    ("-4 first", ["-4", "-G", "example.org"]),
    ("-o StrictHostKeyChecking", ["-G", "-o", "StrictHostKeyChecking=accept-new", "example.org"]),
    ("-o User", ["-G", "-o", "User=root", "example.org"]),
    ("host 127.0.0.1", ["-G", "127.0.0.1"]),
    ("unicode host", ["-G", "ex\u00e4mple.org"]),
    ("uppercase host", ["-G", "EXAMPLE.ORG"]),
]


@pytest.mark.parametrize(("label", "args"), G_VARIANTS, ids=[v[0] for v in G_VARIANTS])
def test_ssh_effective_config_names_no_host_file(make_tool: Callable[..., RunCommand], label: str,
                                                 args: list[str]) -> None:
    out = run(make_tool(ssh={}), "ssh", *args)
    text = out["stdout"] + out["stderr"]
    assert out["exit_code"] == 0, text
    assert host_files_read(text) == [], label
    settings = dict(line.split(" ", 1) for line in out["stdout"].splitlines() if " " in line)
    assert settings["identityagent"] == "none"
    assert settings["identityfile"] == "none"  # no default ~/.ssh/id_* key
    known = settings["userknownhostsfile"]  # the call's empty, read-only HOME
    assert known.endswith("/home/known_hosts") and not known.startswith(HOST_SSH), known
    assert settings["batchmode"] == "yes"
    assert "proxycommand" not in settings


def test_a_key_the_agent_names_in_the_root_still_works(make_tool: Callable[..., RunCommand], root: Path,
                                                       port: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / "id")], check=True)
    out = run(make_tool(ssh={}), "ssh", "-v", "-i", "id", "-p", port, "127.0.0.1")
    tried = [line for line in out["stderr"].splitlines() if line.startswith("debug1: identity file ")]
    assert tried and all(line.startswith("debug1: identity file id") for line in tried), out["stderr"]
    assert "type 3" in tried[0]  # ed25519, read


# ---- ssh, scp, sftp -v against a listener: the files they read and the keys they try ------------------

def _direct(port: str) -> list[tuple[str, str, list[str]]]:
    return [
        ("ssh", "ssh", ["-v", "-p", port, "127.0.0.1", "true"]),
        ("ssh -vvv", "ssh", ["-vvv", "-p", port, "127.0.0.1"]),
        ("ssh -o Port", "ssh", ["-v", "-o", "Port=" + port, "127.0.0.1"]),
        ("ssh ssh://", "ssh", ["-v", f"ssh://u@127.0.0.1:{port}"]),
        ("ssh -l", "ssh", ["-v", "-l", "git", "-p", port, "127.0.0.1"]),
        ("ssh -N", "ssh", ["-v", "-N", "-p", port, "127.0.0.1"]),
        ("ssh -T", "ssh", ["-vT", "-p", port, "localhost"]),
        ("scp upload", "scp", ["-v", "-P", port, "a.txt", "127.0.0.1:x"]),
        ("scp download", "scp", ["-v", "-P", port, "127.0.0.1:x", "sub/"]),
        ("scp -O legacy", "scp", ["-v", "-O", "-P", port, "a.txt", "u@127.0.0.1:x"]),
        ("scp scp://", "scp", ["-v", "a.txt", f"scp://127.0.0.1:{port}/x"]),
        ("sftp", "sftp", ["-v", "-P", port, "127.0.0.1"]),
        ("sftp sftp://", "sftp", ["-v", f"sftp://u@127.0.0.1:{port}/x"]),
        ("sftp -o Port", "sftp", ["-v", "-o", "Port " + port, "127.0.0.1"]),
    ]


@pytest.mark.parametrize("index", range(14))
def test_ssh_scp_sftp_read_no_host_file(make_tool: Callable[..., RunCommand], port: str, index: int) -> None:
    label, command, args = _direct(port)[index]
    out = run(make_tool(**{command: {}}), command, *args)
    log = out["stderr"]
    assert "debug1:" in log, log  # ssh logged what it read
    assert host_files_read(log) == [], label
    assert own_config_read(log), log


# ---- the ssh git and rsync start -------------------------------------------------------------------------

def _git_variants(port: str) -> list[tuple[str, list[str]]]:
    return [
        ("ls-remote ssh://", ["ls-remote", f"ssh://127.0.0.1:{port}/x.git"]),
        ("ls-remote user@", ["ls-remote", f"ssh://git@127.0.0.1:{port}/x.git"]),
        ("ls-remote git+ssh://", ["ls-remote", f"git+ssh://127.0.0.1:{port}/x.git"]),
        ("ls-remote ssh+git://", ["ls-remote", f"ssh+git://127.0.0.1:{port}/x.git"]),
        ("ls-remote scp-like host:path (port 22)", ["ls-remote", "127.0.0.1:x.git"]),
        ("clone", ["clone", f"ssh://127.0.0.1:{port}/x.git", "cl"]),
        ("fetch named remote", ["fetch", "origin"]),
        ("pull named remote", ["pull", "origin"]),
        ("push named remote", ["push", "--delete", "origin", "gone"]),
        ("remote show", ["remote", "show", "origin"]),
        ("fetch insteadOf", ["fetch", "short:x.git"]),
        ("fetch with repo core.sshCommand", ["fetch", "armed"]),
    ]


@pytest.fixture
def repo(root: Path, port: str) -> Path:
    """A repository in the root with ssh remotes; one remote set up as the agent could (repo config)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    config = root / ".git" / "config"
    with config.open("a") as handle:
        handle.write(f'[remote "origin"]\n\turl = ssh://127.0.0.1:{port}/x.git\n')
        handle.write(f'[url "ssh://127.0.0.1:{port}/"]\n\tinsteadOf = short:\n')
        handle.write(f'[remote "armed"]\n\turl = ssh://127.0.0.1:{port}/y.git\n')
        handle.write("[core]\n\tsshCommand = ssh -o IdentitiesOnly=no\n")
    return root


@pytest.mark.parametrize("index", range(12))
def test_git_over_ssh_reads_no_host_file(make_tool: Callable[..., RunCommand], repo: Path, port: str,
                                         verbose_path: str, index: int) -> None:
    label, args = _git_variants(port)[index]
    out = run(make_tool(git={}, search_path=verbose_path), "git", *args)
    log = out["stderr"]
    assert "debug1:" in log, log
    assert host_files_read(log) == [], label
    assert own_config_read(log), log


RSYNC_VARIANTS = [
    ("upload", ["a.txt", "127.0.0.1:x"]),
    ("download", ["127.0.0.1:x", "sub/"]),
    ("user@host", ["a.txt", "u@127.0.0.1:x"]),
    ("archive", ["-a", "sub", "127.0.0.1:x"]),
    ("bundled -avz", ["-avz", "a.txt", "localhost:x"]),
    ("double colon is the daemon, single is ssh", ["b.txt", "localhost:"]),
]


@pytest.mark.parametrize(("label", "args"), RSYNC_VARIANTS, ids=[v[0] for v in RSYNC_VARIANTS])
def test_rsync_over_ssh_reads_no_host_file(make_tool: Callable[..., RunCommand], verbose_path: str,
                                           label: str, args: list[str]) -> None:
    out = run(make_tool(rsync={}, search_path=verbose_path), "rsync", *args)
    log = out["stderr"]
    assert "debug1:" in log, log
    assert host_files_read(log) == [], label
    assert own_config_read(log), log


# ---- the operator's switch, and what the operator may not set ------------------------------------------

def test_operator_may_let_ssh_read_the_host_config(make_tool: Callable[..., RunCommand]) -> None:
    out = run(make_tool(ssh={}, ssh_host_config=True), "ssh", "-G", "example.org")
    assert f"userknownhostsfile {HOST_SSH}/known_hosts" in out["stdout"]


def test_rsync_rsh_is_not_the_operators_to_set(make_tool: Callable[..., RunCommand]) -> None:
    with pytest.raises((ConfigError, ValueError), match="RSYNC_RSH"):
        make_tool(rsync={}, env={"RSYNC_RSH": "ssh -F /root/.ssh/config"})


def test_the_config_left_changed_is_not_reused(make_tool: Callable[..., RunCommand]) -> None:
    tool = make_tool(ssh={})
    first = run(tool, "ssh", "-G", "h")["stdout"]
    with tool.isolation.dirs() as dirs:
        dirs.ssh_config.chmod(0o600)
        dirs.ssh_config.write_text("ProxyCommand sh -c 'touch /tmp/x'\n")
        dirs.ssh_config.chmod(0o400)
    assert all(not run(tool, "ssh", "-G", "h")["stdout"].count("proxycommand") for _ in range(3))
    assert "identityagent none" in first
