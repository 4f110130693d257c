"""Options that read the names of the files to work on from a file inside the root.

`tar -cf s.tar -T list`, `sort --files0-from=list`, `wc`/`du --files0-from` and
`find -files0-from list` take their operands from `list`, a file the agent writes
(`write_file`, or `tar -x` of an archive holding it). No argument names the file
outside, so the path check saw only `list`: `/elsewhere/secret.txt` in it was
archived (then printed by `tar -xOf`), sorted onto stdout, counted, and `find`
walked and could `-delete` outside the root. While paths are confined, these
options are refused in every spelling the programs accept; with
`confine_paths = false` they run as before.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from reach_shell.grammar import parse
from reach_shell.programs import DEFAULT, grammar_for
from shell_attack import SECRET, snapshot

from reach_core import InvalidArguments

# (program, args): every spelling runs the real program over `list` (newline-separated names)
# or `list0` (NUL-separated), both naming `outside/secret.txt`.
ATTACKS = [
    ("tar", ["-cf", "s.tar", "-T", "list"]),
    ("tar", ["-cf", "s.tar", "--files-from=list"]),
    ("tar", ["-cf", "s.tar", "--files-from", "list"]),
    ("tar", ["-cf", "s.tar", "--files-f=list"]),
    ("tar", ["-cf", "s.tar", "-Tlist"]),
    ("tar", ["-cTlist", "-fs.tar"]),
    ("tar", ["cfT", "s.tar", "list"]),
    ("tar", ["cTf", "list", "s.tar"]),
    ("tar", ["--create", "--file=s.tar", "--null", "--files-from=list0"]),
    ("tar", ["-rf", "s.tar", "-T", "list"]),
    ("sort", ["--files0-from=list0"]),
    ("sort", ["--files0-from", "list0"]),
    ("sort", ["--files0=list0"]),
    ("sort", ["--files=list0"]),
    ("sort", ["-o", "s.txt", "--files0-fr=list0"]),
    ("wc", ["--files0-from=list0"]),
    ("wc", ["-c", "--files0-from", "list0"]),
    ("wc", ["--files0=list0"]),
    ("wc", ["--files=list0"]),
    ("du", ["-b", "--files0-from=list0"]),
    ("du", ["--files0-fr", "list0"]),
    ("find", ["-files0-from", "list0", "-name", "secret.txt"]),
    ("find", ["-files0-from", "list0", "-type", "f", "-size", "-2k"]),
    ("find", ["-files0-from", "list0", "-delete"]),
    # checksum lists (`<hash>  /elsewhere/secret.txt`): OK or FAILED says what the file holds
    ("sha256sum", ["-c", "sums.sha256"]),
    ("sha256sum", ["--check", "sums.sha256"]),
    ("sha256sum", ["--ch", "sums.sha256"]),
    ("sha256sum", ["--c", "sums.sha256"]),
    ("sha256sum", ["-wc", "sums.sha256"]),
    ("sha256sum", ["-cw", "sums.sha256"]),
    ("sha256sum", ["--strict", "--che", "sums.sha256"]),
    ("md5sum", ["-c", "sums.md5"]),
    ("md5sum", ["--check", "--", "sums.md5"]),
    ("sha1sum", ["--check", "sums.sha1"]),
    ("sha224sum", ["-c", "sums.sha224"]),
    ("sha384sum", ["--chec", "sums.sha384"]),
    ("sha512sum", ["--check", "--warn", "sums.sha512"]),
    ("b2sum", ["-c", "sums.b2"]),
    ("cksum", ["--check", "sums.tagged"]),
    ("cksum", ["-a", "sha256", "-c", "sums.sha256"]),
    ("cksum", ["-asha256", "-wc", "sums.sha256"]),
    ("shasum", ["-c", "sums.sha256"]),
    ("shasum", ["--check", "sums.sha1"]),
    ("shasum", ["--CHECK", "sums.sha1"]),
    ("shasum", ["--Ch", "sums.sha1"]),
    ("shasum", ["-wc", "sums.sha1"]),
    # file(1) examines the names in a list
    ("file", ["-f", "list"]),
    ("file", ["-flist"]),
    ("file", ["-kflist"]),
    ("file", ["-k", "-f", "list"]),
    ("file", ["--files-from=list"]),
    ("file", ["--files-from", "list"]),
    ("file", ["--fi=list"]),
    # xz and its names, zstd: compress, test or print the files a list names
    ("xz", ["-t", "--files=list"]),
    ("xz", ["-t", "--files0=list0"]),
    ("xzcat", ["--files=list"]),
    ("unxz", ["--files0=list0"]),
    ("zstd", ["-t", "--filelist=list"]),
    ("zstd", ["-t", "--filelist", "list"]),
    # gettext: the strings of the files a list names land in the catalogue
    ("xgettext", ["-f", "list", "-o", "-"]),
    ("xgettext", ["--files-from=list", "-o", "-"]),
    ("xgettext", ["--files=list", "-o", "-"]),
    ("msgcat", ["-flist"]),
    ("msgcat", ["--files-from", "list"]),
    # curl: a config file of options (`url = "file:///elsewhere/secret.txt"`)
    ("curl", ["-K", "curlrc"]),
    ("curl", ["-sK", "curlrc"]),
    ("curl", ["-sKcurlrc"]),
    ("curl", ["--config", "curlrc"]),
    ("curl", ["--conf", "curlrc"]),
    ("curl", ["-s", "--confi", "curlrc"]),
]


def _ids() -> list[str]:
    return [f"{program}:{' '.join(args)}" for program, args in ATTACKS]


@pytest.fixture
def outside(outside: Path, root: Path) -> Path:
    """conftest's folder beside the root, and lists in the root naming its `secret.txt`."""
    where = outside
    secret = where / "secret.txt"
    (root / "list").write_text(f"{secret}\n")
    (root / "list0").write_bytes(f"{secret}\0".encode())
    data = secret.read_bytes()
    for suffix, algorithm in (("md5", "md5"), ("sha1", "sha1"), ("sha224", "sha224"), ("sha256", "sha256"),
                              ("sha384", "sha384"), ("sha512", "sha512"), ("b2", "blake2b")):
        (root / f"sums.{suffix}").write_text(f"{hashlib.new(algorithm, data).hexdigest()}  {secret}\n")
    (root / "sums.tagged").write_text(f"SHA256 ({secret}) = {hashlib.sha256(data).hexdigest()}\n")
    (root / "curlrc").write_text(f'url = "file://{secret}"\n')
    return where


def _leaked(root: Path, content: dict[str, object] | None) -> list[str]:
    """Where the secret's text or name turned up: the answer, or any file in the root."""
    where = []
    if content is not None and (SECRET in str(content) or "secret.txt" in str(content)):
        where.append("answer")
    for path in root.rglob("*"):
        if path.is_file() and path.name not in ("list", "list0", "curlrc") and not path.name.startswith("sums.") \
                and SECRET.encode() in path.read_bytes():
            where.append(str(path))
    if (root / "s.tar").exists():
        listing = subprocess.run(["tar", "-tf", str(root / "s.tar")], capture_output=True, text=True, check=False)
        if "secret.txt" in listing.stdout:
            where.append("s.tar")
    return where


@pytest.mark.parametrize(("program", "args"), ATTACKS, ids=_ids())
async def test_names_read_from_a_file_cannot_lead_out_of_the_root(
    root: Path, tmp_path: Path, outside: Path, program: str, args: list[str]
) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={program: {}}))
    before = snapshot(tmp_path, root)
    content = None
    with pytest.raises(InvalidArguments) as refused:
        content = await tool.execute({"command": program, "args": args})
    assert refused.value.field.startswith("args[")
    assert "names" in str(refused.value) and "root" in str(refused.value)
    assert _leaked(root, content) == []
    assert snapshot(tmp_path, root) == before
    assert (outside / "secret.txt").read_text() == SECRET + "\n"


@pytest.mark.parametrize(("program", "args"), [a for a in ATTACKS if "-delete" not in a[1]], ids=[
    i for i, a in zip(_ids(), ATTACKS, strict=True) if "-delete" not in a[1]])
async def test_unconfined_the_same_calls_read_the_files_the_list_names(
    root: Path, outside: Path, program: str, args: list[str]
) -> None:
    """Control: with `confine_paths = false` the list is honoured, so the calls above were real."""
    tool = RunCommand(ShellSettings(root=root, commands={program: {"confine_paths": False}}))
    content = await tool.execute({"command": program, "args": args})
    assert _leaked(root, content), content


@pytest.mark.parametrize(
    ("program", "args", "expected"),
    [
        ("tar", ["-cf", "s.tar", "a.txt", "b.txt"], ""),
        ("sort", ["a.txt", "b.txt"], "alpha\nbeta\n"),
        ("wc", ["-l", "a.txt"], "1 a.txt\n"),
        ("du", ["-b", "a.txt"], "6\ta.txt\n"),
        ("find", [".", "-name", "a.txt"], "./a.txt\n"),
        ("grep", ["--files-with-matches", "alpha", "a.txt", "b.txt"], "a.txt\n"),
        ("grep", ["--files-without-match", "alpha", "a.txt", "b.txt"], "b.txt\n"),
        ("sha256sum", ["a.txt"], hashlib.sha256(b"alpha\n").hexdigest() + "  a.txt\n"),
        ("md5sum", ["--tag", "a.txt"], "MD5 (a.txt) = " + hashlib.md5(b"alpha\n").hexdigest() + "\n"),
        ("shasum", ["-a", "256", "a.txt"], hashlib.sha256(b"alpha\n").hexdigest() + "  a.txt\n"),
        ("file", ["-b", "a.txt"], "ASCII text\n"),
        ("xz", ["-k", "--fast", "a.txt"], ""),
        ("zstd", ["-q", "-k", "a.txt"], ""),
    ],
)
async def test_naming_files_in_the_arguments_still_works(
    root: Path, program: str, args: list[str], expected: str
) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={program: {}}))
    content = await tool.execute({"command": program, "args": args})
    assert content["exit_code"] == 0, content["stderr"]
    assert content["stdout"] == expected


@pytest.mark.parametrize("program", ["wc", "du"])
@pytest.mark.parametrize("spelling", ["--f=list0", "--fi=list0", "--file=list0", "--files0-from=list0"])
async def test_wc_and_du_abbreviations_of_files0_from_are_read_as_they_read_them(
    root: Path, outside: Path, program: str, spelling: str
) -> None:
    """wc and du take any unique prefix: `--file=list` is `--files0-from` to them."""
    tool = RunCommand(ShellSettings(root=root, commands={program: {}}))
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": program, "args": [spelling]})


async def test_grep_pattern_file_is_not_a_name_list(root: Path) -> None:
    """`--file` is grep's pattern file: programs without a grammar read name lists from `--files` on."""
    (root / "pat").write_text("alpha\n")
    tool = RunCommand(ShellSettings(root=root, commands={"grep": {}}))
    content = await tool.execute({"command": "grep", "args": ["--file=pat", "a.txt", "b.txt"]})
    assert content["stdout"] == "a.txt:alpha\n"


@pytest.mark.parametrize(
    ("arg", "name_list"),
    [("--files0-from=l", True), ("--files0=l", True), ("--files-from=l", True), ("--files-fr", True),
     ("--files-", True), ("--files", False), ("--file=p", False), ("--files-with-matches", False),
     ("--files-without-match", False)],
)
def test_programs_without_a_grammar_read_name_lists_down_to_files0_and_files_dash(arg: str, name_list: bool) -> None:
    """`rg --files` lists files and `grep --file` reads patterns; `--files0`/`--files-` are name lists."""
    found = [f for f in parse([arg, "x"], DEFAULT).options if f.option is not None and f.option.escapes]
    assert bool(found) is name_list


@pytest.mark.parametrize(
    ("program", "args"),
    [("ctags", ["-L", "list", "-f", "-"]), ("ctags", ["-Llist"]), ("ctags", ["-RL", "list"]),
     ("xz", ["--fil=list"]), ("xz", ["--files"]), ("xz", ["-dc", "--files0"]), ("zstd", ["--filel=list"]),
     ("rhash", ["--file-list=list"]), ("shasum", ["--cHeCk", "x"]), ("shasum", ["-bc", "x"]),
     ("curl", ["-vK", "x"]), ("cksum", ["--c", "x"]), ("b2sum", ["-l", "256", "-c", "x"])],
)
def test_name_list_options_are_read_in_every_spelling_the_parsers_take(program: str, args: list[str]) -> None:
    """Spellings the real programs take (or call ambiguous, or read from stdin): all read as the name list."""
    grammar = grammar_for(program, f"/usr/bin/{program}")
    assert [f for f in parse(args, grammar).options if f.option is not None and f.option.escapes]


@pytest.mark.parametrize("folder", [".ctags.d", "ctags.d", "sub/.ctags.d"])
@pytest.mark.parametrize("line", ["-L{names}", "-L\n{names}", "--recurse\n-L{names}", "  -L{names}"])
async def test_ctags_reads_no_option_file_of_the_root(root: Path, outside: Path, folder: str, line: str) -> None:
    """Universal Ctags reads `./.ctags.d/*.ctags` (and `./ctags.d/`) by itself: a `-L` line there tagged
    the files a list outside named (their source lines printed). It runs with `--options=NONE` now."""
    (outside / "leak.c").write_text("int leaked_symbol;\n")
    (root / "names").write_text(f"{outside / 'leak.c'}\n")
    (root / folder).mkdir(parents=True)
    (root / folder / "a.ctags").write_text(line.format(names=root / "names") + "\n")
    (root / "sub" / "mine.c").write_text("int my_symbol;\n")
    tool = RunCommand(ShellSettings(root=root, commands={"ctags": {}}))
    cwd = "sub" if folder.startswith("sub/") else None
    content = await tool.execute({"command": "ctags", "args": ["-f", "-", "sub/mine.c" if cwd is None else "mine.c"],
                                  **({"cwd": cwd} if cwd else {})})
    assert "my_symbol" in content["stdout"], content
    assert "leaked_symbol" not in str(content) and "leak.c" not in str(content)


@pytest.mark.parametrize("args", [["--options=opt", "-f", "-"], ["--options", "opt"], ["--options-maybe=opt"],
                                  ["--opt=opt"], ["-Lnames", "-f", "-"], ["-f", "-", "-L", "names"]])
async def test_ctags_option_and_name_files_are_refused(root: Path, outside: Path, args: list[str]) -> None:
    (root / "opt").write_text(f"-L{root / 'names'}\n")
    (root / "names").write_text(f"{outside / 'secret.txt'}\n")
    tool = RunCommand(ShellSettings(root=root, commands={"ctags": {}}))
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": "ctags", "args": args})
