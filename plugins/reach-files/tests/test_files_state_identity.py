"""reach's own state is recognised by what it *is*, not by how its path is spelled.

The state files (data dir, store and its side files, pin file, audit log, config file) used
to be hidden by comparing path text. A file system can reach one file by many spellings
that ``realpath`` does not turn into one:

* a **bind mount** of the data dir (or of the pin file) inside a root: ``realpath`` knows
  nothing of mounts, the text says "outside the state";
* a **hard link** to a state file: the same inode under another name;
* a **case-insensitive** file system (macOS, Windows shares, ext4 ``casefold`` folders):
  ``REACH.DB`` *is* ``reach.db``, and a ``PINS.JSON`` created before reach writes its pin
  file *becomes* the pin file. This file system is case-sensitive, so what can be tested
  here is the rule for names not created yet: a name that folds (case, Unicode
  normalisation) to a state file's, in the state file's folder, is refused.

Bind mounts need a private mount namespace: the scenario runs in a child process under
``unshare --map-root-user --mount``, so it needs no root and leaves no mount behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "STATE-SECRET-4410"


def _reach(tmp_path: Path, root: Path, **reach_section: Any) -> Reach:
    config: dict[str, Any] = {"reach": {"data_dir": str(tmp_path / "data"), **reach_section},
                              "plugins": {"reach-files": {"roots": [str(root)]}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True)


# ------------------------------------------------------------------- names a case-insensitive FS folds


def _twins(name: str) -> list[str]:
    stem = name
    return [n for n in dict.fromkeys([
        stem.upper(), stem.title(), stem.swapcase(), stem[0].upper() + stem[1:],
        unicodedata.normalize("NFD", stem.upper()), unicodedata.normalize("NFD", stem),
    ]) if n != name]


_STATE_NAMES = ["my-pins.json", "state.sqlite-wal", "state.sqlite-shm", "state.sqlite-journal", "p\u00efns.json"]


@pytest.mark.parametrize("spelling", [t for n in _STATE_NAMES for t in _twins(n)])
async def test_a_name_that_folds_to_a_state_file_not_made_yet_is_refused(tmp_path: Path, spelling: str) -> None:
    """The pin file and SQLite's side files come and go; created first under a folded name, on a
    case-insensitive FS the attacker's file *is* the one reach opens next (its pins, its WAL)."""
    root = tmp_path / "root"
    root.mkdir()
    target = next(n for n in _STATE_NAMES if spelling in _twins(n))
    pins = root / (target if target.endswith("ns.json") else "my-pins.json")
    reach = _reach(tmp_path, root, store=f"sqlite:///{root / 'state.sqlite'}", pins=str(pins))
    await reach.invoke("list_dir", {})  # the store exists now; its side files may not
    for side in ("-wal", "-shm", "-journal"):
        (root / f"state.sqlite{side}").unlink(missing_ok=True)
    pins.unlink(missing_ok=True)
    for mode in ("create", "overwrite", "append"):
        r = await reach.invoke("write_file", {"path": spelling, "content": '{"pins": {}}', "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (spelling, mode, r.content)
        assert "reach's own state" in r.error.message
    assert not (root / spelling).exists()


async def test_honest_names_beside_a_state_file_stay_usable(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    reach = _reach(tmp_path, root, store=f"sqlite:///{root / 'state.sqlite'}", pins=str(root / "my-pins.json"))
    for name in ("my-pins.json.md", "state.sqlite.txt", "pins.json", "my_pins.json", "state.sqlite-wal2"):
        r = await reach.invoke("write_file", {"path": name, "content": "ok"})
        assert r.ok, (name, r.error)
        r = await reach.invoke("read_file", {"path": name})
        assert r.ok and r.content["content"] == "ok"


# ------------------------------------------------------------------- hard links


async def test_a_hard_link_to_a_state_file_is_not_listed_nor_found(tmp_path: Path) -> None:
    """Reading one was refused already (a file with two names); its name and size were still shown."""
    root = tmp_path / "root"
    root.mkdir()
    reach = _reach(tmp_path, root)
    await reach.invoke("list_dir", {})
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "reach.db").touch()
    os.link(tmp_path / "data" / "reach.db", root / "notes.db")
    (tmp_path / "data" / "pins.json").write_text("{}")
    os.link(tmp_path / "data" / "pins.json", root / "settings.json")
    (root / "readme.txt").write_text("hello")
    r = await reach.invoke("list_dir", {})
    assert r.ok and [e["name"] for e in r.content["entries"]] == ["readme.txt"], r.content
    r = await reach.invoke("search_files", {"pattern": "**"})
    assert r.ok and [f["path"] for f in r.content["files"]] == ["readme.txt"], r.content
    for name in ("notes.db", "settings.json"):
        r = await reach.invoke("read_file", {"path": name})
        assert not r.ok and r.error.code == "invalid_arguments"


# ------------------------------------------------------------------- bind mounts (a private mount namespace)

_CHILD = textwrap.dedent("""
    import asyncio, json, subprocess, sys
    from pathlib import Path
    import reach_files.plugin
    from reach_core import Reach

    tmp = Path(sys.argv[1])
    root, data = tmp / "root", tmp / "data"
    config = {"reach": {"data_dir": str(data)}, "plugins": {"reach-files": {"roots": [str(root)]}}}

    async def main():
        reach = Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True)
        await reach.invoke("list_dir", {})
        data.mkdir(parents=True, exist_ok=True)
        (data / "pins.json").write_text(json.dumps({"secret": "SECRET_HERE"}))
        (root / "mnt").mkdir()
        (root / "pins-view.json").write_text("")
        subprocess.run(["mount", "--bind", str(data), str(root / "mnt")], check=True)
        subprocess.run(["mount", "--bind", str(data / "pins.json"), str(root / "pins-view.json")], check=True)
        calls = [("read_file", {"path": "mnt/pins.json"}), ("read_file", {"path": "pins-view.json"}),
                 ("list_dir", {"path": "mnt"}), ("search_files", {"text": "secret"}),
                 ("search_files", {"pattern": "**"}),
                 ("write_file", {"path": "mnt/pins.json", "content": "{}", "mode": "overwrite"}),
                 ("write_file", {"path": "pins-view.json", "content": "{}", "mode": "append"}),
                 ("write_file", {"path": "mnt/new.txt", "content": "x"}), ("list_dir", {})]
        out = []
        for tool, args in calls:
            r = await reach.invoke(tool, args)
            out.append([tool, args, r.ok, r.content if r.ok else r.error.code])
        out.append(["pins after", (data / "pins.json").read_text(), (data / "new.txt").exists()])
        print(json.dumps(out, default=str))

    asyncio.run(main())
""").replace("SECRET_HERE", SECRET)


def _unshare_works() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs unshare(1) with user namespaces to make a bind mount")
def test_a_bind_mount_of_the_data_dir_inside_a_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(["unshare", "--map-root-user", "--mount", sys.executable, str(script), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    *calls, after = results
    leaks = []
    for tool, args, ok, content in calls:
        if tool == "list_dir" and args == {}:
            names = [e["name"] for e in content["entries"]] if ok else []
            if "mnt" in names or "pins-view.json" in names:
                leaks.append((tool, args, names))
        elif tool == "search_files":
            if ok and ("reach.db" in json.dumps(content) or SECRET in json.dumps(content)
                       or "pins" in json.dumps(content.get("files", []))):
                leaks.append((tool, args, content))
        elif ok or content != "invalid_arguments":
            leaks.append((tool, args, content))
    assert leaks == []
    assert after == ["pins after", json.dumps({"secret": SECRET}), False]
