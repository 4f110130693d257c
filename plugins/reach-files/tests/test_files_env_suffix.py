"""Dotenv files named by their suffix: ``prod.env``, ``app.env``, ``docker/prod.env``.

Docker Compose's ``env_file: app.env``, systemd's ``EnvironmentFile=`` and many tools
keep secrets in ``NAME.env``, as others do in ``.env.production``. Before, ``.env`` and
``.env.*`` were secret stores but ``prod.env`` was handed out whole. Now a file whose name
ends in ``.env`` is one, in every spelling the ``.env`` rule already folds (case, trailing
dots and spaces, fullwidth letters, ignorable code points, look-alike letters, copies such
as ``prod.env.bak``): not read, not searched, not written.

A *folder* so named (``prod.env/``) is a folder of env files like ``.env.d/`` (daemontools'
``envdir``: one file per variable, the file's content its value), so the files in it are
refused whatever their names; only a folder named exactly ``.env`` is a virtualenv
(``python -m venv .env``) and holds ordinary files (test_files_secret_kinds.py).

Honest neighbours: templates in the suffix form (``example.env``, ``app.sample.env``) are
read like ``.env.example``; ``x.envy``, ``prod.environment``, ``prod.env.md`` are ordinary.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import rooted_reach

SECRET = "DB_PASSWORD=s3cr3t-env-suffix-9931"

_ATTACKS = [
    "prod.env", "app.env", "x.env", "staging.env", ".prod.env", "docker/prod.env", "deploy/k8s/eu/service.env",
    "PROD.ENV", "App.Env", "prod-eu.env", "prod_eu.env", "my app.env", "北京.env", "a.b.c.env", "..env", ".env.env",
    "prod.env.", "prod.env ", "prod.env...", "prod.env. .",            # Windows drops trailing dots and spaces
    "prod\uff0eenv", "prod.\uff45\uff4e\uff56", "\uff30\uff32\uff2f\uff24.env",  # fullwidth dot and letters
    "prod.e\u200cnv", "prod.env\u200b", "\ufeffprod.env", "prod.en\u00adv",     # ignorable code points
    "prod.\u0435nv", "prod.en\u03bd", "prod.\u0454nv",                           # Cyrillic е, Greek ν, Cyrillic є
    "prod.env.bak", "prod.env~", "#prod.env#", ".#prod.env", "prod.env.orig", "prod.env.1", "prod.env (copy)",
]


async def _refused_everywhere(reach, root: Path, rel: str) -> None:  # type: ignore[no-untyped-def]
    r = await reach.invoke("read_file", {"path": rel})
    assert not r.ok, f"read_file handed out {rel!r}: {r.content}"
    assert r.error.code == "invalid_arguments" and "allow_secret_files" in r.error.message, r.error
    r = await reach.invoke("search_files", {"text": "s3cr3t"})
    assert r.ok and "s3cr3t" not in str(r.content["matches"]), (rel, r.content)
    assert "1 secret" in r.content.get("note", ""), (rel, r.content)
    before = (root / rel).read_bytes()
    for mode in ("overwrite", "append"):
        r = await reach.invoke("write_file", {"path": rel, "content": "DB_PASSWORD=changed\n", "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (rel, mode, r.content)
        assert "allow_env_writes" in r.error.message
    assert (root / rel).read_bytes() == before


@pytest.mark.parametrize("rel", _ATTACKS)
async def test_a_file_named_like_name_dot_env_is_a_secret_store(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(SECRET + "\n", encoding="utf-8")
    (root / "notes.md").write_text("nothing here\n", encoding="utf-8")
    await _refused_everywhere(reach, root, rel)
    listed = await reach.invoke("list_dir", {"path": str(Path(rel).parent)})
    assert Path(rel).name in [e["name"] for e in listed.content["entries"]]  # the name is still shown


@pytest.mark.parametrize("rel", ["prod.env", "docker/app.env", "STAGING.ENV", "prod.env.", "prod\uff0eenv",
                                 "prod.\u0435nv", "prod.env.bak"])
async def test_a_new_name_dot_env_is_not_created(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    r = await reach.invoke("write_file", {"path": rel, "content": "API_KEY=planted\n"})
    assert not r.ok and r.error.code == "invalid_arguments" and "allow_env_writes" in r.error.message, r
    assert sorted(p.name for p in root.rglob("*")) == []  # no file, and no folder made for it


@pytest.mark.parametrize("link_target", ["prod.env", "docker/prod.env"])
async def test_a_symlink_to_or_named_like_name_dot_env_is_refused(tmp_path: Path, link_target: str) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / link_target).parent.mkdir(parents=True, exist_ok=True)
    (root / link_target).write_text(SECRET + "\n", encoding="utf-8")
    (root / "settings.txt").symlink_to(root / link_target)         # an innocent name leading to it
    (root / "notes.txt").write_text("plain\n", encoding="utf-8")
    (root / "local.env").symlink_to(root / "notes.txt")              # a .env name leading elsewhere
    for rel in ("settings.txt", "local.env"):
        r = await reach.invoke("read_file", {"path": rel})
        assert not r.ok and "allow_secret_files" in r.error.message, (rel, r.content)


_ENVDIR = ["prod.env/DB_PASSWORD", "prod.env/settings.txt", "docker/app.env/API_KEY", "PROD.ENV/x",
           "prod.env./x", "prod\uff0eenv/x", "prod.env/sub/deeper/TOKEN"]


@pytest.mark.parametrize("rel", _ENVDIR)
async def test_a_folder_named_name_dot_env_holds_env_values(tmp_path: Path, rel: str) -> None:
    """An envdir (``envdir ./prod.env cmd``): each file's content is a variable's value."""
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(SECRET + "\n", encoding="utf-8")
    await _refused_everywhere(reach, root, rel)
    r = await reach.invoke("search_files", {"text": "s3cr3t", "path": str(Path(rel).parent)})
    assert r.ok and r.content["matches"] == [] and "1 secret" in r.content["note"], r.content
    r = await reach.invoke("write_file", {"path": str(Path(rel).parent / "NEW_VAR"), "content": "planted"})
    assert not r.ok and "allow_env_writes" in r.error.message


async def test_a_folder_named_dot_env_is_still_a_virtualenv(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / ".env" / "lib").mkdir(parents=True)
    (root / ".env" / "lib" / "site.py").write_text("import os\n", encoding="utf-8")
    (root / ".env" / "lib" / "prod.env").write_text(SECRET, encoding="utf-8")
    r = await reach.invoke("read_file", {"path": ".env/lib/site.py"})
    assert r.ok and r.content["content"] == "import os\n"
    r = await reach.invoke("read_file", {"path": ".env/lib/prod.env"})  # judged by its own name
    assert not r.ok and "allow_secret_files" in r.error.message


_TEMPLATES = ["example.env", "sample.env", "template.env", "dist.env", "app.example.env", "docker/prod.sample.env",
              "prod-template.env", "prod_example.env", ".example.env", "EXAMPLE.ENV", "prod.env.example",
              "prod.env.sample"]


@pytest.mark.parametrize("rel", _TEMPLATES)
async def test_templates_in_the_suffix_form_are_read_but_not_written(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    body = "DB_PASSWORD=changeme\n"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(body, encoding="utf-8")
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == body, (rel, r.error)
    r = await reach.invoke("search_files", {"text": "changeme"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel]
    if rel.endswith(".env") or rel.endswith(".ENV"):  # the .env write guard covers every .env name
        r = await reach.invoke("write_file", {"path": rel, "content": "x", "mode": "overwrite"})
        assert not r.ok and "allow_env_writes" in r.error.message
        assert (root / rel).read_text() == body


_HONEST = ["x.envy", "prod.environment", "prod.env.md", "prod_env.txt", "prodenv", "env", "env.txt", "prod.envoy",
           "docs/env/prod.md", "prod.en", "prod.ev", "a.env.d.md", "prod.envrc.md", "environment.env.md"]


@pytest.mark.parametrize("rel", _HONEST)
async def test_honest_names_near_name_dot_env_are_read_searched_and_written(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("plain words\n", encoding="utf-8")
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == "plain words\n", (rel, r.error)
    r = await reach.invoke("search_files", {"text": "plain words"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel]
    r = await reach.invoke("write_file", {"path": rel, "content": "new words\n", "mode": "overwrite"})
    assert r.ok, r.error
    assert (root / rel).read_text() == "new words\n"


async def test_the_settings_open_name_dot_env_as_they_open_dot_env(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path, allow_env_writes=True)
    r = await reach.invoke("write_file", {"path": "docker/prod.env", "content": SECRET})
    assert r.ok, r.error
    r = await reach.invoke("read_file", {"path": "docker/prod.env"})  # writing opens nothing for reading
    assert not r.ok and "allow_secret_files" in r.error.message
    reach, root = rooted_reach(tmp_path / "b", allow_secret_files=True)
    (root / "prod.env").write_text(SECRET, encoding="utf-8")
    r = await reach.invoke("read_file", {"path": "prod.env"})
    assert r.ok and r.content["content"] == SECRET
    r = await reach.invoke("write_file", {"path": "prod.env", "content": "A=1\n", "mode": "overwrite"})
    assert r.ok, r.error
