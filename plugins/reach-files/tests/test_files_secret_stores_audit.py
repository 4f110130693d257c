"""Red team on the secret-store list, audited against the credential files real tools keep.

The list of secret stores is a deny list: a store missing from it is read, searched and
written like any file. Reading one hands the model the credentials; writing one is often
worse than reading it -- ``.aws/config``'s ``credential_process``, a kubeconfig's ``exec``,
``pip.conf``'s ``index-url``, ``.m2/settings.xml``'s mirrors and ``gpg-agent.conf``'s
``pinentry-program`` make the next ``aws``, ``kubectl``, ``pip install``, ``mvn`` or ``gpg``
run the attacker's program or install the attacker's package. Families:

* **stores missing from the list**, each against read_file, search_files (by text, and by
  name when the store is a whole folder), write_file in every mode (replacing and creating);
* **every spelling that reaches the same file** (``./``, ``//``, a trailing ``/.``, absolute,
  case, a symlink with an innocent name, a symlinked folder);
* **folders that are stores as a whole** (``.gnupg``, ``.password-store``, ``.aws``,
  gcloud's and Azure's folders): their *names* are secrets too (``.password-store/bank/
  chase.gpg`` says where the user banks), so they are neither listed nor searched by name;
* **a root inside a store** (the operator's root is ``~/.aws`` or ``~/.config``): the store
  is judged by the folders above the root too;
* honest neighbours that only look close.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import reach_files.plugin

from reach_core import Reach

SECRET = "hunter2-AUDIT-SECRET-5519"


def _reach(tmp_path: Path, root: Path | None = None, **settings: Any) -> tuple[Reach, Path]:
    root = root or tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {"reach": {"data_dir": str(tmp_path / "data")},
                              "plugins": {"reach-files": {"roots": [str(root)], **settings}}}
    return Reach(config, plugins=[("reach-files", reach_files.plugin)], strict=True), root


def _put(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# the stores, each with a line of the kind it really holds
_MISSING = {
    "pip.conf": f"[global]\nindex-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    ".pip/pip.conf": f"[global]\nindex-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    ".config/pip/pip.conf": f"[global]\nindex-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    "AppData/Roaming/pip/pip.ini": f"[global]\nindex-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    ".venv/pip.conf": f"[global]\nextra-index-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    ".m2/settings.xml": f"<settings><servers><server><password>{SECRET}</password></server></servers></settings>\n",
    ".m2/settings-security.xml": f"<settingsSecurity><master>{{{SECRET}}}</master></settingsSecurity>\n",
    ".gradle/gradle.properties": f"signing.password={SECRET}\n",
    ".ivy2/.credentials": f"realm=Sonatype\nhost=oss.example.org\nuser=ada\npassword={SECRET}\n",
    ".sbt/.credentials": f"realm=Sonatype\nuser=ada\npassword={SECRET}\n",
    ".aws/config": f"[default]\naws_secret_access_key = {SECRET}\n",
    ".aws/sso/cache/4f2a.json": f'{{"accessToken": "{SECRET}"}}\n',
    ".aws/cli/cache/9b1c.json": f'{{"Credentials": {{"SessionToken": "{SECRET}"}}}}\n',
    ".kube/configs/prod": f"users:\n- name: ada\n  user:\n    token: {SECRET}\n",
    ".kube/clusters/staging.yaml": f"users:\n- user:\n    exec:\n      command: /tmp/{SECRET}\n",
    ".kube/kubectx": f"{SECRET}\n",
    ".azure/service_principal_entries.json": f'[{{"client_secret": "{SECRET}"}}]\n',
    ".azure/azureProfile.json": f'{{"subscriptions": [{{"user": "{SECRET}"}}]}}\n',
    ".config/gcloud/configurations/config_default": f"[core]\naccount = {SECRET}\n",
    ".config/gcloud/logs/2026.12.04/00.10.00.log": f"Running [gcloud auth print-access-token]: {SECRET}\n",
    ".gnupg/gpg-agent.conf": f"pinentry-program /tmp/{SECRET}\n",
    ".gnupg/private-keys-v1.d/3A7F.key": f"Key: (private-key (rsa (d #{SECRET}#)))\n",
    ".password-store/bank/chase.gpg": f"{SECRET}\n",
    ".terraformrc": f'credentials "app.terraform.io" {{ token = "{SECRET}" }}\n',
    "terraform.rc": f'credentials "app.terraform.io" {{ token = "{SECRET}" }}\n',
    ".databrickscfg": f"[DEFAULT]\nhost = https://x.example.com\ntoken = {SECRET}\n",
    ".pulumi/credentials.json": f'{{"accessTokens": {{"https://api.pulumi.com": "{SECRET}"}}}}\n',
    ".composer/auth.json": f'{{"github-oauth": {{"github.com": "{SECRET}"}}}}\n',
    ".config/composer/auth.json": f'{{"http-basic": {{"repo.example.org": {{"password": "{SECRET}"}}}}}}\n',
    ".config/containers/auth.json": f'{{"auths": {{"quay.io": {{"auth": "{SECRET}"}}}}}}\n',
    ".bundle/config": f'BUNDLE_GEMS__EXAMPLE__COM: "ada:{SECRET}"\n',
    ".config/NuGet/NuGet.Config": f'<add key="ClearTextPassword" value="{SECRET}" />\n',
    ".config/ngrok/ngrok.yml": f"authtoken: {SECRET}\n",
    ".fly/config.yml": f"access_token: {SECRET}\n",
    ".config/doctl/config.yaml": f"access-token: {SECRET}\n",
    ".config/hcloud/cli.toml": f'[[contexts]]\ntoken = "{SECRET}"\n',
    ".snowsql/config": f"[connections]\npassword = {SECRET}\n",
    ".lein/credentials.clj": f'{{#"my\\.datomic\\.com" {{:password "{SECRET}"}}}}\n',
    ".config/sops/age/keys.txt": f"# created: 2026-12-04\n# {SECRET}\n",
    ".passwd-s3fs": f"AKIAEXAMPLE:{SECRET}\n",
    ".smbcredentials": f"username=ada\npassword={SECRET}\n",
    ".Xauthority": f"\x01\x00host\x00\x0cMIT-MAGIC-COOKIE-1{SECRET}\n",
    "AppData/Roaming/postgresql/pgpass.conf": f"db.example.com:5432:*:ada:{SECRET}\n",
    ".bash_history": f"export AWS_SECRET_ACCESS_KEY={SECRET}\n",
    ".zsh_history": f": 1733270000:0;curl -H 'Authorization: Bearer {SECRET}' https://api.example.com\n",
    ".histfile": f"mysql -u root -p{SECRET}\n",
    ".python_history": f"openai.api_key = '{SECRET}'\n",
    ".psql_history": f"ALTER USER ada PASSWORD '{SECRET}';\n",
    ".mysql_history": f"SET PASSWORD = '{SECRET}';\n",
    ".local/share/fish/fish_history": f"- cmd: export GITHUB_TOKEN={SECRET}\n",
    ".local/share/powershell/PSReadLine/ConsoleHost_history.txt": f"$env:API_KEY = '{SECRET}'\n",
    ".zhistory": f"export NPM_TOKEN={SECRET}\n",
    ".wakatime.cfg": f"[settings]\napi_key = {SECRET}\n",
    ".config/configstore/firebase-tools.json": f'{{"tokens": {{"refresh_token": "{SECRET}"}}}}\n',
    ".config/netlify/config.json": f'{{"users": {{"u": {{"auth": {{"token": "{SECRET}"}}}}}}}}\n',
    ".local/share/com.vercel.cli/auth.json": f'{{"token": "{SECRET}"}}\n',
    ".config/stripe/config.toml": f"[default]\nlive_mode_api_key = '{SECRET}'\n",
    ".config/glab-cli/config.yml": f"hosts:\n  gitlab.com:\n    token: {SECRET}\n",
    ".config/tea/config.yml": f"logins:\n- token: {SECRET}\n",
    ".circleci/cli.yml": f"token: {SECRET}\n",
    ".travis/config.yml": f"endpoints:\n  https://api.travis-ci.com/:\n    access_token: {SECRET}\n",
    ".config/helm/repositories.yaml": f"repositories:\n- name: corp\n  password: {SECRET}\n",
    "id_rsa_github": f"{SECRET}\n",
    "id_ed25519-work": f"{SECRET}\n",
    "keys/id_ecdsa.old-laptop": f"{SECRET}\n",
    "vault.kdbx": f"{SECRET}\n",
    "certs/client.p12": f"{SECRET}\n",
    "certs/client.pfx": f"{SECRET}\n",
    "android/release.jks": f"{SECRET}\n",
    "android/release.keystore": f"{SECRET}\n",
    "putty/server.ppk": f"{SECRET}\n",
    ".mozilla/firefox/abcd.default-release/logins.json": f'{{"logins": [{{"encryptedPassword": "{SECRET}"}}]}}\n',
    # spellings the fold already knows, on the new names
    "PIP.CONF": f"index-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    ".M2/Settings.XML": f"<password>{SECRET}</password>\n",
    ".aws/CONFIG": f"[default]\naws_secret_access_key = {SECRET}\n",
    ".\u0430ws/config": f"[default]\naws_secret_access_key = {SECRET}\n",  # Cyrillic а
    ".gnupg/gpg-agent.conf.bak": f"pinentry-program /tmp/{SECRET}\n",
    "pip.conf~": f"index-url = https://ada:{SECRET}@pypi.example.com/simple\n",
    ".\u0261nupg/gpg-agent.conf": f"pinentry-program /tmp/{SECRET}\n",  # script small g
    ".gnu\u200dpg/gpg-agent.conf": f"pinentry-program /tmp/{SECRET}\n",  # zero-width joiner
    ".aws./config": f"[default]\naws_secret_access_key = {SECRET}\n",  # Windows' trailing dot
    "\uff0eaws/config": f"[default]\naws_secret_access_key = {SECRET}\n",  # fullwidth full stop
    ".aws.bak/config": f"[default]\naws_secret_access_key = {SECRET}\n",
    ".password-store.old/bank/chase.gpg": f"{SECRET}\n",
    ".KUBE/Configs/prod": f"users:\n- user:\n    token: {SECRET}\n",
}


async def _refused_everywhere(reach: Reach, root: Path, rel: str) -> list[str]:
    """What each tool let through for the store at ``rel`` (empty: held)."""
    leaks = []
    r = await reach.invoke("read_file", {"path": rel})
    if r.ok or r.error.code != "invalid_arguments" or "allow_secret_files" not in r.error.message:
        leaks.append(f"read_file: {r.content if r.ok else r.error.message}")
    r = await reach.invoke("search_files", {"text": SECRET})
    if not r.ok or SECRET in str(r.content) or "secret file" not in r.content.get("note", ""):
        leaks.append(f"search_files text: {r.content if r.ok else r.error.message}")
    before = (root / rel).read_bytes()
    for mode in ("overwrite", "append"):
        r = await reach.invoke("write_file", {"path": rel, "content": "x = pwned\n", "mode": mode})
        if r.ok or r.error.code != "invalid_arguments":
            leaks.append(f"write_file {mode}")
    if (root / rel).read_bytes() != before:
        leaks.append("the file changed")
    fresh = str(Path(rel).with_name("fresh-" + Path(rel).name)) if "/" in rel and _folder_store(rel) else None
    if fresh is not None:  # inside a folder store: no new file either
        r = await reach.invoke("write_file", {"path": fresh, "content": "x\n"})
        if r.ok or (root / fresh).exists():
            leaks.append(f"write_file create {fresh}")
    return leaks


def _folder_store(rel: str) -> bool:
    low = rel.lower()
    return any(f in low for f in (".aws/", ".gnupg/", ".password-store/", ".azure/", "gcloud/", ".mozilla/", ".kube/"))


@pytest.mark.parametrize("rel", list(_MISSING))
async def test_credential_stores_missing_from_the_list_are_refused(tmp_path: Path, rel: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, rel, _MISSING[rel])
    assert await _refused_everywhere(reach, root, rel) == []


@pytest.mark.parametrize("rel", ["pip.conf", ".aws/config", ".m2/settings.xml", ".gnupg/gpg-agent.conf",
                                 ".kube/config", ".config/gcloud/configurations/config_default", ".npmrc",
                                 ".gradle/gradle.properties", ".bash_history", "deploy/id_rsa_ci"])
async def test_a_store_is_not_created_where_none_was(tmp_path: Path, rel: str) -> None:
    """A write that *creates* the store plants the program the tool runs next (credential_process,
    an exec plugin, a package index): refused like replacing one."""
    reach, root = _reach(tmp_path)
    for mode in ("create", "overwrite", "append"):
        r = await reach.invoke("write_file", {"path": rel, "content": "[default]\ncredential_process = /tmp/x\n",
                                              "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (rel, mode, r.content)
        assert "allow_secret_files" in r.error.message
    assert not (root / rel).exists() and not (root / rel).parent.is_symlink()


# ------------------------------------------------------------------- every spelling of the same file

_SPELLINGS = ["./pip.conf", ".//pip.conf", "pip.conf/.", "./.aws//config", ".aws/./config",
              ".aws/config/.", "{root}/pip.conf", "{root}//.aws/config", " pip.conf", "pip.conf ",
              "./.m2/./settings.xml", ".gnupg//gpg-agent.conf", "{root}/./.gnupg/gpg-agent.conf"]


@pytest.mark.parametrize("spelling", _SPELLINGS)
async def test_every_spelling_of_a_store_path_is_refused(tmp_path: Path, spelling: str) -> None:
    reach, root = _reach(tmp_path)
    for rel in ("pip.conf", ".aws/config", ".m2/settings.xml", ".gnupg/gpg-agent.conf"):
        _put(root, rel, _MISSING[rel if rel in _MISSING else ".m2/settings.xml"])
    path = spelling.format(root=root)
    r = await reach.invoke("read_file", {"path": path})
    assert not r.ok and r.error.code == "invalid_arguments", (path, r.content if r.ok else r.error)
    for mode in ("overwrite", "append", "create"):
        r = await reach.invoke("write_file", {"path": path, "content": "x\n", "mode": mode})
        assert not r.ok and r.error.code == "invalid_arguments", (path, mode)
    assert SECRET in (root / "pip.conf").read_text()


_LINKS = [  # (the link's name, what it points at)
    ("notes.txt", "pip.conf"), ("cfg", ".aws/config"), ("m2.xml", ".m2/settings.xml"),
    ("agent.conf", ".gnupg/gpg-agent.conf"), ("hist.txt", ".bash_history"), ("db.txt", "vault.kdbx"),
]


@pytest.mark.parametrize(("name", "target"), _LINKS)
async def test_a_store_through_a_symlink_is_refused(tmp_path: Path, name: str, target: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, target, _MISSING[target])
    (root / "docs").mkdir()
    (root / "docs" / name).symlink_to(root / target)
    r = await reach.invoke("read_file", {"path": f"docs/{name}"})
    assert not r.ok and "allow_secret_files" in r.error.message, (name, r.content if r.ok else r.error)
    r = await reach.invoke("search_files", {"text": SECRET, "path": "docs"})
    assert r.ok and SECRET not in str(r.content)
    r = await reach.invoke("write_file", {"path": f"docs/{name}", "content": "x\n", "mode": "append"})
    assert not r.ok and (root / target).read_text() == _MISSING[target]


@pytest.mark.parametrize("folder", [".aws", ".gnupg", ".password-store", ".azure", ".config/gcloud"])
async def test_a_folder_store_through_a_symlinked_folder_is_refused(tmp_path: Path, folder: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, f"{folder}/inner/data.txt", f"token = {SECRET}\n")
    (root / "innocent").symlink_to(root / folder, target_is_directory=True)
    for tool, args in [("read_file", {"path": "innocent/inner/data.txt"}), ("list_dir", {"path": "innocent"}),
                       ("list_dir", {"path": "innocent/inner"}),
                       ("write_file", {"path": "innocent/inner/new.txt", "content": "x"})]:
        r = await reach.invoke(tool, args)
        assert not r.ok and r.error.code == "invalid_arguments", (tool, args, r.content if r.ok else r.error)
    assert not (root / folder / "inner" / "new.txt").exists()


# ------------------------------------------------------------------- folder stores: names are secrets too

_FOLDER_STORES = [".kube/configs", ".password-store/bank", ".gnupg/private-keys-v1.d", ".aws/sso/cache", ".azure",
                  ".config/gcloud/legacy_credentials", ".GNUPG/openpgp-revocs.d", ".Password-Store/work",
                  ".mozilla/firefox/abcd.default-release"]


@pytest.mark.parametrize("folder", _FOLDER_STORES)
async def test_the_names_inside_a_folder_store_are_not_listed(tmp_path: Path, folder: str) -> None:
    reach, root = _reach(tmp_path)
    name = f"chase-{SECRET}.gpg"
    _put(root, f"{folder}/{name}", "x\n")
    top = folder.split("/")[0] if not folder.startswith(".config") else ".config/gcloud"
    for path in {folder, top, f"./{folder}/", f"{root}/{folder}"}:
        r = await reach.invoke("list_dir", {"path": path})
        assert not r.ok and r.error.code == "invalid_arguments", (path, r.content if r.ok else r.error)
    for args in ({"pattern": "**"}, {"pattern": "**/*.gpg"}, {"pattern": "*", "path": folder},
                 {"pattern": "**", "path": top}):
        r = await reach.invoke("search_files", args)
        assert SECRET not in str(r.content if r.ok else r.error.message), (args, r.content)
    r = await reach.invoke("list_dir", {"path": str(Path(top).parent)})  # the folder itself is still shown
    assert r.ok and Path(top).name in [e["name"] for e in r.content["entries"]]


# ------------------------------------------------------------------- a root inside a store

_ROOTS_INSIDE = [  # (the root below tmp_path, a file in it)
    (".aws", "credentials"), (".aws", "config"), (".aws/sso", "cache/a.json"), (".gnupg", "gpg-agent.conf"),
    (".password-store", "bank/chase.gpg"), (".config", "gcloud/credentials.db"), (".m2", "settings.xml"),
    (".docker", "config.json"), (".config/gh", "hosts.yml"), (".kube", "config"),
]


@pytest.mark.parametrize(("where", "rel"), _ROOTS_INSIDE)
async def test_a_root_inside_a_store_does_not_open_it(tmp_path: Path, where: str, rel: str) -> None:
    """The operator made ``~/.aws`` (or ``~/.config``) a root: the folders above the root still say what it is."""
    reach, root = _reach(tmp_path, root=tmp_path / "home" / where)
    _put(root, rel, f"token = {SECRET}\n")
    r = await reach.invoke("read_file", {"path": rel})
    assert not r.ok and "allow_secret_files" in r.error.message, (where, rel, r.content if r.ok else r.error)
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and SECRET not in str(r.content)
    r = await reach.invoke("write_file", {"path": rel, "content": "x\n", "mode": "overwrite"})
    assert not r.ok and SECRET in (root / rel).read_text()


# ------------------------------------------------------------------- honest neighbours

_HONEST = [
    "pip.conf.md", "docs/pip-conf.md", "requirements.txt", "settings.xml", "m2/settings.xml",
    ".m2/repository/org/x/x-1.0.pom", "gradle.properties", "app/gradle.properties", ".gradle/caches/notes.txt",
    "aws/config", ".aws-notes.md", "config", "history.md", "bash_history.md", ".bash_history.md",
    "id_rsa.pub", "id_rsa_github.pub", "id_ed25519_howto.md", "keys/id_rsa-rotation.txt", "keys/id_ed25519-work.pub",
    "src/id_rsa_utils.py", "tests/id_ed25519_test.go",
    "id_card.txt", "keystore.md", "p12-notes.txt",
    "gnupg/README", "docs/password-store.md", "auth.json", "composer.json", "bundle/config", "config.yml",
    "logins.json.md", ".config/containers/registries.conf", ".config/fish-notes.md", ".credentials.md",
    "terraform.tfvars.example", ".ssh/config", ".ssh/known_hosts", ".circleci/config.yml", "helm/Chart.yaml",
    "stripe/README.md", "history/index.md", "fish_history.md",
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
    assert r.ok, (rel, r.error)


async def test_allow_secret_files_opens_the_new_stores(tmp_path: Path) -> None:
    reach, root = _reach(tmp_path, allow_secret_files=True)
    for rel in ("pip.conf", ".aws/config", ".gnupg/gpg-agent.conf", ".password-store/bank/chase.gpg"):
        _put(root, rel, _MISSING[rel])
        r = await reach.invoke("read_file", {"path": rel})
        assert r.ok and SECRET in r.content["content"], (rel, r.error)
    r = await reach.invoke("list_dir", {"path": ".password-store/bank"})
    assert r.ok and [e["name"] for e in r.content["entries"]] == ["chase.gpg"]
    r = await reach.invoke("write_file", {"path": ".aws/config", "content": "[default]\n", "mode": "overwrite"})
    assert r.ok


# ------------------------------------------------------------------- keys that name themselves, in any file

_AGE = "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE"  # 58 Bech32 letters
_SELF_NAMED = [
    "# created: 2026-12-04T00:00:00Z\n"
    f"# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n{_AGE}\n",
    f"{_AGE}\r\n",
    f"sops:\n  age_key: {_AGE}\n",
    f"export SOPS_AGE_KEY={_AGE}\n",
    "AGE-PLUGIN-YUBIKEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ\n",
    "untrusted comment: minisign encrypted secret key\nRWRTY0IyAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
    "untrusted comment: signify secret key\nRWRCSwAAAACzJBN2gWbXsqnjaUqFMnqAcJwK\n",
]


@pytest.mark.parametrize("body", range(len(_SELF_NAMED)))
async def test_keys_that_name_themselves_are_found_by_content(tmp_path: Path, body: int) -> None:
    reach, root = _reach(tmp_path)
    _put(root, "deploy/notes.txt", _SELF_NAMED[body] + f"# {SECRET}\n")
    r = await reach.invoke("read_file", {"path": "deploy/notes.txt"})
    assert not r.ok and "allow_secret_files" in r.error.message, r.content if r.ok else r.error
    r = await reach.invoke("search_files", {"text": SECRET})
    assert r.ok and SECRET not in str(r.content) and "1 secret" in r.content.get("note", ""), r.content


@pytest.mark.parametrize("body", [
    "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p is my public key\n",
    "Put your AGE-SECRET-KEY-1... line in keys.txt\n",
    "untrusted comment: minisign public key 5A0B1C2D\nRWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3\n",
    "untrusted comment: signify public key\nRWRCSwAAAACzJBN2gWbXsqnjaUqFMnqAcJwK\n",
])
async def test_public_halves_and_mentions_stay_readable(tmp_path: Path, body: str) -> None:
    reach, root = _reach(tmp_path)
    _put(root, "docs/keys.md", body)
    r = await reach.invoke("read_file", {"path": "docs/keys.md"})
    assert r.ok and r.content["content"] == body, r.error
