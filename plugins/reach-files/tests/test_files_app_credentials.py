"""Red team on application files that hold credentials by convention.

Each file below is refused by name (read, text search, every write mode, and creating it where
none was), because the program that makes it writes credentials into it by construction:
WordPress' installer writes ``DB_PASSWORD`` and eight ``AUTH_KEY``/``..._SALT`` secrets into
``wp-config.php``; ``yarn npm login`` writes ``npmAuthToken`` into ``.yarnrc.yml`` (Yarn 1's
``.yarnrc`` holds ``_authToken`` as ``.npmrc`` does); Terraform's state keeps every resource
attribute in clear, generated passwords included; Streamlit's ``secrets.toml`` is ``st.secrets``;
clasp keeps an OAuth refresh token in ``.clasprc.json``; rclone's config keeps remotes' tokens
wherever it lies; a kubeconfig outside ``~/.kube`` (kind, k3s, kubeadm, CI) holds client keys,
tokens and ``exec``, a program the next ``kubectl`` runs. Families: the stores; every spelling
the fold knows (case, trailing dots and spaces, fullwidth, look-alike letters, ignorable code
points, copies, ``./``, absolute); symlinks with innocent names; honest neighbours that only look
close (templates, lock files, documents and programs about them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "hunter2-APPCRED-SECRET-7741"


def _reach(tmp_path: Path, **settings: Any) -> tuple[Reach, Path]:
    root = tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"reach": {"data_dir": str(tmp_path / "data")},
                              "plugins": {"reach-files": {"roots": [str(root)], **settings}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True), root


def _put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


_WP = ("<?php\ndefine( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\n"
       f"define( 'DB_PASSWORD', '{SECRET}' );\ndefine( 'AUTH_KEY', 'x]Q{SECRET}' );\n$table_prefix = 'wp_';\n")
_YARN = f'nodeLinker: node-modules\nnpmRegistryServer: "https://npm.example.com"\nnpmAuthToken: "{SECRET}"\n'
_YARN1 = f'"//npm.example.com/:_authToken" "{SECRET}"\nregistry "https://npm.example.com"\n'
_TFSTATE = ('{\n  "version": 4,\n  "resources": [{"type": "random_password", "instances": [{"attributes": '
            f'{{"result": "{SECRET}"}}}}]}}]\n}}\n')
_KUBE = ("apiVersion: v1\nkind: Config\nclusters:\n- cluster: {server: 'https://10.0.0.1:6443'}\n  name: kind\n"
         f"users:\n- name: admin\n  user:\n    token: {SECRET}\n")
_STORES = {
    "wp-config.php": _WP,
    "public_html/wp-config.php": _WP,
    ".yarnrc.yml": _YARN,
    "web/.yarnrc.yml": _YARN,
    ".yarnrc": _YARN1,
    "terraform.tfstate": _TFSTATE,
    "infra/terraform.tfstate.backup": _TFSTATE,
    "infra/terraform.tfstate.d/prod/terraform.tfstate": _TFSTATE,
    "infra/.terraform/terraform.tfstate": '{"backend": {"config": {"access_key": "' + SECRET + '"}}}\n',
    "infra/errored.tfstate": _TFSTATE,
    ".streamlit/secrets.toml": f'[connections.db]\npassword = "{SECRET}"\n',
    "app/.streamlit/secrets.toml": f'OPENAI_API_KEY = "{SECRET}"\n',
    ".clasprc.json": f'{{"token": {{"refresh_token": "{SECRET}"}}}}\n',
    "rclone.conf": f"[drive]\ntype = drive\ntoken = {{\"access_token\":\"{SECRET}\"}}\n",
    "backup/.rclone.conf": f"[s3]\ntype = s3\nsecret_access_key = {SECRET}\n",
    "kubeconfig": _KUBE,
    "kubeconfig.yaml": _KUBE,
    "ci/kubeconfig-prod": _KUBE,
    "ci/prod.kubeconfig": _KUBE,
    "ci/kind-kubeconfig.yml": _KUBE,
    "etc/kubernetes/admin.conf": _KUBE,
    "etc/rancher/k3s/k3s.yaml": _KUBE,
}


async def _leaks(reach: Reach, root: Path, rel: str, path: str | None = None) -> list[str]:
    """What each tool let through for the store at ``rel``, asked for as ``path`` (empty: held)."""
    path = path or rel
    leaks = []
    r = await reach.invoke("read_file", {"path": path})
    if r.ok or r.error.code != "invalid_arguments" or "allow_secret_files" not in r.error.message:
        leaks.append(f"read_file: {r.content if r.ok else r.error.message}")
    r = await reach.invoke("search_files", {"text": SECRET})
    if not r.ok or SECRET in str(r.content) or "secret file" not in r.content.get("note", ""):
        leaks.append(f"search_files text: {r.content if r.ok else r.error.message}")
    before = (root / rel).read_bytes()
    for mode in ("overwrite", "append", "create"):
        r = await reach.invoke("write_file", {"path": path, "content": "yarnPath: /tmp/pwn.js\n", "mode": mode})
        if r.ok or r.error.code != "invalid_arguments":
            leaks.append(f"write_file {mode}")
    if (root / rel).read_bytes() != before:
        leaks.append("the file changed")
    return leaks


@pytest.mark.parametrize("rel", list(_STORES))
async def test_application_credential_files_are_refused(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, rel, _STORES[rel])
    assert await _leaks(reach, root, rel) == []


@pytest.mark.parametrize("rel", list(_STORES))
async def test_they_are_not_created_where_none_was(tmp_path: Path, rel: str) -> None:
    """Planting one is the worse half: a yarnPath, a kubeconfig's exec, PHP run on every request."""
    reach, root = _reach(tmp_path)
    for mode in ("create", "overwrite", "append"):
        r = await reach.invoke("write_file", {"path": rel, "content": "yarnPath: /tmp/pwn.js\n", "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (rel, mode, r.content if r.ok else r.error)
    assert not (root / rel).exists()


# every spelling that a case-insensitive or Unicode-folding file system, or a person, takes for the name
_SPELLINGS = {
    "WP-CONFIG.PHP": "wp-config.php", "Wp-Config.Php": "wp-config.php", "wp-config.php.": "wp-config.php",
    "wp-config.php ": "wp-config.php", "wp-c\u043enfig.php": "wp-config.php", "wp-con\u200bfig.php": "wp-config.php",
    "\uff57\uff50-config.php": "wp-config.php", "wp-config.php.bak": "wp-config.php", "wp-config.php~": "wp-config.php",
    "wp-config.php.orig": "wp-config.php", "#wp-config.php#": "wp-config.php", "wp-config.php.save": "wp-config.php",
    ".YARNRC.YML": ".yarnrc.yml", ".yarnrc.yaml": ".yarnrc.yml", ".yarnrc.yml.": ".yarnrc.yml",
    ".yarnrc.yml.bak": ".yarnrc.yml", "\uff0eyarnrc.yml": ".yarnrc.yml", ".y\u0430rnrc.yml": ".yarnrc.yml",
    "Terraform.TFSTATE": "terraform.tfstate", "terraform.tfstate.": "terraform.tfstate",
    "terraform.tfstate.1": "terraform.tfstate", "terraform.tfstate~": "terraform.tfstate",
    "terraform.tf\u0455tate": "terraform.tfstate", "prod.TFSTATE.BACKUP": "terraform.tfstate",
    ".Streamlit/Secrets.Toml": ".streamlit/secrets.toml", ".streamlit./secrets.toml ": ".streamlit/secrets.toml",
    ".streamlit/secrets.toml.bak": ".streamlit/secrets.toml", ".stre\u0430mlit/secrets.toml": ".streamlit/secrets.toml",
    ".CLASPRC.JSON": ".clasprc.json", ".clasprc.json~": ".clasprc.json", "RCLONE.CONF": "rclone.conf",
    "rclone.conf.old": "rclone.conf", "KUBECONFIG": "kubeconfig", "Kubeconfig.YAML": "kubeconfig",
    "kubeconfig.": "kubeconfig", "kube\u0441onfig": "kubeconfig", "kubeconfig.bak": "kubeconfig",
    "kubeconfig (copy)": "kubeconfig",
}


@pytest.mark.parametrize("spelling", list(_SPELLINGS))
async def test_every_spelling_is_refused(tmp_path: Path, spelling: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, spelling, _STORES[_SPELLINGS[spelling]])
    assert await _leaks(reach, root, spelling) == []
    for path in (f"./{spelling}", f"{root}/{spelling}", f".//{spelling}"):
        r = await reach.invoke("read_file", {"path": path})
        assert not r.ok and "allow_secret_files" in r.error.message, (path, r.content if r.ok else r.error)


@pytest.mark.parametrize(("name", "target"), [
    ("notes.txt", "wp-config.php"), ("settings.yml", ".yarnrc.yml"), ("state.json", "terraform.tfstate"),
    ("secrets.txt", ".streamlit/secrets.toml"), ("cfg", "kubeconfig"), ("remote.ini", "rclone.conf"),
])
async def test_through_a_symlink_with_an_innocent_name(tmp_path: Path, name: str, target: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, target, _STORES[target])
    (root / "docs").mkdir()
    (root / "docs" / name).symlink_to(root / target)
    assert await _leaks(reach, root, target, f"docs/{name}") == []


async def test_through_a_symlinked_folder(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path)
    _put(root, ".streamlit/secrets.toml", _STORES[".streamlit/secrets.toml"])
    (root / "conf").symlink_to(root / ".streamlit", target_is_directory=True)
    assert await _leaks(reach, root, ".streamlit/secrets.toml", "conf/secrets.toml") == []


async def test_a_write_through_a_symlink_does_not_create_one(tmp_path: Path) -> None:
    """A dangling symlink named innocently that points where a store would be: the write is refused."""
    reach, root = _reach(tmp_path)
    (root / "notes.txt").symlink_to(root / "wp-config.php")
    for mode in ("create", "overwrite", "append"):
        r = await reach.invoke("write_file", {"path": "notes.txt", "content": "<?php system('id');", "mode": mode})
        assert not r.ok, mode
    assert not (root / "wp-config.php").exists() and (root / "notes.txt").is_symlink()


_HONEST = [
    "wp-config-sample.php", "docs/wp-config.php.md", "wp-content/themes/x/functions.php", "yarn.lock",
    ".yarn/releases/notes.md", "yarnrc.md", "terraform.tfstate.lock.info", "main.tf", "tfstate.md",
    "docs/terraform-tfstate.md", ".streamlit/config.toml", "streamlit/secrets.md", ".clasp.json",
    "rclone.conf.md", "docs/rclone.md", "kubeconfig.go", "kubeconfig_test.go", "pkg/kubeconfig/client.go",
    "docs/kubeconfig.md", "kubeconfig-howto.md", "etc/rancher/k3s/config.yaml", "etc/kubernetes/manifests/etcd.yaml",
]


@pytest.mark.parametrize("rel", _HONEST)
async def test_honest_neighbours_stay_readable(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    body = "example_setting = changeme\n"
    _put(root, rel, body)
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == body, (rel, r.error)
    r = await reach.invoke("search_files", {"text": "example_setting"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel] and "note" not in r.content, r.content
    r = await reach.invoke("list_dir", {"path": str(Path(rel).parent)})
    assert r.ok and Path(rel).name in [e["name"] for e in r.content["entries"]], (rel, r.error)


async def test_allow_secret_files_opens_them(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, allow_secret_files=True)
    for rel in ("wp-config.php", "terraform.tfstate", ".streamlit/secrets.toml", "kubeconfig", ".clasprc.json"):
        _put(root, rel, _STORES[rel])
        r = await reach.invoke("read_file", {"path": rel})
        assert r.ok and SECRET in r.content["content"], (rel, r.error)
    r = await reach.invoke("write_file", {"path": "wp-config.php", "content": "<?php\n", "mode": "overwrite"})
    assert r.ok


@pytest.mark.parametrize("rel", [".yarnrc.yml", "web/.yarnrc.yml", ".yarnrc", ".YarnRC.yml", ".yarnrc.yml.",
                                 ".yarnrc.yaml"])
async def test_yarn_config_stays_an_autorun_place_when_secrets_are_open(tmp_path: Path, rel: str) -> None:
    """allow_secret_files shows the token, but yarnPath still runs a program on every yarn command:
    writing it needs allow_autorun_writes too."""
    reach, root = _reach(tmp_path, allow_secret_files=True)
    _put(root, rel, _YARN)
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == _YARN
    for mode in ("overwrite", "append", "create"):
        r = await reach.invoke("write_file", {"path": rel, "content": "yarnPath: /tmp/pwn.js\n", "mode": mode})
        assert not r.ok and '"package-manager"' in r.error.message, (rel, mode, r.content if r.ok else r.error)
    assert (root / rel).read_text() == _YARN
    reach, root = _reach(tmp_path / "both", allow_secret_files=True, allow_autorun_writes=["package-manager"])
    r = await reach.invoke("write_file", {"path": rel, "content": "nodeLinker: pnp\n"})
    assert r.ok, r.error


# ------------------------------------------------------------------- tools' own credential files

_TOOL_STORES = {
    ".dev.vars": f"API_TOKEN={SECRET}\n",  # Wrangler: `wrangler dev` reads it as the Worker's secrets
    "worker/.dev.vars.staging": f"API_TOKEN={SECRET}\n",
    ".sentryclirc": f"[auth]\ntoken={SECRET}\n",
    ".dbt/profiles.yml": f"jaffle:\n  outputs:\n    dev:\n      type: postgres\n      password: {SECRET}\n",
    ".mc/config.json": f'{{"aliases": {{"s3": {{"accessKey": "AK", "secretKey": "{SECRET}"}}}}}}\n',
    ".cache/huggingface/token": f"hf_{SECRET}\n",
    ".cache/huggingface/stored_tokens": f"[work]\nhf_token = hf_{SECRET}\n",
    ".huggingface/token": f"hf_{SECRET}\n",
    ".kaggle/kaggle.json": f'{{"username": "ada", "key": "{SECRET}"}}\n',
    ".supabase/access-token": f"sbp_{SECRET}\n",
    ".config/pypoetry/auth.toml": f'[http-basic.corp]\nusername = "ada"\npassword = "{SECRET}"\n',
    ".microsoft/usersecrets/6f1e2a/secrets.json": f'{{"ConnectionStrings:Db": "Password={SECRET}"}}\n',
    "AppData/Roaming/Microsoft/UserSecrets/6f1e2a/secrets.json": f'{{"Stripe:Key": "{SECRET}"}}\n',
    # spellings and copies
    ".DEV.VARS": f"API_TOKEN={SECRET}\n", ".dev.vars.": f"API_TOKEN={SECRET}\n",
    ".dev.vars.bak": f"API_TOKEN={SECRET}\n", ".d\u0435v.vars": f"API_TOKEN={SECRET}\n",
    ".SentryCliRC": f"[auth]\ntoken={SECRET}\n", ".DBT/Profiles.YML": f"x:\n  password: {SECRET}\n",
    ".dbt/profiles.yml~": f"x:\n  password: {SECRET}\n", ".k\u0430ggle/kaggle.json": f'{{"key": "{SECRET}"}}\n',
    ".cache/HuggingFace/TOKEN": f"hf_{SECRET}\n",
}


@pytest.mark.parametrize("rel", list(_TOOL_STORES))
async def test_tools_own_credential_files_are_refused(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, rel, _TOOL_STORES[rel])
    assert await _leaks(reach, root, rel) == []


async def test_the_names_in_user_secrets_are_not_listed(tmp_path: Path) -> None:
    """.NET's user-secrets folder is a store as a whole: the project ids in it are not listed either."""
    reach, root = _reach(tmp_path)
    _put(root, f".microsoft/usersecrets/{SECRET}/secrets.json", "{}\n")
    for path in (".microsoft/usersecrets", f".microsoft/usersecrets/{SECRET}"):
        r = await reach.invoke("list_dir", {"path": path})
        assert not r.ok and r.error.code == "invalid_arguments", (path, r.content if r.ok else r.error)
    r = await reach.invoke("search_files", {"pattern": "**"})
    assert r.ok and SECRET not in str(r.content), r.content


@pytest.mark.parametrize("rel", [
    ".dev.vars.example", ".dev.vars.sample", "dev.vars", "docs/dev.vars.md", "sentryclirc.md", "profiles.yml",
    "dbt/profiles.yml", "models/schema.yml", ".mc/share/uploads.json", "mc/config.json", "huggingface/tokenizer.json",
    ".cache/huggingface/hub/models--x/config.json", "kaggle.json", ".kaggle/notes.md", "supabase/config.toml",
    ".config/pypoetry/config.toml", "secrets.json", "usersecrets.md", "pyproject.toml",
])
async def test_their_honest_neighbours_stay_readable(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    body = "example_setting = changeme\n"
    _put(root, rel, body)
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == body, (rel, r.error)
    r = await reach.invoke("search_files", {"text": "example_setting"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel] and "note" not in r.content, r.content
