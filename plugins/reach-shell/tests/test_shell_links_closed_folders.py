"""A link hidden in a folder reach's user cannot read, then used once the folder opens.

Run as an ordinary user (as the docs advise), the sweep could not list a folder
without its read or search bit: tar restores an archive's `d---------` *after*
extracting `d/esc -> /elsewhere` into it, the walk skipped `d`, a second archive gave
`d` its mode 755 back (the link, older than that call, was not looked at), and a third
wrote `d/esc/x.txt` into `/elsewhere`. Now a folder closed to its owner gets u+rx back
before the walk (u+wx before an unlink in it), and is named in `removed`.

Root reads every folder, so when the tests run as root each case runs in a child process
as `nobody` (`setpriv`); as any other user, in a child process as that user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_SCRIPT = r"""
import asyncio, io, json, sys, tarfile, time
from pathlib import Path
from reach_shell import RunCommand, ShellSettings

base, mode, folder = Path(sys.argv[1]), int(sys.argv[2], 8), sys.argv[3]
root, out = base / "work", base / "outside"
root.mkdir(); out.mkdir()

def archive(name, members):
    with tarfile.open(root / name, "w", format=tarfile.GNU_FORMAT) as tar:
        for member, kind, extra in members:
            info = tarfile.TarInfo(member)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, extra
                tar.addfile(info)
            elif kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, extra
                tar.addfile(info)
            else:
                info.size = len(extra)
                tar.addfile(info, io.BytesIO(extra))

parents = [("/".join(folder.split("/")[:i]), "dir", 0o755) for i in range(1, folder.count("/") + 1)]
archive("one.tar", parents + [(folder, "dir", mode), (f"{folder}/esc", "link", str(out))])
archive("two.tar", [(folder, "dir", 0o755)])
archive("three.tar", [(f"{folder}/esc/x.txt", "file", b"pwned\n")])

async def main():
    tool = RunCommand(ShellSettings(root=root, commands={"tar": {}}))
    removed = []
    for name in ("one.tar", "two.tar", "three.tar"):
        done = await tool.execute({"command": "tar", "args": ["-xf", name]})
        removed.append(done.get("removed", []))
        time.sleep(1.1)  # the link is older than the next call
    print(json.dumps({"removed": removed, "outside": sorted(p.name for p in out.iterdir())}))

asyncio.run(main())
"""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder of the test's own (removed after it, closed folders and all)."""
    where = Path(tempfile.mkdtemp(prefix="reach-shell-closed-"))
    where.chmod(0o777)  # for `nobody`
    yield where
    for folder, _, _ in os.walk(where):
        os.chmod(folder, 0o755)  # noqa: PTH101
    shutil.rmtree(where, ignore_errors=True)


def _run_unprivileged(base: Path, mode: str, folder: str) -> dict[str, list[object]]:
    script = base / "case.py"
    script.write_text(_SCRIPT)
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] if os.geteuid() == 0 else []
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(base), "TMPDIR": str(base),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(  # noqa: S603 - the test interpreter, fixed arguments
        [*drop, sys.executable, str(script), str(base), mode, folder],
        cwd=base, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("folder", ["d", "p/d", "p/q/d"])
@pytest.mark.parametrize("mode", ["000", "100", "400", "200", "300", "600"])
def test_a_link_in_a_folder_closed_to_reach_is_removed(shared_dir: Path, mode: str, folder: str) -> None:
    result = _run_unprivileged(shared_dir, mode, folder)
    assert result["outside"] == []
    first = result["removed"][0]
    assert isinstance(first, list)
    assert any(str(item).startswith(f"{folder}/esc -> ") for item in first), first
    assert [str(item) for item in first if str(item).startswith(f"{folder}/ ")] == [
        f"{folder}/ (folder opened to its owner, u+rwx: it hid what is in it)"], first


def test_a_link_in_a_folder_reach_may_read_but_not_write_is_removed(shared_dir: Path) -> None:
    """r-x: the walk sees the link; removing it needs u+w on the folder."""
    result = _run_unprivileged(shared_dir, "500", "d")
    assert result["outside"] == []
    assert result["removed"][0] == ["d/ (folder opened to its owner, u+wx: it hid what is in it)",
                                    f"d/esc -> {shared_dir / 'outside'}"]
