"""Red-team families: programs that run programs through their plain arguments or scripts.

The option checks read options; these programs take the program to run elsewhere:

* launchers run their plain arguments (`env X=1 sh -c …`, `xargs sh`, `timeout 5 sh`,
  `nice sh`, …): every plain argument is refused (env: `NAME=value` ones pass);
* sed's `e` command and `s///e` run a shell command, `w`/`r` write and read any file: GNU
  sed runs with `--sandbox` (checked at start-up; a sed without it is a ConfigError);
* awk's `system()`, pipes and `print > file`: gawk runs with `--sandbox`; an awk without it
  (mawk here) has every program text checked;
* gcc/binutils read `@file` as more arguments: refused;
* more program-running long options in programs without a grammar (`split --filter`, …).

Real programs; each attack proves its marker was not created. All failed before the fix.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import exists

from reach_core import ConfigError, InvalidArguments


@pytest.fixture
def mark(tmp_path: Path) -> Path:
    return tmp_path / "MARK"


def _tool(root: Path, **commands: dict) -> RunCommand:
    return RunCommand(ShellSettings(root=root, commands=commands, timeout=5))


async def _refused(tool: RunCommand, command: str, args: list[str], mark: Path) -> InvalidArguments:
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": command, "args": args})
    assert not exists(mark)
    assert "reach-shell refuses" in refused.value.message
    return refused.value


def _launcher_attacks(mark: str) -> list[tuple[str, list[str]]]:
    touch = ["touch", mark]
    return [
        ("env", ["sh", "-c", f"touch {mark}"]),
        ("env", touch),
        ("env", ["FOO=1", *touch]),
        ("env", ["-i", *touch]),
        ("env", ["-", *touch]),
        ("env", ["--", *touch]),
        ("env", ["-u", "HOME", *touch]),
        ("env", ["-uHOME", *touch]),
        ("env", ["--unset=HOME", *touch]),
        ("env", ["-C", ".", *touch]),
        ("env", ["-S", f"touch {mark}"]),
        ("env", [f"-S touch {mark}"]),
        ("env", ["-iS", f"touch {mark}"]),
        ("env", [f"--split-string=touch {mark}"]),
        ("env", [f"--split-s=touch {mark}"]),
        ("env", ["--split-string", f"touch {mark}"]),
        ("env", ["/usr/bin/touch", mark]),
        ("env", ["X=1", "Y=2", "/bin/sh", "-c", f"touch {mark}"]),
        ("xargs", touch),
        ("xargs", ["-a", "a.txt", *touch]),
        ("xargs", ["-I{}", *touch]),
        ("xargs", ["-0", "sh", "-c", f"touch {mark}"]),
        ("xargs", ["--", *touch]),
        ("timeout", ["5", *touch]),
        ("timeout", ["-s", "KILL", "5", *touch]),
        ("timeout", ["--kill-after=1", "5", *touch]),
        ("nice", touch),
        ("nice", ["-n", "5", *touch]),
        ("nohup", touch),
        ("stdbuf", ["-o0", *touch]),
        ("setsid", touch),
        ("flock", ["a.txt", *touch]),
        ("flock", ["a.txt", "-c", f"touch {mark}"]),
        ("ionice", ["-c3", *touch]),
        ("taskset", ["1", *touch]),
        ("chrt", ["-o", "0", *touch]),
        ("prlimit", ["--nofile=64", *touch]),
        ("setpriv", ["--reuid=0", *touch]),
        ("script", ["-q", "-c", f"touch {mark}", "/dev/null"]),
        ("time", touch),
        ("strace", ["-o", "/dev/null", *touch]),
        # GNU gettext runs its arguments for every message of a catalogue (x.po in the root)
        ("msgexec", ["-i", "x.po", *touch]),
        ("msgexec", ["-ix.po", "sh", "-c", f"touch {mark}"]),
        ("msgexec", ["--input=x.po", "--", *touch]),
        ("msgexec", ["--in", "x.po", "/usr/bin/touch", mark]),
        ("msgfilter", ["-i", "x.po", "sh", "-c", f"touch {mark}; cat"]),
        ("msgfilter", ["--input=x.po", "-o", "out.po", "sh", "-c", f"touch {mark}; cat"]),
        ("msgfilter", ["-ix.po", "--keep-header", "sh", "-c", f"touch {mark}; cat"]),
        ("runcon", ["-t", "unconfined_t", *touch]),
    ]


@pytest.mark.parametrize("index", range(len(_launcher_attacks("m"))))
async def test_a_launcher_never_runs_a_program_from_its_arguments(root: Path, mark: Path, index: int) -> None:
    command, args = _launcher_attacks(str(mark))[index]
    if shutil.which(command, path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.fail(f"{command} is not installed on this machine")
    (root / "x.po").write_text('msgid "a"\nmsgstr "b"\n')
    refused = await _refused(_tool(root, **{command: {}}), command, args, mark)
    assert refused.field.startswith("args")


@pytest.mark.parametrize("command", ["msgexec", "msgfilter"])
def test_gettext_runners_run_their_arguments_without_reach(root: Path, mark: Path, command: str) -> None:
    """Control: msgexec and msgfilter really run the command they are given."""
    (root / "x.po").write_text('msgid "a"\nmsgstr "b"\n')
    subprocess.run([command, "-i", "x.po", "sh", "-c", f"touch {mark}; cat"], cwd=root, capture_output=True,
                   check=False, env={"PATH": "/usr/bin:/bin"})
    assert mark.exists()


async def test_a_launcher_under_another_name_is_still_a_launcher(root: Path, tmp_path: Path, mark: Path) -> None:
    """The grammar follows the binary (symlink named `tt` → timeout) or `grammar = "launcher"`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tt").symlink_to(shutil.which("timeout") or "/usr/bin/timeout")
    tool = _tool(root, tt={"path": str(bin_dir / "tt")}, mine={"path": "/usr/bin/nice", "grammar": "launcher"})
    await _refused(tool, "tt", ["5", "touch", str(mark)], mark)
    await _refused(tool, "mine", ["touch", str(mark)], mark)


async def test_launchers_without_a_program_still_work(root: Path) -> None:
    tool = _tool(root, env={}, xargs={})
    out = await tool.execute({"command": "env", "args": ["-i", "A=1", "B=two"]})
    assert out["exit_code"] == 0 and out["stdout"] == "A=1\nB=two\n"
    out = await tool.execute({"command": "env", "args": ["-u", "HOME"]})
    assert out["exit_code"] == 0 and "HOME=" not in out["stdout"]
    out = await tool.execute({"command": "xargs", "args": ["-0"]})
    assert out["exit_code"] == 0


def _sed_attacks(mark: str) -> list[list[str]]:
    return [
        [f"1e touch {mark}", "a.txt"],
        ["-n", f"1e touch {mark}", "a.txt"],
        [f"e touch {mark}", "a.txt"],
        [f"s#alpha#touch {mark}#e", "a.txt"],
        [f"s|.*|touch {mark}|e", "a.txt"],
        [f"s,alpha,touch {mark},ep", "a.txt"],
        [f"s/alpha/x/w {mark}", "a.txt"],
        ["-n", f"w {mark}", "a.txt"],
        ["-n", f"1W {mark}", "a.txt"],
        ["-e", f"1e touch {mark}", "a.txt"],
        [f"--expression=1e touch {mark}", "a.txt"],
        [f"--expr=w {mark}", "a.txt"],
        ["-ne", f"w {mark}", "a.txt"],
        ["-s", "-n", "-e", "p", "-e", f"$w {mark}", "a.txt"],
        ["--posix", f"1e touch {mark}", "a.txt"],
        ["-E", f"s#(alpha)#touch {mark}#e", "a.txt"],
        ["-n", "-e", f"s#alpha#touch {mark}#e", "-e", "p", "a.txt"],
        ["-z", f"1e touch {mark}", "a.txt"],
        ["--debug", f"1e touch {mark}", "a.txt"],
        ["-f", "script.sed", "a.txt"],
        ["--file=script.sed", "a.txt"],
        ["-n", "-f", "write.sed", "a.txt"],
        ["-i", f"1e touch {mark}", "a.txt"],
    ]


@pytest.mark.parametrize("index", range(len(_sed_attacks("m"))))
async def test_sed_never_runs_a_command_or_writes_a_file_named_in_its_script(
    root: Path, mark: Path, index: int
) -> None:
    (root / "script.sed").write_text(f"1e touch {mark}\n")
    (root / "write.sed").write_text(f"w {mark}\n")
    tool = _tool(root, sed={})
    out = await tool.execute({"command": "sed", "args": _sed_attacks(str(mark))[index]})
    assert out["exit_code"] != 0
    assert "sandbox" in out["stderr"] or "unknown" in out["stderr"]
    assert not exists(mark)
    assert (root / "a.txt").read_text() == "alpha\n"


async def test_sed_reading_a_file_outside_through_r_is_refused(root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET\n")
    tool = _tool(root, sed={})
    for script in (f"r {secret}", f"1R {secret}", f"0r {secret}"):
        out = await tool.execute({"command": "sed", "args": [script, "a.txt"]})
        assert "TOP-SECRET" not in out["stdout"] and out["exit_code"] != 0


async def test_ordinary_sed_scripts_still_work(root: Path) -> None:
    tool = _tool(root, sed={})
    out = await tool.execute({"command": "sed", "args": ["s/alpha/ALPHA/", "a.txt"]})
    assert out == {"exit_code": 0, "stdout": "ALPHA\n", "stderr": ""}
    out = await tool.execute({"command": "sed", "args": ["-n", "-e", "1p", "a.txt", "b.txt"]})
    assert out["stdout"] == "alpha\n"


async def test_a_sed_without_sandbox_is_a_config_error(root: Path, tmp_path: Path) -> None:
    fake = tmp_path / "sed"
    fake.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --sandbox ] && exit 1; done\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(ConfigError, match="--sandbox"):
        _tool(root, sed={"path": str(fake)})
    with pytest.raises(ConfigError, match="--sandbox"):
        _tool(root, stream={"path": "/bin/false", "grammar": "sed"})


def _awk_attacks(mark: str) -> list[list[str]]:
    return [
        [f'BEGIN{{system("touch {mark}")}}'],
        [f'BEGIN {{ system ("touch {mark}") }}'],
        [f'BEGIN{{x="touch {mark}"; system(x)}}'],
        [f'{{system("touch {mark}")}}', "a.txt"],
        [f'BEGIN{{sys\\\ntem("touch {mark}")}}'],
        [f'BEGIN{{print "x" | "touch {mark}"}}'],
        [f'BEGIN{{printf "x" | "sh -c \\"touch {mark}\\""}}'],
        [f'BEGIN{{"touch {mark}" | getline x}}'],
        [f'BEGIN{{cmd="touch {mark}"; cmd | getline; close(cmd)}}'],
        [f'BEGIN{{print "x" > "{mark}"}}'],
        [f'BEGIN{{print "x" >> "{mark}"}}'],
        [f'BEGIN{{printf("x") > "{mark}"}}'],
        [f'BEGIN{{f="{mark}"; print 1 > f}}'],
        [f'BEGIN{{print "a;" > "{mark}"}}'],
        [f'BEGIN{{print "}}" > "{mark}"}}'],
        [f'BEGIN{{print /;/ > "{mark}"}}'],
        [f'BEGIN{{print "a",\n"b" > "{mark}"}}'],
        [f'BEGIN{{print "a" ; }}\nEND{{ printf "x" >> "{mark}" }}'],
        [f'BEGIN{{print 1/2 > substr("{mark}Z", 1, {len(mark)} + 0 / 1)}}'],
        [f'BEGIN{{printf("%s", "x") >"{mark}"}}'],
        ["-F:", f'{{system("touch {mark}")}}', "a.txt"],
        ["-v", "x=1", f'BEGIN{{system("touch {mark}")}}'],
        ["-vx=1", f'BEGIN{{system("touch {mark}")}}'],
        ["--", f'BEGIN{{system("touch {mark}")}}'],
        ["-f", "prog.awk"],
        ["-fprog.awk"],
        ["--file=prog.awk"],
        ["-W", "exec", "prog.awk"],
        ["-Wexec", "prog.awk"],
        ["-We", "prog.awk"],
        ["-E", "prog.awk"],
        ["--exec=prog.awk"],
        ["-e", f'BEGIN{{system("touch {mark}")}}'],
        [f'-eBEGIN{{system("touch {mark}")}}'],
        [f'--source=BEGIN{{system("touch {mark}")}}'],
    ]


@pytest.mark.parametrize("index", range(len(_awk_attacks("m"))))
async def test_awk_never_runs_a_command_or_writes_a_file(root: Path, mark: Path, index: int) -> None:
    (root / "prog.awk").write_text(f'BEGIN{{system("touch {mark}")}}\n')
    tool = _tool(root, awk={})
    await _refused(tool, "awk", _awk_attacks(str(mark))[index], mark)


async def test_ordinary_awk_programs_still_work(root: Path) -> None:
    (root / "t.csv").write_text("a|1\nb|2\n")
    tool = _tool(root, awk={})
    out = await tool.execute({"command": "awk", "args": ["{print $1}", "a.txt", "b.txt"]})
    assert out["stdout"] == "alpha\nbeta\n"
    out = await tool.execute({"command": "awk", "args": ["-F|", "$2 > 1 {print $1}", "t.csv"]})
    assert out["stdout"] == "b\n"
    out = await tool.execute({"command": "awk", "args": ["-v", "sep=|", "NR == 1 || NR == 2 {print NR sep}", "t.csv"]})
    assert out["stdout"] == "1|\n2|\n"
    out = await tool.execute({"command": "awk", "args": ["-F|", "{ if (m < $2) m = $2 } END { print m }", "t.csv"]})
    assert out["stdout"] == "2\n"


async def test_an_awk_with_sandbox_gets_it_first(root: Path, tmp_path: Path) -> None:
    """gawk accepts --sandbox (system, pipes, redirections, extensions off): it is put first."""
    fake = tmp_path / "gawk"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    tool = _tool(root, gawk={"path": str(fake)})
    out = await tool.execute({"command": "gawk", "args": ["{print $1}", "a.txt"]})
    assert out["stdout"].splitlines() == ["--sandbox", "{print $1}", "a.txt"]


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("strings", ["@opts.rsp"]),
        ("strings", ["a.txt", "@opts.rsp"]),
        ("objdump", ["@opts.rsp"]),
        ("nm", ["@/etc/passwd"]),
        ("readelf", ["-a", "@sub/x"]),
        ("gcc", ["@opts.rsp"]),
    ],
)
async def test_response_files_are_refused(root: Path, mark: Path, command: str, args: list[str]) -> None:
    (root / "opts.rsp").write_text("--help\n")
    if shutil.which(command, path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.fail(f"{command} is not installed on this machine")
    refused = await _refused(_tool(root, **{command: {}}), command, args, mark)
    assert "response file" in refused.message


async def test_an_at_sign_is_still_text_for_other_programs(root: Path) -> None:
    (root / "m.txt").write_text("ada@example.org\n")
    out = await _tool(root, grep={}, strings={}).execute({"command": "grep", "args": ["@example", "m.txt"]})
    assert out["stdout"] == "ada@example.org\n"
    out = await _tool(root, strings={}).execute({"command": "strings", "args": ["@"]})
    assert "reach-shell" not in out["stderr"]


@pytest.mark.parametrize(
    "args",
    [
        ["--filter=touch MARK", "a.txt"],
        ["--filter", "touch MARK", "a.txt"],
        ["--filt=touch MARK", "a.txt"],
        ["--fil=touch MARK", "a.txt"],
        ["-n2", "--filter=sh -c 'touch MARK'", "a.txt"],
        ["--", "--filter=touch MARK", "a.txt"],
    ],
)
async def test_split_filter_is_refused(root: Path, args: list[str]) -> None:
    mark = root / "MARK"
    await _refused(_tool(root, split={}), "split", args, mark)
    assert sorted(os.listdir(root)) == ["a.txt", "b.txt", "sub"]


async def test_filter_is_still_an_option_of_other_programs(root: Path) -> None:
    out = await _tool(root, echo={}).execute({"command": "echo", "args": ["--filter=status=running"]})
    assert out["stdout"] == "--filter=status=running\n"


@pytest.mark.parametrize("option", ["--pre=sh", "--pre", "--unzip-command=sh", "--unzip-c=sh", "--use-askpass=sh",
                                    "--use-ask=sh", "--pager=sh", "--pag=sh"])
async def test_more_program_running_options_are_refused_in_any_program(root: Path, option: str) -> None:
    with pytest.raises(InvalidArguments, match="does not run other programs"):
        await _tool(root, echo={}).execute({"command": "echo", "args": [option, "x"]})


def _stub(tmp_path: Path, name: str) -> Path:
    """A program named like the real one that prints its arguments (rsync is not installed)."""
    bin_dir = tmp_path / "stubs"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / name
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    return stub


@pytest.mark.parametrize(
    "args",
    [
        ["-e", "sh -c 'touch MARK'", "a.txt", "host:x"],
        ["-esh", "a.txt", "host:x"],
        ["-avze", "sh", "a.txt", "host:x"],
        ["-ave", "sh", "a.txt", "host:x"],
        ["--rsh=sh", "a.txt", "host:x"],
        ["--rsh", "sh", "a.txt", "host:x"],
        ["--rs=sh", "a.txt", "host:x"],
        ["--rsync-path=touch MARK", "a.txt", "host:x"],
        ["--rsync-p=touch MARK", "a.txt", "host:x"],
        ["--daemon", "--config=evil.conf"],
        ["--config=evil.conf"],
        ["--", "-e", "sh", "a.txt", "host:x"],
    ],
)
async def test_rsync_remote_shell_and_daemon_are_refused(root: Path, tmp_path: Path, args: list[str]) -> None:
    tool = _tool(root, rsync={"path": str(_stub(tmp_path, "rsync"))})
    with pytest.raises(InvalidArguments, match="reach-shell refuses"):
        await tool.execute({"command": "rsync", "args": args})


async def test_rsync_ordinary_copies_still_pass(root: Path, tmp_path: Path) -> None:
    tool = _tool(root, rsync={"path": str(_stub(tmp_path, "rsync"))})
    out = await tool.execute({"command": "rsync", "args": ["-avz", "--delete", "--filter=- *.o", "a.txt", "sub/"]})
    assert out["stdout"].splitlines() == ["-avz", "--delete", "--filter=- *.o", "a.txt", "sub/"]


@pytest.mark.parametrize(
    "args",
    [
        ["-T", "-TT", "touch MARK", "x.zip"],
        ["-T", "-TTtouch MARK", "x.zip"],
        ["-T", "-TT=touch MARK", "x.zip"],
        ["-T", "--unzip-command=touch MARK", "x.zip"],
        ["-T", "--unzip-c", "touch MARK", "x.zip"],
    ],
)
async def test_zip_test_command_is_refused(root: Path, args: list[str]) -> None:
    tool = _tool(root, zip={})
    await _refused(tool, "zip", args, root / "MARK")
    assert not exists(root / "x.zip")


@pytest.mark.parametrize(
    "cwd",
    ["a" * 256, "a" * 5000, "/".join(["d"] * 3000), "sub/" + "x" * 300, "loop", "loop/x", "ring1", "out",
     "out/..", "sub/../..", "/", "/etc", "\\..\\..", "sub\x00", "a.txt"],
)
async def test_a_bad_cwd_is_an_invalid_argument_never_an_internal_error(root: Path, tmp_path: Path, cwd: str) -> None:
    (root / "loop").symlink_to("loop")
    (root / "ring1").symlink_to("ring2")
    (root / "ring2").symlink_to("ring1")
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(InvalidArguments) as refused:
        await _tool(root, pwd={}).execute({"command": "pwd", "args": [], "cwd": cwd})
    assert refused.value.field == "cwd"


@pytest.mark.parametrize(
    "args",
    [
        ["-e", "use_askpass=ASKPASS", "http://127.0.0.1:9/"],
        ["-euse_askpass=ASKPASS", "http://127.0.0.1:9/"],
        ["-qe", "use_askpass=ASKPASS", "http://127.0.0.1:9/"],
        ["--execute=use_askpass=ASKPASS", "http://127.0.0.1:9/"],
        ["--execute", "use_askpass=ASKPASS", "http://127.0.0.1:9/"],
        ["--exec=use_askpass=ASKPASS", "http://127.0.0.1:9/"],
        ["--config=wgetrc", "http://127.0.0.1:9/"],
        ["--conf=wgetrc", "http://127.0.0.1:9/"],
        ["--use-askpass=ASKPASS", "http://127.0.0.1:9/"],
    ],
)
async def test_wget_never_runs_an_askpass_program(root: Path, tmp_path: Path, mark: Path, args: list[str]) -> None:
    askpass = tmp_path / "askpass.sh"
    askpass.write_text(f"#!/bin/sh\ntouch {mark}\necho x\n")
    askpass.chmod(0o755)
    (root / "wgetrc").write_text(f"use_askpass = {askpass}\n")
    args = [a.replace("ASKPASS", str(askpass)) for a in args]
    await _refused(_tool(root, wget={}), "wget", args, mark)


def _ssh_attacks(mark: str, prog: str) -> list[tuple[str, list[str]]]:
    return [
        ("ssh", ["-o", f"ProxyCommand=touch {mark}", "host"]),
        ("ssh", [f"-oProxyCommand=touch {mark}", "host"]),
        ("ssh", ["-o", f"ProxyCommand touch {mark}", "host"]),
        ("ssh", ["-o", f"proxycommand=touch {mark}", "host"]),
        ("ssh", ["-o", f"Proxy Command=touch {mark}", "host"]),
        ("ssh", ["-o", f"PROXYCOMMAND\t touch {mark}", "host"]),
        ("ssh", ["-v", "-o", f"ProxyCommand={prog}", "host"]),
        ("ssh", ["-o", "PermitLocalCommand=yes", "-o", f"LocalCommand=touch {mark}", "host"]),
        ("ssh", ["-o", f"KnownHostsCommand=touch {mark}", "host"]),
        ("ssh", ["-o", "Include=evil_config", "host"]),
        ("ssh", ["-o", "PKCS11Provider=./evil.so", "host"]),
        ("ssh", ["-F", "evil_config", "host"]),
        ("ssh", ["-Fevil_config", "host"]),
        ("ssh", ["-vF", "evil_config", "host"]),
        ("ssh", ["--", "-F", "evil_config", "host"]),
        ("scp", ["-S", prog, "a.txt", "host:b"]),
        ("scp", [f"-S{prog}", "a.txt", "host:b"]),
        ("scp", ["-qS", prog, "a.txt", "host:b"]),
        ("scp", ["-o", f"ProxyCommand=touch {mark}", "a.txt", "host:b"]),
        ("scp", ["-F", "evil_config", "a.txt", "host:b"]),
        ("sftp", ["-S", prog, "host"]),
        ("sftp", ["-D", prog]),
        ("sftp", [f"-D{prog}"]),
        ("sftp", ["-o", f"ProxyCommand=touch {mark}", "host"]),
    ]


@pytest.mark.parametrize("index", range(len(_ssh_attacks("m", "p"))))
async def test_ssh_family_never_runs_a_local_program(root: Path, tmp_path: Path, mark: Path, index: int) -> None:
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {mark}\n")
    prog.chmod(0o755)
    (root / "evil_config").write_text(f"Host *\n  ProxyCommand touch {mark}\n")
    command, args = _ssh_attacks(str(mark), str(prog))[index]
    if shutil.which(command, path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.fail(f"{command} is not installed on this machine")
    await _refused(_tool(root, **{command: {}}), command, args, mark)


async def test_ssh_ordinary_options_still_pass_the_check(root: Path) -> None:
    tool = _tool(root, ssh={"timeout": 3})
    out = await tool.execute({"command": "ssh", "args": ["-V"]})
    assert "OpenSSH" in out["stderr"]
    out = await tool.execute(
        {"command": "ssh", "args": ["-o", "BatchMode=yes", "-o", "ConnectTimeout=1", "-p", "9", "127.0.0.1", "true"]}
    )
    assert out["exit_code"] != 0 and "reach-shell" not in out["stderr"]
