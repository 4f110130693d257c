"""Arguments that name paths outside the root (`confine_paths`, on by default).

Before it, `cwd` was confined but arguments were not: `cat /etc/passwd`, `cat ../x`,
`grep -f/etc/x`, `sort --output=../x`, `cat link/x` through a link an allowed `ln`
made, `git -C ..` all reached outside the root. Each family below runs real programs
and proves the call was refused naming the argument, nothing outside the root was read
(no secret in any answer) or written, and that honest calls inside the root still work.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, make_archive, make_repo, snapshot

from reach_core import InvalidArguments, Reach


def tool(root: Path, **extra: Any) -> RunCommand:
    commands = {"cat": {}, "grep": {}, "sort": {}, "ls": {}, "ln": {}, "head": {}, "tar": {}, "dd": {}, "touch": {}}
    commands.update(extra.pop("commands", {}))
    return RunCommand(ShellSettings(root=root, commands=commands, timeout=10, **extra))


def _spell(text: str, outside: Path) -> str:
    return text.replace("{out}", str(outside)).replace("{name}", outside.name)


#: (command, args): each names a path outside the root; `{out}` is the outside folder.
READS = [
    ("cat", ["{out}/secret.txt"]),
    ("cat", ["/etc/passwd"]),
    ("cat", ["/etc/shadow"]),
    ("cat", ["//etc/passwd"]),
    ("cat", ["/./etc/../etc/passwd"]),
    ("cat", ["/ETC/passwd"]),
    ("cat", ["/proc/self/root/etc/passwd"]),
    ("cat", ["/proc/self/cwd/../{name}/secret.txt"]),
    ("cat", ["/proc/self/environ"]),
    ("cat", ["/dev/tcp/127.0.0.1/9"]),
    ("cat", ["../{name}/secret.txt"]),
    ("cat", ["./../{name}/secret.txt"]),
    ("cat", ["sub/../../{name}/secret.txt"]),
    ("cat", ["sub/./.././../{name}/secret.txt"]),
    ("cat", ["sub//..//..//{name}//secret.txt"]),
    ("cat", ["a.txt", "../{name}/secret.txt"]),
    ("cat", ["--", "../{name}/secret.txt"]),
    ("cat", ["~"]),
    ("cat", ["~/.bashrc"]),
    ("cat", ["~root/.bashrc"]),
    ("cat", ["file:///etc/passwd"]),
    ("cat", ["FILE://localhost/etc/passwd"]),
    ("cat", ["file:../{name}/secret.txt"]),
    ("cat", ["@/etc/passwd"]),
    ("grep", ["-f/etc/passwd", "a.txt"]),
    ("grep", ["-f", "../{name}/secret.txt", "a.txt"]),
    ("grep", ["--file=../{name}/secret.txt", "a.txt"]),
    ("grep", ["--file={out}/secret.txt", "a.txt"]),
    ("grep", ["-rf{out}/secret.txt", "a.txt"]),
    ("grep", ["-r", "TOP", ".."]),
    ("grep", ["-r", "TOP", "/"]),
    ("head", ["-c100", "{out}/secret.txt"]),
    ("dd", ["if={out}/secret.txt"]),
    ("dd", ["if=../{name}/secret.txt"]),
    ("grep", ["--file=a.txt,/etc/passwd", "a.txt"]),
    ("grep", ["--include=x:/etc/passwd", "TOP", "a.txt"]),
    ("cat", ["a.txt,../{name}/secret.txt"]),
    ("cat", ["PATH=/usr/bin:~/bin"]),
    ("ls", ["-la", ".."]),
    ("ls", ["/"]),
    ("tar", ["-C", "..", "-cf", "x.tar", "{name}"]),
    ("tar", ["-C/", "-tf", "x.tar"]),
    ("tar", ["--directory=..", "-cf", "x.tar", "{name}"]),
    ("tar", ["-cf", "x.tar", "../{name}"]),
]


@pytest.mark.parametrize("command,args", READS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(READS)])
async def test_arguments_naming_paths_outside_the_root_are_refused(root, outside, command, args) -> None:
    args = [_spell(a, outside) for a in args]
    before = snapshot(root.parent, root)
    with pytest.raises(InvalidArguments) as refused:
        await tool(root).execute({"command": command, "args": args})
    message = refused.value.message
    assert refused.value.field.startswith("args[") and "confine_paths" in message
    bad = int(refused.value.field[5:-1])
    assert args[bad][:80] in message  # names the argument
    assert SECRET not in message
    assert snapshot(root.parent, root) == before
    assert not (root / "x.tar").exists()


WRITES = [
    ("sort", ["-o", "{out}/written", "a.txt"]),
    ("sort", ["-o{out}/written", "a.txt"]),
    ("sort", ["--output=../{name}/written", "a.txt"]),
    ("sort", ["--outp=../{name}/written", "a.txt"]),
    ("dd", ["if=a.txt", "of=../{name}/written"]),
    ("touch", ["../{name}/written"]),
    ("touch", ["{out}/written"]),
    ("tar", ["-xf", "a.tar", "-C", "../{name}"]),
    ("ln", ["-s", "{out}", "link"]),
    ("ln", ["-s", "../{name}", "link"]),
    ("ln", ["-s", "/", "rootlink"]),
]


@pytest.mark.parametrize("command,args", WRITES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(WRITES)])
async def test_writes_outside_the_root_are_refused(root, outside, command, args) -> None:
    make_archive(root)
    args = [_spell(a, outside) for a in args]
    before = snapshot(root.parent, root)
    with pytest.raises(InvalidArguments, match="confine_paths"):
        await tool(root).execute({"command": command, "args": args})
    assert snapshot(root.parent, root) == before
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert not (root / "link").exists() and not (root / "rootlink").exists()


@pytest.mark.parametrize("link_to", ["dir", "file", "root-of-fs"])
@pytest.mark.parametrize("spelling", ["{link}", "{link}/secret.txt", "sub/../{link}/secret.txt", "./{link}//secret.txt",
                                      "--file={link}/secret.txt", "-f{link}/secret.txt"])
async def test_a_symbolic_link_leading_out_is_not_followed(root, outside, link_to, spelling) -> None:
    """The link was made earlier (an allowed `ln`, reach-files, a checked-out repository)."""
    target = {"dir": outside, "file": outside / "secret.txt", "root-of-fs": Path("/")}[link_to]
    (root / "lnk").symlink_to(target)
    arg = spelling.format(link="lnk")
    if link_to == "file":
        arg = arg.replace("lnk/secret.txt", "lnk")
    command = "grep" if arg.startswith("-") else "cat"
    args = [arg, "a.txt"] if command == "grep" else [arg]
    with pytest.raises(InvalidArguments, match="symbolic link|outside the root"):
        await tool(root).execute({"command": command, "args": args})


async def test_a_link_leading_out_is_refused_from_a_sub_directory_too(root, outside) -> None:
    (root / "lnk").symlink_to(outside)
    for args in (["../lnk/secret.txt"], ["../lnk"], ["../sub/../lnk/secret.txt"]):
        with pytest.raises(InvalidArguments, match="confine_paths"):
            await tool(root).execute({"command": "cat", "args": args, "cwd": "sub"})


async def test_a_link_climbing_out_from_where_it_sits_cannot_be_used_to_leave(root, outside) -> None:
    """A link in `sub` pointing at `../..` (made by reach-files, a tar member, a checkout):
    every path through it is refused; `ln -s .. sub/up` itself is refused as written (its
    target read from the working directory climbs out: an over-read, see the docs)."""
    t = tool(root)
    with pytest.raises(InvalidArguments, match="confine_paths"):
        await t.execute({"command": "ln", "args": ["-s", "..", "sub/up"]})
    (root / "sub" / "up2").symlink_to("../..")
    for args in (["sub/up2/" + outside.name + "/secret.txt"], ["sub/up2"], ["--", "sub/up2/x"],
                 ["sub/../sub/up2/" + outside.name + "/secret.txt"]):
        with pytest.raises(InvalidArguments, match="confine_paths"):
            await t.execute({"command": "cat", "args": args})
    (root / "sub" / "alias").symlink_to("../a.txt")  # a link that stays inside is fine
    done = await t.execute({"command": "cat", "args": ["sub/alias"]})
    assert done["stdout"] == "alpha\n"


@pytest.mark.parametrize("args", [
    ["-C", "..", "status"],
    ["-C", "sub", "-C", "../..", "status"],
    ["-C", "sub", "--work-tree=../..", "status"],
    ["--work-tree=..", "-C", "sub", "status"],
    ["log", "--output=../x"],
    ["show", "HEAD", "--", "../x"],
])
async def test_git_paths_leading_out_are_refused(root, outside, args) -> None:
    make_repo(root)
    (root / "sub").mkdir(exist_ok=True)
    git = RunCommand(ShellSettings(root=root, commands={"git": {"subcommands": ["status", "log", "show"]}}))
    with pytest.raises(InvalidArguments, match="confine_paths"):
        await git.execute({"command": "git", "args": args})


#: Look-alikes and encodings are not paths to the kernel: literal names, run, read nothing outside.
LITERAL = [
    "\u2215etc\u2215passwd",  # division slash
    "\uff0e\uff0e/outside/secret.txt",  # fullwidth dots
    "%2e%2e/outside/secret.txt",
    "..%2foutside%2fsecret.txt",
    "\\..\\outside\\secret.txt",
    "$HOME/.bashrc",
    "${HOME}",
    "*",
    "../*",  # climbing, refused; see below
]


@pytest.mark.parametrize("arg", LITERAL[:-1])
async def test_look_alikes_encodings_and_shell_syntax_are_literal_names(root, outside, arg) -> None:
    done = await tool(root).execute({"command": "cat", "args": [arg]})
    assert done["exit_code"] != 0 and SECRET not in done["stdout"]


async def test_a_glob_that_climbs_is_refused_like_any_climbing_path(root, outside) -> None:
    with pytest.raises(InvalidArguments, match="confine_paths"):
        await tool(root).execute({"command": "cat", "args": [LITERAL[-1]]})


@pytest.mark.parametrize("command,args,cwd,expect", [
    ("cat", ["a.txt"], None, "alpha"),
    ("cat", ["./a.txt", "sub/../b.txt"], None, "alpha\nbeta"),
    ("cat", ["../a.txt"], "sub", "alpha"),
    ("cat", ["{root}/a.txt"], None, "alpha"),
    ("cat", ["/dev/null", "a.txt"], None, "alpha"),
    ("grep", ["-n", "alpha", "a.txt"], None, "1:alpha"),
    ("grep", ["-e", "s/a/b/", "-e", "alpha", "a.txt"], None, "alpha"),
    ("sort", ["-k1,1", "-t,", "b.txt", "a.txt"], None, "alpha\nbeta"),
    ("head", ["-n1", "a.txt"], None, "alpha"),
    ("ls", ["-l", "sub", "."], None, "a.txt"),
    ("ls", ["src; rm -rf ~"], None, ""),  # the page's own example: one literal argument
    ("grep", ["-c", "https://example.org/a,b:c", "a.txt"], None, "0"),  # a URL, a list: not paths out
    ("sort", ["-t:", "-k1,1", "a.txt"], None, "alpha"),
])
async def test_honest_calls_inside_the_root_still_work(root, command, args, cwd, expect) -> None:
    args = [a.replace("{root}", str(root)) for a in args]
    params: dict[str, Any] = {"command": command, "args": args}
    if cwd:
        params["cwd"] = cwd
    done = await tool(root).execute(params)
    assert expect in done["stdout"]


async def test_honest_git_with_C_inside_the_root_still_works(root) -> None:
    make_repo(root)
    (root / "sub").mkdir(exist_ok=True)
    git = RunCommand(ShellSettings(root=root, commands={"git": {"subcommands": ["status", "log"]}}))
    for args in (["-C", "sub", "--work-tree=..", "status", "--short"], ["log", "--oneline", "-n1"],
                 ["-C", "sub", "log", "--oneline", "-n1", "--", "../a.txt"]):
        done = await git.execute({"command": "git", "args": args})
        assert done["exit_code"] == 0, (args, done["stderr"])


@pytest.mark.parametrize("where", ["plugin", "command"])
async def test_confine_paths_false_lets_arguments_name_any_file(root, outside, where) -> None:
    if where == "plugin":
        t = tool(root, confine_paths=False)
    else:
        t = tool(root, commands={"cat": {"confine_paths": False}})
    done = await t.execute({"command": "cat", "args": [str(outside / "secret.txt")]})
    assert SECRET in done["stdout"]
    if where == "command":  # only that command
        with pytest.raises(InvalidArguments, match="confine_paths"):
            await t.execute({"command": "head", "args": [str(outside / "secret.txt")]})


async def test_through_reach_a_refused_path_is_invalid_arguments_and_nothing_runs(root, outside) -> None:
    reach = Reach({
        "plugins": {"reach-shell": {"root": str(root), "commands": {"cat": {}, "touch": {}}}},
        "connectors": {"run_command": {"risk": "write"}},
    })
    async with reach:
        for args in ([str(outside / "secret.txt")], ["../outside/secret.txt"], ["-", "/etc/passwd"]):
            result = await reach.invoke("run_command", {"command": "cat", "args": args})
            assert not result.ok and result.error is not None and result.error.code == "invalid_arguments"
            assert SECRET not in str(result.to_dict()) and "root:x" not in str(result.to_dict())
        result = await reach.invoke("run_command", {"command": "touch", "args": ["../outside/made"]})
        assert not result.ok and not (outside / "made").exists()
        result = await reach.invoke("run_command", {"command": "cat", "args": ["a.txt"]})
        assert result.ok and result.content["stdout"] == "alpha\n"


async def test_a_long_bundle_is_checked_quickly_and_still_caught(root, outside) -> None:
    """One lstat per letter, not a resolution per letter: 4000 letters then the path."""
    arg = "-" + "v" * 4000 + "f" + str(outside / "secret.txt")
    with pytest.raises(InvalidArguments, match="confine_paths"):
        await tool(root, max_arg_chars=8000).execute({"command": "grep", "args": [arg, "a.txt"]})
    many = "-" + "a/" * 1990  # 1990 tails, each absolute: read as text, never resolved
    with pytest.raises(InvalidArguments, match="confine_paths"):
        await tool(root).execute({"command": "cat", "args": [many]})
    words = "-" + "ab" * 2000  # 4000 tails without a slash: one lstat each
    done = await tool(root).execute({"command": "cat", "args": ["--", words]})
    assert done["exit_code"] != 0


# grep's pattern is not a path: `grep -rn "/api/v1" .` is an everyday search. The slot is
# recognised only in grep's plain shape; every way of making the first plain argument a
# file (a pattern by -e/--regexp, a pattern file, a flag whose value is the next argument,
# options after the pattern, which GNU getopt reads anywhere) keeps every argument checked.
@pytest.mark.parametrize("args,expect", [
    (["-rn", "/api/v1", "."], "/api/v1"),
    (["/api/v1", "code.txt"], "/api/v1"),
    (["-F", "../../etc", "code.txt"], "../../etc"),
    (["--include=*.txt", "-r", "/usr/lib", "."], "/usr/lib"),
    (["-r", "--ignore-case", "~/.ssh", "."], "~/.ssh"),
    (["-c", "--", "/api/v1", "code.txt"], "1"),
    (["-E", "=/etc/x|/tmp:/var", "code.txt"], "=/etc/x"),
])
async def test_grep_patterns_that_look_like_paths_are_searched_for(root, args, expect) -> None:
    (root / "code.txt").write_text("GET /api/v1 from ../../etc and /usr/lib and ~/.ssh\nk=/etc/x\n")
    done = await tool(root, commands={"egrep": {}}).execute({"command": "grep", "args": args})
    assert expect in done["stdout"]


GREP_SMUGGLES = [
    ["-e", "x", "{out}/secret.txt"],
    ["{out}/secret.txt", "-e", "TOP"],
    ["{out}/secret.txt", "a.txt", "-ie", "TOP"],
    ["--regexp=TOP", "{out}/secret.txt"],
    ["--reg", "TOP", "{out}/secret.txt"],
    ["--regex=TOP", "{out}/secret.txt"],
    ["-f", "a.txt", "{out}/secret.txt"],
    ["--file=a.txt", "{out}/secret.txt"],
    ["--fil=a.txt", "{out}/secret.txt"],
    ["-fa.txt", "{out}/secret.txt"],
    ["-rfa.txt", "{out}/secret.txt"],
    ["-m", "9", "TOP", "{out}/secret.txt"],
    ["-m", "{out}/secret.txt", "TOP", "a.txt"],
    ["-A", "1", "{out}/secret.txt"],
    ["-A1", "{out}/secret.txt"],
    ["--max-count", "9", "{out}/secret.txt"],
    ["--exclude-from", "{out}/secret.txt", "TOP", "a.txt"],
    ["--label", "x", "{out}/secret.txt"],
    ["TOP", "{out}/secret.txt"],
    ["TOP", "../{name}/secret.txt"],
    ["-r", "TOP", "{out}"],
    ["--", "TOP", "{out}/secret.txt"],
    ["-e", "TOP", "--", "{out}/secret.txt"],
    ["-i", "TOP", "a.txt", "--file", "{out}/secret.txt"],
]


@pytest.mark.parametrize("command", ["grep", "egrep", "fgrep"])
@pytest.mark.parametrize("args", GREP_SMUGGLES, ids=[" ".join(a) for a in GREP_SMUGGLES])
async def test_a_file_cannot_ride_in_grep_s_pattern_slot(root, outside, command, args) -> None:
    args = [_spell(a, outside) for a in args]
    with pytest.raises(InvalidArguments) as refused:
        await tool(root, commands={"egrep": {}, "fgrep": {}}).execute({"command": command, "args": args})
    assert "confine_paths" in refused.value.message


# sed's script and awk's program are text too: sed always runs with --sandbox and awk with
# --sandbox or its program checked (no file is read or written from them), so their
# addresses (`/start/,/end/p`) are not paths. A script or program from a file, or text given
# by an option, makes the first plain argument a file: every argument is checked then.
@pytest.mark.parametrize("command,args,expect", [
    ("sed", ["-n", "/GET/p", "code.txt"], "GET /api/v1"),
    ("sed", ["/GET/d", "code.txt"], "k=/etc/x"),
    ("sed", ["-E", "--quiet", "/k=/p", "code.txt"], "k=/etc/x"),
    ("sed", ["-n", "/../p", "code.txt"], "GET"),
    ("awk", ["/GET/ {print $2}", "code.txt"], "/api/v1"),
    ("awk", ["-F=", "/k=/ {print $2}", "code.txt"], "/etc/x"),
    ("awk", ["-F", "=", "/k=/ {print $2}", "code.txt"], "/etc/x"),
    ("awk", ["-v", "n=1", "/GET/ {print n}", "code.txt"], "1"),
])
async def test_sed_and_awk_addresses_are_not_paths(root, command, args, expect) -> None:
    (root / "code.txt").write_text("GET /api/v1 from ../../etc and /usr/lib and ~/.ssh\nk=/etc/x\n")
    done = await tool(root, commands={"sed": {}, "awk": {}}).execute({"command": command, "args": args})
    assert expect in done["stdout"]


TEXT_SMUGGLES = [
    ("sed", ["-n", "p", "{out}/secret.txt"]),
    ("sed", ["/x/d", "{out}/secret.txt"]),
    ("sed", ["-e", "p", "{out}/secret.txt"]),
    ("sed", ["-ne", "p", "{out}/secret.txt"]),
    ("sed", ["--expression=p", "{out}/secret.txt"]),
    ("sed", ["--e=p", "{out}/secret.txt"]),
    ("sed", ["--expr", "p", "{out}/secret.txt"]),
    ("sed", ["-f", "a.txt", "{out}/secret.txt"]),
    ("sed", ["--file=a.txt", "{out}/secret.txt"]),
    ("sed", ["-n", "{out}/secret.txt", "-e", "p"]),
    ("sed", ["-l", "5", "p", "{out}/secret.txt"]),
    ("sed", ["-s", "--", "p", "{out}/secret.txt"]),
    ("awk", ["1", "{out}/secret.txt"]),
    ("awk", ["/x/", "{out}/secret.txt"]),
    ("awk", ["-f", "a.txt", "{out}/secret.txt"]),
    ("awk", ["--file=a.txt", "{out}/secret.txt"]),
    ("awk", ["-e", "1", "{out}/secret.txt"]),
    ("awk", ["--source", "1", "{out}/secret.txt"]),
    ("awk", ["--sou=1", "{out}/secret.txt"]),
    ("awk", ["-i", "a.txt", "1", "{out}/secret.txt"]),
    ("awk", ["-F", "{out}/secret.txt", "1", "a.txt"]),
    ("awk", ["1", "a.txt", "-f", "{out}/secret.txt"]),
    ("awk", ["--", "1", "{out}/secret.txt"]),
]


@pytest.mark.parametrize("command,args", TEXT_SMUGGLES, ids=[f"{c} {' '.join(a)}" for c, a in TEXT_SMUGGLES])
async def test_a_file_cannot_ride_in_a_script_slot(root, outside, command, args) -> None:
    args = [_spell(a, outside) for a in args]
    with pytest.raises(InvalidArguments) as refused:
        await tool(root, commands={"sed": {}, "awk": {}}).execute({"command": command, "args": args})
    # confine_paths, or earlier the option check (a program from a file, `--e` read as another option)
    assert refused.value.field.startswith("args[")


@pytest.mark.parametrize("command,args", [
    ("awk", ["-v", "x=1", "{out}/secret.txt"]),
    ("awk", ["{out}/secret.txt"]),
    ("sed", ["-n", "{out}/secret.txt"]),
    ("grep", ["-r", "{out}/secret.txt"]),
])
async def test_a_path_in_the_text_slot_is_text_and_its_file_is_never_read(root, outside, command, args) -> None:
    args = [_spell(a, outside) for a in args]
    try:
        done = await tool(root, commands={"sed": {}, "awk": {}}).execute({"command": command, "args": args})
    except Exception as exc:  # noqa: BLE001 - a program that fails on such text is fine too
        done = {"stdout": "", "stderr": str(exc)}
    assert SECRET not in done["stdout"] + done.get("stderr", "")
