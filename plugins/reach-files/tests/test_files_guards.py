"""Red-team families for the guards beyond the roots themselves.

* VCS metadata (.git/.hg/.svn/.bzr anywhere, any case, Windows trailing dots and spaces,
  NTFS short names, ignorable code points, look-alike letters, through symlinks, bare
  repositories) and .env/.envrc/.env.* files are not written unless a setting allows it.
* reach's own data dir, state store, pin file and audit log, and the config file, when they
  sit inside a root, are neither read, listed, searched nor written.
* Size, free-space and depth limits on writes.
* /proc/*/root, /proc/*/cwd, /proc/*/fd and /dev/fd paths and links count as outside.
* Odd paths (NUL, overlong, lone surrogates) are ``invalid_arguments`` (Windows device names
  are ordinary files on POSIX: test_files_secrets.py).

Each family has positive controls: honest names that look close stay usable.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "TOP-SECRET-STATE"


def _reach(tmp_path: Path, data_dir: Path | None = None, **settings: Any) -> tuple[Reach, Path]:
    root = tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    (root / "readme.txt").write_text("hello\n", encoding="utf-8")
    config: dict[str, Any] = {"reach": {"data_dir": str(data_dir or tmp_path / "data")},
                              "plugins": {"reach-files": {"roots": [str(root)], **settings}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True), root


async def _write(reach: Reach, path: str, mode: str = "create", content: str = "pwned") -> Any:
    return await reach.invoke("write_file", {"path": path, "content": content, "mode": mode})


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` and its bytes (symlinks as their target), to show nothing changed."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = b"->" + os.readlink(p).encode()
            elif p.is_file():
                out[rel] = p.read_bytes()
            else:
                out[rel] = b"<dir>"
    return out


# --------------------------------------------------------------------------- VCS metadata

_VCS = [".git", ".hg", ".svn", ".bzr"]


def _spellings(name: str) -> list[str]:
    """``name`` as a model (or an attacker) might spell it so that some OS or tool reads it as ``name``."""
    core = name[1:]
    return [
        name, name.upper(), "." + core.capitalize(), "." + core[0].upper() + core[1:],
        name + ".", name + " ", name + ". .", name + "...", name + " .",
        "\uff0e" + core,                                   # fullwidth full stop
        "." + "".join(chr(0xFF00 + ord(c) - 0x20) for c in core),   # fullwidth letters
        "." + core[0] + "\u200c" + core[1:],              # ZWNJ: ignored by HFS+ (CVE-2014-9390)
        "." + core[0] + "\u200b" + core[1:],              # zero-width space
        "\ufeff" + name,                                  # BOM in front
        name + "\u200d",                                  # zero-width joiner behind
        core.upper()[:6] + "~1",                          # NTFS 8.3 short name (GIT~1)
    ]


_LOOKALIKES = [
    ".\u0261it",        # LATIN SMALL LETTER SCRIPT G
    ".g\u0456t",        # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
    ".g\u0131t",        # LATIN SMALL LETTER DOTLESS I
    ".gi\u0442",        # CYRILLIC SMALL LETTER TE
    ".\u04bbg",         # CYRILLIC SHHA + g  (.hg)
    ".\u0455vn",        # CYRILLIC DZE (.svn)
    ".s\u03bdn",        # GREEK NU (.svn)
    ".GI\u0422",        # CYRILLIC CAPITAL TE
    ".g\u0130t",        # LATIN CAPITAL I WITH DOT ABOVE
    ".\U0001d420it",    # MATHEMATICAL BOLD SMALL G
]

_VCS_PATHS = sorted({
    *(f"{s}/config" for n in _VCS for s in _spellings(n)),
    *(f"{s}/config" for s in _LOOKALIKES),
    ".git/hooks/pre-commit", "src/.git/hooks/post-checkout", "a/b/c/.hg/hgrc", "vendor/lib/.svn/entries",
    ".git",                 # a .git FILE (gitdir: pointer) redirects git to any folder
    "sub/.GIT", ".bzr/branch/branch.conf", ".git/info/attributes", ".Git./config",
})


@pytest.mark.parametrize("path", _VCS_PATHS)
async def test_vcs_metadata_is_not_written(tmp_path: Path, path: str) -> None:
    reach, root = _reach(tmp_path)
    before = _tree(root)
    for mode in ("create", "overwrite", "append"):
        r = await _write(reach, path, mode)
        assert not r.ok, f"{mode} {path!r} was written: {r.content}"
        assert r.error.code == "invalid_arguments", (path, r.error)
        assert "allow_vcs_writes" in r.error.message
    assert _tree(root) == before


async def test_vcs_metadata_through_symlinks_and_bare_repositories(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path)
    (root / "repo" / ".git" / "hooks").mkdir(parents=True)
    (root / "meta").symlink_to(root / "repo" / ".git", target_is_directory=True)   # link to .git
    (root / "proj").mkdir()
    (root / "proj" / ".git").symlink_to(root / "plain", target_is_directory=True)  # .git that is a link
    (root / "plain").mkdir()
    bare = root / "site.git"                                                       # a bare repository
    (bare / "objects").mkdir(parents=True)
    (bare / "refs").mkdir()
    (bare / "hooks").mkdir()
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    renamed = root / "backup"                                                      # bare, any name
    for sub in ("objects", "refs", "hooks"):
        (renamed / sub).mkdir(parents=True)
    (renamed / "HEAD").write_text("ref: refs/heads/main\n")
    before = _tree(root)
    refused = []
    for path in ["meta/hooks/pre-commit", "meta/config", "proj/.git/config", "site.git/hooks/post-receive",
                 "site.git/config", "backup/hooks/update", "backup/HEAD", str(root / "meta" / "config")]:
        for mode in ("create", "overwrite", "append"):
            r = await _write(reach, path, mode)
            refused.append((path, mode, r.ok))
    assert [x for x in refused if x[2]] == []
    assert _tree(root) == before


# A git directory built one write at a time: each file is harmless while the folder is not yet a
# repository, and the last one makes it one (git finds it when run in any folder below it, as a
# bare repository, and runs the planted config: core.fsmonitor on `git status`). `commondir` makes
# a folder with HEAD a git directory over another folder's objects, refs and config.
_FSMONITOR = '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "echo PLANTED"\n'
_PIECES = {"config": _FSMONITOR, "HEAD": "ref: refs/heads/main\n", "objects/info/packs": "\n",
           "refs/heads/main": "0" * 40 + "\n"}
_PLANTS = [
    *[(f"{folder}order {i}", [(folder + name, _PIECES[name]) for name in order], folder or ".")
      for folder in ("", "site/", "deep/er/")
      for i, order in enumerate([
          ("config", "objects/info/packs", "refs/heads/main", "HEAD"),   # HEAD last
          ("config", "HEAD", "refs/heads/main", "objects/info/packs"),   # objects last
          ("HEAD", "config", "objects/info/packs", "refs/heads/main"),   # refs last
          ("objects/info/packs", "config", "HEAD", "refs/heads/main"),
          ("refs/heads/main", "objects/info/packs", "config", "HEAD"),
      ])],
    ("commondir: HEAD last", [("common/config", _FSMONITOR), ("common/objects/x", ""), ("common/refs/x", ""),
                              ("wt/commondir", "../common\n"), ("wt/HEAD", "ref: refs/heads/main\n")], "wt"),
    ("commondir last", [("common/config", _FSMONITOR), ("common/objects/x", ""), ("common/refs/x", ""),
                        ("wt/HEAD", "ref: refs/heads/main\n"), ("wt/commondir", "../common\n")], "wt"),
]


def _git_config_in(folder: Path, ceiling: Path) -> str:
    """What git, run in ``folder``, takes for core.fsmonitor ("" if no repository or none set)."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(ceiling), "HOME": str(ceiling), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "config", "core.fsmonitor"], cwd=folder, env=env, capture_output=True, text=True,
                          check=False)
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to show what git would run")
@pytest.mark.parametrize(("case", "writes", "where"), _PLANTS, ids=[p[0] for p in _PLANTS])
async def test_a_git_directory_is_not_built_piece_by_piece(tmp_path: Path, case: str,
                                                           writes: list[tuple[str, str]], where: str) -> None:
    reach, root = _reach(tmp_path)
    refused = []
    for path, content in writes:
        r = await _write(reach, path, content=content)
        if not r.ok:
            refused.append(path)
            assert r.error.code == "invalid_arguments" and "allow_vcs_writes" in r.error.message, r.error
    probe = root / where
    (probe / "sub").mkdir(parents=True, exist_ok=True)  # the user runs git somewhere below it
    assert _git_config_in(probe / "sub", tmp_path) != "echo PLANTED", f"git runs the planted config ({refused})"
    assert refused, "every piece was written"


async def test_git_pieces_alone_stay_writable(tmp_path: Path) -> None:
    """Folders named objects/ and refs/, and files named HEAD or config, are ordinary while
    they do not complete a repository: a docs site's refs/, a HEAD note beside objects/."""
    reach, root = _reach(tmp_path)
    for path in ["docs/refs/index.md", "docs/objects/list.md", "docs/config", "notes/HEAD", "notes/objects/a",
                 "art/HEAD", "art/refs/b", "wt/commondir"]:
        r = await _write(reach, path)
        assert r.ok, (path, r.error)


_ENV_PATHS = [
    ".env", ".ENV", ".Env", ".env.local", ".env.production", ".ENV.Local", ".envrc", ".ENVRC",
    "app/.env", "a/b/.env.test", ".env.", ".env ", ".envrc..", ".env\u200b", "\u200b.env",
    "\uff0eenv", ".\uff45nv", ".\u0435nv", ".en\u03bd", ".env.example", ".env.d/x",
]


@pytest.mark.parametrize("path", _ENV_PATHS)
async def test_env_files_are_not_written(tmp_path: Path, path: str) -> None:
    reach, root = _reach(tmp_path)
    before = _tree(root)
    for mode in ("create", "overwrite", "append"):
        r = await _write(reach, path, mode)
        assert not r.ok, f"{mode} {path!r} was written"
        assert r.error.code == "invalid_arguments"
        assert "allow_env_writes" in r.error.message
    assert _tree(root) == before


_HONEST = [".github/ISSUE_TEMPLATE/bug.md", ".gitignore", ".gitattributes", ".gitkeep", "notes/.gitkeep",
           "git/notes.md", "gitlab.md", "my.gitbook", "hg.txt", "svn-howto.md", ".bzrignore",
           "environment.md", ".environment", "env/settings.md", "dotenv.md", "x.envy", "env.txt",
           "docs/.envoy.md", "git~1.txt", "北京/.config.md", "Ελλάδα.md", "Москва.txt"]


@pytest.mark.parametrize("path", _HONEST)
async def test_honest_names_close_to_the_guarded_ones_are_written(tmp_path: Path, path: str) -> None:
    reach, root = _reach(tmp_path)
    r = await _write(reach, path)
    assert r.ok, r.error
    assert (root / path).read_text() == "pwned"
    r = await reach.invoke("read_file", {"path": path})
    assert r.ok and r.content["content"] == "pwned"


async def test_settings_allow_vcs_and_env_writes_explicitly(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, allow_vcs_writes=True, allow_env_writes=True)
    for path in [".git/config", ".hg/hgrc", ".env", ".env.local", ".envrc"]:
        r = await _write(reach, path)
        assert r.ok, (path, r.error)
        assert (root / path).read_text() == "pwned"
    reach, root = _reach(tmp_path / "b", allow_vcs_writes=True)
    assert (await _write(reach, ".git/x")).ok
    assert (await _write(reach, ".env")).error.code == "invalid_arguments"


async def test_reading_vcs_metadata_stays_possible(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    r = await reach.invoke("read_file", {"path": ".git/HEAD"})
    assert r.ok and "refs/heads/main" in r.content["content"]


# --------------------------------------------------------------------------- reach's own files


def _state_inside(tmp_path: Path) -> tuple[Reach, Path, dict[str, Path]]:
    root = tmp_path / "root"
    data = root / ".reach"
    data.mkdir(parents=True)
    files = {
        "store": data / "reach.db",
        "wal": data / "reach.db-wal",
        "pins": data / "pins.json",
        "other": data / "files.cache",
    }
    for p in files.values():
        p.write_text("{}" if p.suffix == ".json" else "" if "reach.db" in p.name else SECRET)
    reach, _ = _reach(tmp_path, data_dir=data)
    return reach, root, files


async def test_reach_state_inside_a_root_is_refused_to_every_tool(tmp_path: Path) -> None:
    reach, root, files = _state_inside(tmp_path)
    (root / "to_pins").symlink_to(files["pins"])
    (root / "to_data").symlink_to(root / ".reach", target_is_directory=True)
    paths = [str(p.relative_to(root)) for p in files.values()] + [str(p) for p in files.values()] + [
        ".reach", ".reach/", "./.reach/reach.db", ".reach//pins.json", "to_pins", "to_data/reach.db",
        str(root / ".reach"), ".reach/new.txt"]
    accepted = []
    await reach.invoke("read_file", {"path": "readme.txt"})  # the core has opened its store
    before = _tree(root)
    for path in paths:
        for tool, args in [("read_file", {"path": path}), ("list_dir", {"path": path}),
                           ("search_files", {"path": path, "text": "SECRET"}),
                           ("write_file", {"path": path, "content": "x", "mode": "overwrite"}),
                           ("write_file", {"path": path, "content": "x", "mode": "append"}),
                           ("write_file", {"path": path, "content": "x"})]:
            r = await reach.invoke(tool, args)
            if r.ok or r.error.code != "invalid_arguments":
                accepted.append((tool, path, r.ok))
    assert accepted == []
    assert _tree(root) == before


async def test_search_does_not_look_into_reach_state(tmp_path: Path) -> None:
    reach, root, files = _state_inside(tmp_path)
    (root / "public.txt").write_text("nothing " + SECRET[:3])
    r = await reach.invoke("search_files", {"text": "SECRET"})
    assert r.ok and r.content["matches"] == []
    r = await reach.invoke("search_files", {"pattern": "**"})
    assert r.ok
    shown = [h["path"] for h in r.content["files"]]
    assert "public.txt" in shown and not [p for p in shown if ".reach" in p]
    r = await reach.invoke("list_dir", {})
    assert r.ok and [e["name"] for e in r.content["entries"]] == ["public.txt", "readme.txt"]


async def test_reach_state_elsewhere_and_a_root_inside_the_data_dir(tmp_path: Path) -> None:
    """The default root is ``<data_dir>/files``: its files stay usable; the store beside it is not a root file."""
    config = {"reach": {"data_dir": str(tmp_path / "data")}}
    reach = Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True)
    assert (await _write(reach, "notes/a.md")).ok
    r = await reach.invoke("read_file", {"path": "notes/a.md"})
    assert r.ok and r.content["content"] == "pwned"
    r = await reach.invoke("list_dir", {})
    assert r.ok and [e["name"] for e in r.content["entries"]] == ["notes"]


async def test_configured_store_pins_and_config_file_inside_a_root(tmp_path: Path, monkeypatch: Any) -> None:
    root = tmp_path / "root"
    root.mkdir()
    for name in ("state.sqlite", "state.sqlite-wal", "my-pins.json", "reach.toml"):
        (root / name).write_text("{}" if name.endswith(".json") else "" if "sqlite" in name else SECRET)
    (root / "reach.toml").write_text(
        f'[reach]\ndata_dir = "{tmp_path / "data"}"\nstore = "sqlite:///{root / "state.sqlite"}"\n'
        f'pins = "{root / "my-pins.json"}"\n[plugins.reach-files]\nroots = ["{root}"]\n'
    )
    monkeypatch.setenv("REACH_CONFIG", str(root / "reach.toml"))
    reach = Reach(None, plugins=[("reach-files", reach_files.plugin)], strict=True)
    for path in ("state.sqlite", "state.sqlite-wal", "my-pins.json", "reach.toml"):
        r = await reach.invoke("read_file", {"path": path})
        assert not r.ok and r.error.code == "invalid_arguments", path
        r = await _write(reach, path, "overwrite")
        assert not r.ok and r.error.code == "invalid_arguments", path
    assert (root / "my-pins.json").read_text() == "{}"


@pytest.mark.parametrize("name", ["reach.toml", "agent-config.toml", "conf/prod.toml", "pyproject.toml"])
async def test_a_config_file_given_by_path_inside_a_root_is_protected(tmp_path: Path, name: str) -> None:
    """``Reach(config=path)``, not found by the default search: still refused to every tool."""
    root = tmp_path / "root"
    config = root / name
    config.parent.mkdir(parents=True)
    table = "[tool.reach." if name == "pyproject.toml" else "["
    body = (f'{table}reach]\ndata_dir = "{tmp_path / "data"}"\n'
            f'{table}plugins.reach-files]\nroots = ["{root}"]\n')
    config.write_text(body)
    (root / "notes.txt").write_text("hello")
    reach = Reach(str(config), plugins=[("reach-files", reach_files.plugin)], strict=True)
    assert reach.config.source == config.resolve()
    r = await reach.invoke("read_file", {"path": name})
    assert not r.ok and r.error.code == "invalid_arguments", r.content
    r = await _write(reach, name, "overwrite")
    assert not r.ok and r.error.code == "invalid_arguments"
    assert config.read_text() == body
    r = await reach.invoke("read_file", {"path": "notes.txt"})
    assert r.ok and r.content["content"] == "hello"


def test_a_config_from_a_dict_has_no_source() -> None:
    from reach_core.config import load_config

    assert load_config({}).source is None


def test_audit_log_file_is_protected(tmp_path: Path) -> None:
    from reach_files.protect import reach_paths

    from reach_core.config import load_config

    cfg = load_config({"reach": {"data_dir": str(tmp_path / "d")},
                       "plugins": {"reach-audit": {"log": str(tmp_path / "root" / "audit.jsonl")}}})
    paths = reach_paths(cfg, tmp_path / "d", None)
    assert str(tmp_path / "root" / "audit.jsonl") in paths
    cfg = load_config({"plugins": {"reach-audit": {"log": "stderr"}}})
    assert not [p for p in reach_paths(cfg, tmp_path / "d", None) if p.endswith("stderr")]


# --------------------------------------------------------------------------- limits


async def test_max_file_bytes_counts_the_file_after_the_write(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, max_file_bytes=1000)
    assert (await _write(reach, "a.txt", content="x" * 1000)).ok
    r = await _write(reach, "a.txt", "append", "y")
    assert not r.ok and r.error.code == "invalid_arguments" and "max_file_bytes" in r.error.message
    r = await _write(reach, "b.txt", content="x" * 1001)
    assert not r.ok and r.error.code == "invalid_arguments"
    r = await _write(reach, "a.txt", "overwrite", "é" * 501)   # 1002 bytes
    assert not r.ok and r.error.code == "invalid_arguments"
    assert (root / "a.txt").read_text() == "x" * 1000 and not (root / "b.txt").exists()
    assert (await _write(reach, "a.txt", "overwrite", "z" * 10)).ok
    assert (await _write(reach, "a.txt", "append", "z" * 990)).ok


async def test_min_free_bytes_refuses_writes_that_would_fill_the_disk(tmp_path: Path) -> None:
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    reach, root = _reach(tmp_path, min_free_bytes=free + 10**9)
    for mode in ("create", "overwrite", "append"):
        r = await _write(reach, "readme.txt" if mode != "create" else "new.txt", mode)
        assert not r.ok and r.error.code == "execution_failed" and "min_free_bytes" in r.error.message
    assert (root / "readme.txt").read_text() == "hello\n" and not (root / "new.txt").exists()
    reach, root = _reach(tmp_path / "ok")          # the default leaves honest writes alone
    assert (await _write(reach, "new.txt")).ok


async def test_max_write_depth_refuses_deep_folder_creation(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, max_write_depth=4)
    assert (await _write(reach, "a/b/c/d/ok.txt")).ok
    for path in ["a/b/c/d/e/x.txt", "/".join("d" * 200) + "/x", "a/" * 50 + "x", str(root / "1/2/3/4/5/x")]:
        r = await _write(reach, path)
        assert not r.ok and r.error.code == "invalid_arguments" and "max_write_depth" in r.error.message, path
    assert not (root / "a/b/c/d/e").exists() and not (root / "d").exists() and not (root / "1").exists()


def test_limit_settings_have_defaults_and_refuse_nonsense(tmp_path: Path) -> None:
    from reach_files.settings import FilesSettings

    s = FilesSettings()
    assert s.min_free_bytes > 0 and s.max_file_bytes >= s.max_write_bytes and 8 <= s.max_write_depth <= 64
    for bad in ({"min_free_bytes": -1}, {"max_file_bytes": 0}, {"max_write_depth": 0}):
        with pytest.raises(ValueError):
            FilesSettings(**bad)


# --------------------------------------------------------------------------- /proc and /dev/fd


async def test_proc_and_dev_fd_paths_are_outside(tmp_path: Path, monkeypatch: Any) -> None:
    reach, root = _reach(tmp_path)
    monkeypatch.chdir(root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pid = os.getpid()
        paths = [f"/proc/self/root{root}/readme.txt", f"/proc/{pid}/root{root}/readme.txt",
                 f"/proc/1/root{root}/readme.txt", f"/proc/thread-self/root{root}/readme.txt",
                 "/proc/self/cwd/readme.txt", f"/proc/{pid}/cwd/readme.txt", f"/proc/self/fd/{fd}/readme.txt",
                 f"/dev/fd/{fd}/readme.txt", f"/proc/self/task/{pid}/root{root}/readme.txt",
                 f"/proc/./self/root{root}/readme.txt", f"//proc/self/root{root}/readme.txt",
                 f"/proc/self/root/proc/self/root{root}/readme.txt"]
        for name, target in [("l_root", "/proc/self/root"), ("l_cwd", "/proc/self/cwd"),
                             ("l_fd", f"/dev/fd/{fd}"), ("l_pid", f"/proc/{pid}/root"),
                             ("l_chain", "l_root")]:
            (root / name).symlink_to(target)
            paths.append(f"{name}{root}/readme.txt" if "cwd" not in target and "fd" not in target
                         else f"{name}/readme.txt")
        paths.append("l_chain" + str(root) + "/readme.txt")
        before = _tree(root)
        accepted = []
        for path in paths:
            for tool, args in [("read_file", {"path": path}), ("list_dir", {"path": os.path.dirname(path)}),
                               ("write_file", {"path": path, "content": "x", "mode": "overwrite"})]:
                r = await reach.invoke(tool, args)
                if r.ok or r.error.code != "invalid_arguments":
                    accepted.append((tool, path))
        assert accepted == []
        assert _tree(root) == before
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- odd paths

_ODD = ["\x00", "a\x00b", "readme.txt\x00", "x" * 100_000, "y" * 5000, "a/" * 3000 + "z",
        "\ud800", "a\udfffb", "\udcff.txt", "\ud83d", "\U0010ffff\ud800"]


@pytest.mark.parametrize("path", _ODD, ids=range(len(_ODD)))
async def test_odd_paths_are_invalid_arguments(tmp_path: Path, path: str) -> None:
    reach, root = _reach(tmp_path)
    before = _tree(root)
    for tool, args in [("read_file", {"path": path}), ("list_dir", {"path": path}),
                       ("search_files", {"path": path}), ("write_file", {"path": path, "content": "x"})]:
        r = await reach.invoke(tool, args)
        assert not r.ok and r.error.code == "invalid_arguments", (tool, r.error)
        assert "internal error" not in r.error.message
    assert _tree(root) == before


@pytest.mark.parametrize("path", ["console.txt", "CONFIG", "nullable.md", "com10.txt", "auxiliary/x", "lpt.md",
                                  "prn_notes", "conin.txt"])
async def test_names_that_only_start_like_devices_are_fine(tmp_path: Path, path: str) -> None:
    reach, root = _reach(tmp_path)
    assert (await _write(reach, path)).ok
