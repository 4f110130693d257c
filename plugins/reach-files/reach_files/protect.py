"""Places inside the roots that reach-files keeps its hands off, and names no path may use.

* **Version-control metadata** (``.git``, ``.hg``, ``.svn``, ``.bzr`` anywhere below a root,
  and any folder that *is* a git directory by its contents, whatever its name): a write there
  runs code on the user's machine the next time they use git (``hooks/``, ``config``'s
  ``core.fsmonitor``), or redirects git to another folder (a ``.git`` *file*).
* **.env files** (``.env``, ``.envrc``, ``.env.*``, ``NAME.env``): secrets, and shell code that direnv runs
  on ``cd``. Nothing is *written* inside a folder so named either (often a virtualenv: code
  planted there runs on its next use), but a folder's files are *read* by their own names: a
  virtualenv named ``.env`` holds ``site.py``, not secrets.
* **Secret stores** (the .env files, ``.netrc``, ``.pgpass``, ``.git-credentials``,
  ``.aws/credentials``, the credential files of common tools such as ``pip.conf`` and
  ``.m2/settings.xml``, application files that hold credentials by construction such as
  ``wp-config.php``, ``.yarnrc.yml`` and ``terraform.tfstate``, shell histories, key stores, private
  keys; whole folders such as ``.aws``, ``.gnupg`` and ``.password-store``, whose names are secrets too): reading one
  hands the model every secret in it, and writing one often runs a program (``.aws/config``'s
  ``credential_process``), so they are neither read, searched nor written unless the
  operator opens them. Shared
  templates (``.env.example``, ``.env.sample``, ``.env.template``, ``.env.dist``) are
  meant to be read. A ``*.key`` file is judged by its content when read (`key_file`): text
  in it is a key (PEM, Rails' ``master.key``, WireGuard, OpenVPN), a binary one (a Keynote
  document) is only ever described, never shown.
* **Files other programs run by themselves later** (`AUTORUN_PLACES`: husky's hooks,
  ``.vscode/``, ``.devcontainer/``, CI pipelines, ``.pre-commit-config.yaml`` and other hook managers'
  configs, the programs a package manager's config names, ``.gitconfig``,
  shell startup files; the ``core.hooksPath`` folder is found on disk by the connector): a
  write there runs code on the user's machine, or in CI with the repository's secrets, without
  the user choosing to run it. Not written unless ``allow_autorun_writes`` names the place;
  read freely.
* **reach's own state** (the data dir, the state store, the pin file, the audit log, the
  config file): reading them leaks other calls' data, writing them rewrites the rules.

Names are compared after *folding*: the forms under which some system or tool, or a
person reading a listing, takes one name for another -- NFKC (fullwidth and styled
letters), default-ignorable code points dropped (HFS+ ignores them: CVE-2014-9390),
case, Windows' trailing dots and spaces, NTFS short names (``GIT~1``) and letters from
other scripts that look the same (Cyrillic ``і`` in ``.gіt``).
"""

from __future__ import annotations

import base64
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["AUTORUN_PLACES", "autorun_place",
           "device_name", "env_file", "fold", "git_dir_after", "git_dir_on_disk", "key_file", "private_key_in",
           "python_env_on_disk", "reach_paths", "secret_store", "through_magic", "uncopied", "vcs_name",
           "yarn_programs"]

_VCS = frozenset({".git", ".hg", ".svn", ".bzr"})
_SHORT = re.compile(r"(git|hg|svn|bzr|env|envrc)~\d+")
_DEVICE = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9]|conin\$|conout\$)")
# letters of other scripts (and small capitals) that are drawn like the Latin ones of the guarded names
_LOOKALIKE = str.maketrans({
    "\u0261": "g", "\u0262": "g", "\u050d": "g",
    "\u0131": "i", "\u0456": "i", "\u03b9": "i", "\u026a": "i", "\u04c0": "i", "\u04cf": "i", "\u0269": "i",
    "\u0442": "t", "\u03c4": "t", "\u1d1b": "t",
    "\u04bb": "h", "\u029c": "h", "\u043d": "h",
    "\u0455": "s", "\ua731": "s",
    "\u03bd": "v", "\u0475": "v", "\u1d20": "v",
    "\u0578": "n", "\u0274": "n", "\u03b7": "n",
    "\u044c": "b", "\u0299": "b", "\u1d22": "z", "\u0280": "r", "\u0433": "r",
    "\u0435": "e", "\u1d07": "e", "\u03b5": "e", "\u0454": "e",
    "\u0441": "c", "\u03f2": "c", "\u043e": "o", "\u03bf": "o",
    "\u0430": "a", "\u03b1": "a", "\u0251": "a", "\u0440": "p", "\u03c1": "p", "\u0501": "d",
    "\u043a": "k", "\u03ba": "k", "\u051d": "w", "\u0443": "y", "\u0445": "x", "\u0458": "j",
})
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def fold(name: str) -> str:
    """The form of ``name`` that the comparisons use (see the module doc)."""
    if name.isascii():
        s = name.lower()
    else:
        s = unicodedata.normalize("NFKC", name).casefold().translate(_LOOKALIKE)
        s = unicodedata.normalize("NFKD", s)
        s = "".join(ch for ch in s if not unicodedata.combining(ch) and unicodedata.category(ch) != "Cf"
                    and ch not in _INVISIBLE_LETTERS)
        s = unicodedata.normalize("NFKC", s).translate(_LOOKALIKE)
    return s.rstrip(". ")


def vcs_name(name: str) -> bool:
    f = fold(name)
    return f in _VCS or (_SHORT.fullmatch(f) is not None and not f.startswith("env"))


# the marks a copy of a file gets from editors (``name~``, ``#name#``, ``.#name``), package managers
# (``.dpkg-old``, ``.rpmsave``) and people (``.bak``, ``.orig``, ``.1``, `` (copy)``): a copy of a secret
# store holds the same secrets
_COPY_MARK = re.compile(
    r"(?:~|[.~_ -](?:bak|backup|old|orig|original|save|saved|sav|copy|prev|previous|tmp|temp|swp|swo|\d+"
    r"|dpkg-[a-z]+|rpm[a-z]+|ucf-[a-z]+)|\s*\((?:copy|\d+)\)| copy)$"
)


def uncopied(folded: str) -> str:
    """A folded name without the marks of a copy (``.netrc.bak`` -> ``.netrc``, ``#.env#`` -> ``.env``)."""
    f = folded
    if f.startswith(".#") and len(f) > 2:
        f = f[2:]
    elif len(f) > 2 and f[0] == "#" and f[-1] == "#":
        f = f[1:-1]
    while True:
        mark = _COPY_MARK.search(f)
        if mark is None or mark.start() == 0:
            return f
        f = f[: mark.start()].rstrip(". ")


# `.env`/`.envrc` alone or followed by a separator: `.env.local`, `.env_local`, `.env-prod`, `.envrc.local`
# (not `.environment`); or a name that ends in `.env`: `prod.env`, `.staging.env`, Docker Compose's
# `env_file: app.env` (not `dev.envrc`, `x.environment`)
_ENV = re.compile(r"\.env(?:rc)?(?:[._~#-].*)?|.+\.env", re.DOTALL)


def env_file(name: str) -> bool:
    """A .env name (``.env``, ``.envrc``, ``.env.*``, ``NAME.env``), in any spelling `fold` knows
    and under the marks of a copy (``prod.env.bak``)."""
    f = uncopied(fold(name))
    return _ENV.fullmatch(f) is not None or f in ("env~1", "envrc~1")


# shared templates, meant to be read: `.env.example`, `.env-sample`, `.env_template`, `.env.dist`,
# and in the suffix form `example.env`, `app.sample.env`, `docker-template.env`
_ENV_TEMPLATE = re.compile(
    r"\.env[._-](?:example|sample|template|dist)|(?:.*[._-])?(?:example|sample|template|dist)\.env", re.DOTALL)
_SECRET_NAMES = frozenset({
    ".netrc", "_netrc", ".pgpass", "pgpass.conf", ".git-credentials",
    # credential stores of common tools, each read from the home folder by its own name
    ".npmrc", ".pypirc", ".my.cnf", ".mylogin.cnf", ".vault-token", ".s3cfg", ".boto", ".htpasswd", ".dockercfg",
    # pip's config (`index-url = https://user:token@...`; written, the index the next `pip install` trusts),
    # Terraform's CLI config, Databricks', s3fs', mount.cifs', sbt's and ivy's, X11's cookie
    "pip.conf", "pip.ini", ".terraformrc", "terraform.rc", ".databrickscfg", ".passwd-s3fs", ".smbcredentials",
    ".credentials", ".xauthority",
    # shell and REPL histories: `export AWS_SECRET_ACCESS_KEY=...`, `mysql -p...` as typed
    ".histfile", ".sh_history", ".history", ".zhistory", "fish_history", "consolehost_history.txt",
    ".wakatime.cfg",
    # application files that hold credentials by construction, not by chance: WordPress' installer writes
    # DB_PASSWORD and the eight AUTH_KEY/..._SALT secrets into wp-config.php (written, it is PHP run on
    # every request); Yarn's project and user config keep npmAuthToken/_authToken as .npmrc does (and
    # yarnPath runs a program: the autorun guard's too); clasp's OAuth refresh token; rclone's remotes
    # (tokens, passwords it can reverse) also outside rclone/
    "wp-config.php", ".yarnrc.yml", ".yarnrc.yaml", ".yarnrc", ".clasprc.json", "rclone.conf", ".rclone.conf",
    # Wrangler's local secrets (dotenv lines: `wrangler dev` reads them as the Worker's secrets), sentry-cli's token
    ".dev.vars", ".sentryclirc",
    # Docker's config under the name a Kubernetes image pull secret gives it
    ".dockerconfigjson",
})
# `.dev.vars.staging`: Wrangler's per-environment secrets file (not a template, `.dev.vars.example`)
_DEV_VARS = re.compile(r"\.dev\.vars[._-](?!(?:example|sample|template|dist)$).+", re.DOTALL)
# Terraform state: every attribute of every resource in clear, generated passwords and keys included
# (`terraform.tfstate`, its `.backup`, `errored.tfstate`, workspaces' and `.terraform/`'s, which holds
# the backend's access keys); not `terraform.tfstate.lock.info` nor `.tfstate.md`
_TFSTATE = re.compile(r".+\.tfstate(?:\.backup)?", re.DOTALL)
# kubeconfigs outside ~/.kube, by the names kind, k3d, cluster-api and CI give them (`kubeconfig`,
# `kubeconfig.yaml`, `kubeconfig-prod`, `prod.kubeconfig`, `ci-kubeconfig.yml`): client keys, tokens and
# `exec`, a program the next kubectl runs; not a program or document about one (`kubeconfig.go`,
# `kubeconfig-howto.md`)
_KUBECONFIG = re.compile(r"(?:.+[._-])?kubeconfig(?:[_-][^.]*)?(?:\.(?:ya?ml|json|conf|config))?", re.DOTALL)
# OpenSSH's private keys under their default names and the names people give them (`id_rsa_github`,
# `id_ed25519-work`, `id_ecdsa.old`); not the public half (`.pub`) nor a document or program about one
# (`id_rsa_notes.md`, `id_rsa_utils.py`: a key pasted into a text file is found by its content)
_ID_KEY = re.compile(r"id_(?:rsa|dsa|ecdsa|ed25519|xmss)(?:_sk)?(?:[._-].*)?", re.DOTALL)
_NOT_KEY = (".pub", ".md", ".txt", ".rst", ".adoc", ".html", ".org", ".py", ".sh", ".js", ".ts", ".go", ".rs",
            ".rb", ".java", ".c", ".h", ".json", ".yaml", ".yml", ".toml")
_HISTORY = re.compile(r"\..+_history", re.DOTALL)  # .bash_history, .zsh_history, .python_history, .psql_history
# key stores by their kind, read or written: KeePass, PKCS#12, Java key stores, PuTTY keys
_STORE_SUFFIXES = (".kdbx", ".kdb", ".p12", ".pfx", ".jks", ".keystore", ".ppk")
# folders that are secret stores as a whole, their names included (`.password-store/bank/chase.gpg` says
# where the user banks): GnuPG's home (private keys; gpg-agent.conf's pinentry-program runs on the next
# signature), pass, the AWS CLI's (config: keys and credential_process, a program the next `aws` runs;
# sso/ and cli/ token caches), the Azure CLI's, kubectl's (kubeconfigs under any name: `configs/prod`,
# `clusters/x.yaml`; a kubeconfig's `exec` runs a program on the next kubectl), browsers' profiles
# (logins.json with key4.db)
_SECRET_FOLDERS = frozenset({".gnupg", ".password-store", ".aws", ".azure", ".kube", ".mozilla", ".thunderbird",
                             # .NET's user secrets (`usersecrets/<id>/secrets.json`, `dotnet user-secrets set`)
                             "usersecrets"})
# the same, known by the folder above them: `.config/gcloud/` (credentials, tokens, configurations
# and logs of commands), GNOME's `.local/share/keyrings/`
_SECRET_FOLDERS_IN = {".config": frozenset({"gcloud"}), "share": frozenset({"keyrings"})}
# credential stores known by their folder and name (`~/.docker/config.json`, `~/.config/git/credentials`,
# kubeconfigs `~/.kube/config-prod`); a name matched whole, after folding
_SECRET_IN: dict[str, re.Pattern[str]] = {folder: re.compile(names) for folder, names in {
    ".docker": r"config\.json",
    ".kube": r"config(?:[._-].*)?|.*\.kubeconfig",
    "git": r"credentials",
    "gh": r"hosts\.ya?ml",
    ".config": r"hub",
    "rclone": r"rclone\.conf",
    ".subversion": r"auth",  # a folder: everything below it
    ".cargo": r"credentials(?:\.toml)?",
    ".gem": r"credentials",
    ".terraform.d": r"credentials\.tfrc\.json",
    ".m2": r"settings(?:-security)?\.xml",  # Maven's servers' passwords; written, its mirrors
    ".gradle": r"gradle\.properties",
    ".pulumi": r"credentials\.json",
    ".composer": r"auth\.json",
    "composer": r"auth\.json",
    "containers": r"auth\.json",  # podman, buildah, skopeo
    ".bundle": r"config",
    "nuget": r"nuget\.config",
    "ngrok": r"ngrok\.ya?ml",
    ".ngrok2": r"ngrok\.ya?ml",
    ".fly": r"config\.ya?ml",
    "doctl": r"config\.ya?ml",
    "hcloud": r"cli\.toml",
    ".snowsql": r"config",
    ".lein": r"credentials\.clj(?:\.gpg)?",
    "age": r"keys\.txt",  # sops' age keys
    # command-line clients' tokens: Firebase, Netlify, Vercel, Stripe, GitLab's glab, Gitea's tea,
    # CircleCI's and Travis' CLIs, Helm's repository passwords
    "configstore": r"firebase-tools\.json",
    "netlify": r"config\.json",
    "com.vercel.cli": r"auth\.json",
    "stripe": r"config\.toml",
    "glab-cli": r"config\.ya?ml",
    "tea": r"config\.ya?ml",
    ".circleci": r"cli\.ya?ml",
    ".travis": r"config\.ya?ml",
    "helm": r"repositories\.ya?ml",
    # Streamlit's secrets (st.secrets), kubeadm's and k3s' kubeconfigs
    ".streamlit": r"secrets\.toml",
    # tools that write their credentials to a file of their own: dbt's database logins, the MinIO client's
    # keys, Hugging Face's and Supabase's tokens, Kaggle's API key, Poetry's repository passwords
    ".dbt": r"profiles\.ya?ml",
    ".mc": r"config\.json",
    "huggingface": r"token|stored_tokens",
    ".huggingface": r"token",
    ".kaggle": r"kaggle\.json",
    ".supabase": r"access-token",
    "pypoetry": r"auth\.toml",
    "kubernetes": r"(?:super-)?admin\.conf|kubelet\.conf|controller-manager\.conf|scheduler\.conf",
    "k3s": r"k3s\.ya?ml",
}.items()}
_SECRET_SHORT = re.compile(r"(netrc|pgpass|git-cr)~\d+")
# ``.pem`` holds certificates as often as keys and ``.key`` keys as often as Keynote documents:
# a read is judged by content (`private_key_in`, `key_file`), a write by name
_SECRET_SUFFIXES = (".pem", ".key")
_AWS = re.compile(r"\.aws|aws~\d+")
_AWS_CREDENTIALS = re.compile(r"credentials|creden~\d+")


def secret_store(names: Iterable[str], *, reading: bool, env: bool = True, file: bool = True,
                 above: Iterable[str] = ()) -> bool:
    """Do the path components ``names`` (below a root) name a secret store (see the module doc)
    or lie inside one? ``file``: the last name is the file itself (``False``: every name is a
    folder, as when a search walks them or a folder is listed). For reading, a folder named ``.env`` (a virtualenv:
    ``python -m venv .env``) holds ordinary files, judged by their own names; other .env-named
    folders (``.env.d``, ``.env.local/``) hold env files under any name and stay refused. A
    template (``.env.example``) is one only for writing (``reading=False``): the .env write
    guard has always covered every ``.env.*``. ``env=False`` leaves the .env files out
    (``allow_env_writes`` opens them for writing). ``above``: the folders above the root
    (its own path), where a store that holds the root begins: a root ``~/.aws`` is inside
    one, and in a root ``~/.config`` the folder ``gcloud`` is gcloud's."""
    up = [uncopied(fold(n)) for n in above if n not in ("", "/")]
    folded = up + [uncopied(fold(n)) for n in names]
    first = len(up)  # folded[first:] are the names below the root
    last = len(folded) - 1 if file else -1
    for i, f in enumerate(folded):
        outer = folded[i - 1] if i else ""
        if f in _SECRET_FOLDERS or f in _SECRET_FOLDERS_IN.get(outer, ()) or _AWS.fullmatch(f):
            return True  # a store as a whole: everything below it, and the folder itself
        if i < first:
            continue  # above the root: only what holds the root counts
        if env and env_file(f):
            if not reading:
                return True  # the .env write guard covers every .env name: templates and folders too
            if i == last:
                if not _ENV_TEMPLATE.fullmatch(f):
                    return True  # an env file (a template such as .env.example is meant to be read)
            elif f != ".env":
                # a folder of env files: `.env.d/`, or `prod.env/` (an envdir: one file per variable,
                # its value the file's content); only a folder named exactly .env is a virtualenv
                return True
        if (f in _SECRET_NAMES or f.endswith(_STORE_SUFFIXES) or (not reading and f.endswith(_SECRET_SUFFIXES))
                or _SECRET_SHORT.fullmatch(f) or _HISTORY.fullmatch(f) or _DEV_VARS.fullmatch(f)
                # a file (a Go package `pkg/kubeconfig/` is a folder of source code)
                or (i == last and (_TFSTATE.fullmatch(f) or _KUBECONFIG.fullmatch(f)))
                or (_ID_KEY.fullmatch(f) and not f.endswith(_NOT_KEY))):
            return True
        if i and ((_AWS.fullmatch(outer) and _AWS_CREDENTIALS.fullmatch(f))
                  or ((inside := _SECRET_IN.get(outer)) is not None and inside.fullmatch(f))):
            return True
    return False


# Files other programs run by themselves later, on the user's machine or in CI with the
# repository's secrets: on opening the folder, on a commit, on creating a container, on a
# push, on starting a shell. Each place has the name the operator writes in
# ``allow_autorun_writes`` to let write_file change it.
AUTORUN_PLACES: dict[str, str] = {
    ".husky": "husky's git hooks, run by git on commit, checkout and push",
    ".vscode": "VS Code workspace settings and tasks (a task can run on opening the folder, a setting can "
               "point at the interpreter or shell VS Code starts)",
    ".devcontainer": "a dev container definition (initializeCommand runs on the host, postCreateCommand "
                     "in the container)",
    ".github/workflows": "a GitHub Actions workflow, run in CI with the repository's secrets",
    ".gitlab-ci.yml": "a GitLab CI pipeline, run in CI with the repository's secrets",
    ".circleci": "a CircleCI pipeline, run in CI with the repository's secrets",
    ".pre-commit-config.yaml": "pre-commit's hook list, run by git on commit",
    "git-hook-config": "a git hook manager's config (lefthook, overcommit, husky 4, simple-git-hooks, lint-staged), "
                       "whose commands the hooks it installed run on commit, checkout and push",
    ".gitconfig": "git's user configuration (core.fsmonitor, core.pager, aliases and hooks run code)",
    "shell-startup": "a shell startup file (.bashrc, .profile, .zshrc, fish's config ..., direnv's direnvrc and "
                     "lib/, mise's config with its hooks and env._.source), run by every new shell or on entering "
                     "the folder",
    "git-hooks": "in the folder the repository's core.hooksPath names, whose hooks git runs on commit, checkout "
                 "and push",
    "ssh": "the SSH folder (.ssh: authorized_keys lets a key log in, rc runs on every login, config's "
           "ProxyCommand runs on the next ssh)",
    "package-manager": "a package manager's project config that names a program it runs on every command "
                       "(.yarnrc.yml's yarnPath, .yarnrc's yarn-path, .pnpmfile.cjs, .cargo/config.toml's "
                       "runner and rustc-wrapper, rust-toolchain.toml's path), or a program it so runs (Yarn's "
                       ".yarn/releases, .yarn/plugins, .yarn/sdks, .yarn/unplugged, its .pnp.cjs loader)",
    "python-env": "in a Python environment (site-packages, or a folder holding pyvenv.cfg or conda-meta/: a .pth "
                  "file or sitecustomize.py there runs in every Python it starts, bin/activate in every shell "
                  "that activates it), or a sitecustomize.py or usercustomize.py anywhere (Python imports it at "
                  "startup from any folder on its path: an editable install's src/, PYTHONPATH=.)",
    "build-tool": "a build tool's wrapper or project config that names a program it downloads or runs on every "
                  "build (gradlew, mvnw and their gradle/wrapper/ and .mvn/ files, Gradle's init scripts, "
                  ".bazelrc, .bazelversion, .bazeliskrc, MSBuild's Directory.Build.props/.targets/.rsp)",
    "tool-startup": "a tool's startup file, run each time the tool starts (.gdbinit, .lldbinit, .config/gdb/, "
                    "PYTHONSTARTUP's .pythonrc.py, IPython's .ipython/, .pdbrc, .irbrc, .pryrc, .psqlrc, .sqliterc, "
                    ".Rprofile, vim's and Emacs' init files, .tmux.conf)",
    ".idea": "a JetBrains IDE's project folder (File Watchers run a program when a file is saved, startup tasks "
             "when the project opens, run configurations name the program run)",
}
_AUTORUN_FOLDERS = {".husky": ".husky", ".vscode": ".vscode", ".devcontainer": ".devcontainer",
                    ".circleci": ".circleci", ".ssh": "ssh",
                    "site-packages": "python-env", "dist-packages": "python-env",
                    # Maven's wrapper (wrapper/maven-wrapper.properties' distributionUrl: what ./mvnw downloads and
                    # runs), jvm.config (-javaagent), extensions.xml (build extensions: code in every build)
                    ".mvn": "build-tool", ".idea": ".idea", ".ipython": "tool-startup", ".emacs.d": "tool-startup",
                    ".vim": "tool-startup"}
# NTFS 8.3 names of those folders (VSCODE~1 is .vscode where short names are made)
_AUTORUN_SHORT = re.compile(r"(husky|vscode|devcon|circle|ssh|mvn|idea|ipytho)~\d+")
_AUTORUN_FILES = {
    ".devcontainer.json": ".devcontainer",
    ".gitlab-ci.yml": ".gitlab-ci.yml", ".gitlab-ci.yaml": ".gitlab-ci.yml",
    ".pre-commit-config.yaml": ".pre-commit-config.yaml", ".pre-commit-config.yml": ".pre-commit-config.yaml",
    ".gitconfig": ".gitconfig",
    "pyvenv.cfg": "python-env",
    ".yarnrc.yml": "package-manager", ".yarnrc.yaml": "package-manager", ".yarnrc": "package-manager",
    ".pnpmfile.cjs": "package-manager", ".pnpmfile.mjs": "package-manager",
    # Yarn's Plug'n'Play loader, which `yarn node`/`yarn run` make node load first, and its map; rustup's toolchain
    # file, whose `path` names the cargo and rustc every cargo command in the folder runs
    ".pnp.cjs": "package-manager", ".pnp.js": "package-manager", ".pnp.loader.mjs": "package-manager",
    ".pnp.data.json": "package-manager",  # where .pnp.cjs finds each package: which file a require runs
    "rust-toolchain": "package-manager", "rust-toolchain.toml": "package-manager",
    # direnv's own startup file, sourced before every .envrc; mise's config (trusted by path, not content:
    # its `[hooks]` and `env._.source` run on entering the folder once trusted)
    ".direnvrc": "shell-startup", "mise.toml": "shell-startup", ".mise.toml": "shell-startup",
    "mise.local.toml": "shell-startup", ".mise.local.toml": "shell-startup", ".rtx.toml": "shell-startup",
    ".rtx.local.toml": "shell-startup",
    # the wrappers a Java build is started with, and the build configs read before every build that name a
    # program: `.bazelversion` may name a fork (`user/7.0.0`) bazelisk downloads and runs, `.bazeliskrc` the
    # URL it downloads from; MSBuild imports Directory.Build.* into every project below it
    **dict.fromkeys(("gradlew", "gradlew.bat", "mvnw", "mvnw.cmd", ".bazelrc", "user.bazelrc", ".bazelversion",
                     ".bazeliskrc", "directory.build.props", "directory.build.targets", "directory.build.rsp",
                     "directory.solution.props", "directory.solution.targets"), "build-tool"),
    # Bun's `preload` scripts run before every `bun run` and `bun test`; npm's `script-shell`,
    # `node-options=--require` and `onload-script` run on every npm command (.npmrc is a secret store too)
    "bunfig.toml": "package-manager", ".bunfig.toml": "package-manager", ".npmrc": "package-manager",
    # Python imports the first sitecustomize/usercustomize on its path at startup: a project folder is on it
    # through an editable install's .pth, PYTHONPATH=. or a test runner's rootdir
    "sitecustomize.py": "python-env", "usercustomize.py": "python-env",
    # debuggers' and REPLs' startup files (gdb runs ~/.gdbinit's commands, also `python` blocks, on every start)
    ".gdbinit": "tool-startup", ".gdbearlyinit": "tool-startup", ".lldbinit": "tool-startup",
    ".pythonrc": "tool-startup", ".pythonrc.py": "tool-startup",
    # REPLs and editors that run their startup file from the current folder or the home folder on every start:
    # pdb (`pytest --pdb`, `breakpoint()`: `!import os; os.system(...)`), irb and pry (`rails console`), psql's
    # and sqlite3's `\!`/`.shell`, R's .Rprofile, vim's .exrc/.vimrc, tmux's run-shell, Emacs' init
    **dict.fromkeys((".pdbrc", ".pdbrc.py", ".irbrc", ".pryrc", ".psqlrc", ".sqliterc", ".rprofile", "rprofile.site",
                     ".vimrc", "_vimrc", ".gvimrc", ".exrc", ".nvimrc", ".nvim.lua", ".tmux.conf", ".emacs",
                     ".emacs.el"), "tool-startup"),
    **dict.fromkeys((".bashrc", ".bash_aliases", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
                     ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc",
                     ".login", ".xprofile", ".xinitrc", ".xsession"), "shell-startup"),
}


# git hook managers whose installed hook reads its config at every run: lefthook (`lefthook.yml`, any
# format, the `-local` variant, the `.lefthook/` script folders), overcommit, husky 4 (`.huskyrc*`,
# `husky.config.js`), simple-git-hooks, and lint-staged (run by the pre-commit hook most setups install)
_HOOK_CONFIG = re.compile(
    r"\.?lefthook(?:-local)?\.(?:ya?ml|json|toml)|\.overcommit\.ya?ml|\.huskyrc(?:\.(?:json|ya?ml|js|cjs))?"
    r"|husky\.config\.c?js|\.?simple-git-hooks(?:\.(?:json|c?js|mjs))?|\.lintstagedrc(?:\.(?:json|ya?ml|c?js|mjs))?"
    r"|lint-staged\.config\.(?:c?js|mjs|ts)")
_LLDBINIT = re.compile(r"\.lldbinit-.+", re.DOTALL)
_MISE_ENV = re.compile(r"\.?(?:mise|rtx)\.[^.]+(?:\.local)?\.toml")


# the programs Yarn's config names, which it runs on every command in the folder (and below): Yarn 2+'s
# `yarnPath: tools/yarn.cjs` and its plugins' `- path: tools/plugin.cjs` in `.yarnrc.yml`, Yarn 1's
# `yarn-path "./bin/yarn.js"` in `.yarnrc`; a value may be quoted and followed by a comment
_YARN_PATH = re.compile(rb"""(?m)^[ \t-]*(?:yarnPath|path|"?yarn-path"?)[ \t]*[: \t][ \t]*"""
                        rb"""(?P<v>"[^"\n]*"|'[^'\n]*'|[^\s#]+)""")
YARNRC_NAMES = (".yarnrc.yml", ".yarnrc.yaml", ".yarnrc")


def yarn_programs(data: bytes) -> list[str]:
    """The programs a ``.yarnrc.yml`` or ``.yarnrc`` names (``yarnPath``, plugins' ``path``,
    ``yarn-path``), as written: relative ones are relative to the folder of the file."""
    found = []
    for m in _YARN_PATH.finditer(data):
        value = m.group("v").strip(b"\"'").strip()
        if value:
            found.append(value.decode("utf-8", "surrogateescape"))
    return found


def autorun_place(names: Sequence[str]) -> str | None:
    """The `AUTORUN_PLACES` key of the place the path components ``names`` (below a root) lie in,
    or ``None``. Names are folded (`fold`: case, trailing dots and spaces, NFKC, ignorable code
    points, look-alikes), since the tools that run these files open them through a file system
    that may fold them too (``.VSCode`` is ``.vscode`` on macOS and Windows)."""
    folded = [fold(n) for n in names]
    for i, f in enumerate(folded):
        if f in _AUTORUN_FOLDERS:
            return _AUTORUN_FOLDERS[f]
        short = _AUTORUN_SHORT.fullmatch(f)
        if short is not None:
            return {"husky": ".husky", "vscode": ".vscode", "devcon": ".devcontainer",
                    "circle": ".circleci", "ssh": "ssh", "mvn": "build-tool", "idea": ".idea",
                    "ipytho": "tool-startup"}[short.group(1)]
        if f in (".github", "github~1") and i + 1 < len(folded) and folded[i + 1] in ("workflows", "workfl~1"):
            return ".github/workflows"
        if i > 0 and folded[i - 1] == ".config" and f in ("fish", "direnv", "mise"):
            return "shell-startup"
        if i > 0 and folded[i - 1] == ".config" and f in ("gdb", "nvim", "emacs", "tmux") and i + 1 < len(folded):
            return "tool-startup"  # ~/.config/gdb/gdbinit, nvim's init.lua, Emacs' init.el, tmux.conf
        if f == "gradle" and i + 1 < len(folded) and folded[i + 1] == "wrapper":
            return "build-tool"  # gradle-wrapper.properties' distributionUrl, gradle-wrapper.jar: run by ./gradlew
        if f == ".gradle" and i + 1 < len(folded) and (folded[i + 1] == "init.d" or (
                i + 2 == len(folded) and folded[i + 1] in ("init.gradle", "init.gradle.kts"))):
            return "build-tool"  # Gradle's init scripts: run before every build of every project
        if f in (".lefthook", ".lefthook-local") and i + 1 < len(folded):
            return "git-hook-config"  # lefthook's scripts: .lefthook/pre-commit/lint.sh
        if f in (".mise", "mise") and i + 2 == len(folded) and folded[-1] == "config.toml":
            return "shell-startup"  # .mise/config.toml, mise/config.toml
        if f == ".yarn" and i + 1 < len(folded) and folded[i + 1] in ("releases", "plugins", "sdks", "unplugged"):
            return "package-manager"  # the programs yarnPath and plugins name, the SDKs editors start
    last = folded[-1] if folded else ""
    if last in _AUTORUN_FILES:
        return _AUTORUN_FILES[last]
    if folded[-3:] == [".config", "git", "config"]:
        return ".gitconfig"
    if _LLDBINIT.fullmatch(last):
        return "tool-startup"  # .lldbinit-lldb, .lldbinit-Xcode: read by lldb when started as that program
    if _HOOK_CONFIG.fullmatch(last):
        return "git-hook-config"
    if _MISE_ENV.fullmatch(last) or folded[-2:] == [".config", "mise.toml"]:
        return "shell-startup"  # mise.production.toml, .mise.dev.local.toml, .config/mise.toml
    if folded[-2:-1] == [".cargo"] and last in ("config", "config.toml"):
        return "package-manager"
    return None


# the armour of a private key, whatever the file is called: PEM (PKCS#1, PKCS#8, SEC1, encrypted),
# OpenSSH, PGP, SSH2 (RFC 4716), PuTTY; the END line too (a file or page that starts inside a key);
# keys that name themselves in one line: age's (``AGE-SECRET-KEY-1`` and 58 Bech32 letters, what
# ``age-keygen`` prints and sops reads; Bech32 is read in either case, and rage writes it in lower
# case), minisign's and signify's secret key files
_PRIVATE_KEY = re.compile(
    rb"-----(?:BEGIN|END) (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    rb"|---- (?:BEGIN|END) SSH2 (?:ENCRYPTED )?PRIVATE KEY ----"
    rb"|PuTTY-User-Key-File-\d+:"
    rb"|AGE-(?:SECRET-KEY|PLUGIN-[A-Z0-9]+)-1[02-9AC-HJ-NP-Z]{20,}"
    rb"|untrusted comment: (?:minisign encrypted |signify )secret key"
    rb"|openssh-key-v1\x00"  # the body of an OpenSSH key, decoded from base64 that lost its armour
)
# the same in lower case, looked for apart (only where `age-` is): an alternative that ignores case
# made every search of `_PRIVATE_KEY` twice as slow
_AGE_LOWER = re.compile(rb"age-(?:secret-key|plugin-[a-z0-9]+)-1[02-9ac-hj-np-z]{20,}")
# a piece of every kind of armour `_PRIVATE_KEY` knows (for age, in both cases): what base64 holding a
# key holds encoded (`_B64_SIGNS`)
_KEY_MARKS = (b"PRIVATE KEY", b"PuTTY-User-Key-File-", b"AGE-SECRET-KEY-1", b"age-secret-key-1", b"AGE-PLUGIN-",
              b"age-plugin-", b" secret key", b"openssh-key-v1", b"service_account", b"authorized_user",
              b'"auths"', b"kind: Config")
# Credentials in JSON known by their shape rather than by an armour line: Google's (and Firebase's)
# service-account key file, `"type": "service_account"` with its `private_key` (a PEM, or its body
# alone, or with its dashes escaped as `\u002d`), and user credentials, `"type": "authorized_user"`
# with a `refresh_token` (what `gcloud auth application-default login` writes); a private JSON Web
# Key, a `"kty"` with `"d"` (RSA, EC, OKP) or an `oct` key's `"k"`, alone or in a key set, in JSON
# or YAML. A value of 16 characters at least, so a document's placeholder (`"REFRESH_TOKEN"`) is not one.
_Q = rb"[\"']?"
_GOOGLE_KIND = re.compile(_Q + rb"type" + _Q + rb"\s*:\s*" + _Q + rb"(?:service_account|authorized_user)\b")
_GOOGLE_SECRET = re.compile(_Q + rb"(?:private_key|refresh_token)" + _Q + rb"\s*:\s*" + _Q + rb"[^\s\"',}]{16,}")
_JWK_KIND = re.compile(_Q + rb"kty" + _Q + rb"\s*:\s*" + _Q + rb"(?:RSA|EC|OKP|oct|AKP)\b")
_JWK_SECRET = re.compile(rb"(?<![\w$-])" + _Q + rb"[dk]" + _Q + rb"\s*:\s*" + _Q + rb"[A-Za-z0-9_-]{16,}")
# A kubeconfig under any name (`kind: Config`, YAML or JSON) with a user's `token`, `password`,
# `client-secret` or `id-token`/`refresh-token` (an OIDC login), as CI files and Kubernetes secrets
# carry one (Cluster API's `<cluster>-kubeconfig`, Argo CD's cluster secrets, base64-encoded); and
# a registry login in Docker's config shape (`"auths": {"host": {"auth": "dXNlcjpwYXNz"}}`, what a
# Kubernetes image pull secret's `.dockerconfigjson` holds)
_KUBE_KIND = re.compile(_Q + rb"kind" + _Q + rb"[ \t]*:[ \t]*" + _Q + rb"Config\b(?!-)")
_KUBE_SECRET = re.compile(_Q + rb"(?:token|password|client-secret|id-token|refresh-token)" + _Q
                          + rb"[ \t]*:[ \t]*" + _Q + rb"[^\s\"',}]{16,}")
_DOCKER_AUTHS = re.compile(_Q + rb"auths" + _Q + rb"\s*:\s*\{")
_DOCKER_SECRET = re.compile(rb'"(?:auth|identitytoken|password|registrytoken)"\s*:\s*"[^"\s]{8,}"')
# The base64 body of a key in DER whose BEGIN/END lines were stripped, as Snowflake's, JWT signers'
# and Java apps' settings hold one (`private_key: MIIEvQIBADANBg...`): a run of base64 that starts
# with `M` (a DER SEQUENCE), decoded and judged by its first bytes (`_der_private`)
_DER_B64 = re.compile(rb"M(?<![A-Za-z0-9+/]M)[A-Za-z0-9+/]{31}")
# the algorithms of an encrypted PKCS#8 key (PBES2; PKCS#12's PBE): `06 09 2a864886f70d01050d`, `06 0a ...0c01`
_PBE_OIDS = (b"\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x05\x0d", b"\x06\x0a\x2a\x86\x48\x86\xf7\x0d\x01\x0c\x01")
# a PEM line URL-encoded, as a key travels in a query string or a form: `-----BEGIN+RSA+PRIVATE+KEY-----`,
# `%2D%2D%2D%2D%2DBEGIN%20...` (looked for only when `PRIVATE+KEY` or `PRIVATE%20KEY` is there). Each word
# is followed by exactly one separator, so the words repeat without ambiguity (nothing to backtrack over)
_SEP = rb"(?:\+|%20)"
_DASHES = rb"(?:-|%2[dD]){5}"
_PRIVATE_KEY_URL = re.compile(_DASHES + rb"(?:BEGIN|END)" + _SEP + rb"(?:[A-Z0-9]+" + _SEP + rb")*PRIVATE" + _SEP
                              + rb"KEY(?:" + _SEP + rb"BLOCK)?" + _DASHES)
_URL_MARKS = (b"PRIVATE+KEY", b"PRIVATE%20KEY")
# a dash written as an escape of the text around it: JSON's and JavaScript's `\u002d`, YAML's and
# Python's `\x2d`, an HTML or XML character reference (`&#45;`, `&#x2d;`). A PEM line or an age key
# whose dashes are escaped so is the same key once the file is parsed
_DASH_ESCAPE = re.compile(rb"\\u002[dD]|\\x2[dD]|&#(?:0*45|[xX]0*2[dD]);")
_DASH_MARKS = (b"\\u002", b"\\x2", b"&#")


def _stable_b64(text: bytes) -> list[bytes]:
    """The base64 characters that encode ``text`` at each of the three byte alignments, only those
    that ``text``'s own bits fill (the characters at either end depend on the bytes around it)."""
    out = []
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + text + b"\0\0")
        out.append(enc[-(-8 * pad // 6):8 * (pad + len(text)) // 6])
    return out


# Base64 that holds a private key: Kubernetes secrets and Helm values carry PEM keys so
# (``tls.key: LS0tLS1CRUdJTi...``), and GCP service-account JSON, whose ``private_key`` is a PEM, is
# base64-encoded whole (``key.json: ewogICJ0eXBlIjog...``), where the PEM lies at any alignment;
# wrapped 76 to a line in a YAML block; or encoded twice (a Helm b64enc of a value that already was).
# Keys that name themselves travel the same way (an age ``keys.txt``, a minisign key, a PuTTY file in
# a Kubernetes secret). A mark of `_KEY_MARKS` encoded at every alignment is in all of them, and
# encoded twice, for the marks that travel so (a Helm b64enc of a PEM, an age key, an OpenSSH body or a service
# account's JSON that already was base64): the quick test before the base64-looking runs are decoded.
# Each sign costs a pass over the file, so not every mark is looked for twice encoded.
_B64_SIGNS = tuple(dict.fromkeys(
    [*(sign for mark in _KEY_MARKS for sign in _stable_b64(mark)),
     *(twice for mark in (b"PRIVATE KEY", b"AGE-SECRET-KEY-1", b"service_account", b"openssh-key-v1")
       for once in _stable_b64(mark) for twice in _stable_b64(once))]))
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_ALT = bytes.maketrans(b"-_", b"+/")
_B64_MASK = bytes(ord("A") if i in _B64_CHARS else ord(" ") for i in range(256))  # after _B64_ALT
_B64_MIN_RUN = 32  # characters: the shortest armour line (25 bytes) encoded, at any alignment, needs more
_B64_NESTING = 2

#: bytes on each side of a page of a big file that are looked at for a key (longer than any key)
KEY_REACH = 64 * 1024


def key_file(name: str) -> bool:
    """A ``*.key`` name (in any spelling `fold` knows). Read, such a file is judged by what it
    holds: text is refused whatever it says (keys without a ``BEGIN ... PRIVATE KEY`` line:
    Rails' ``master.key``, ``wg genkey``, OpenVPN's static key, age), binary (a Keynote
    document, a DER key) is described by size and type and never shown. A copy under a backup or
    editor name (``master.key.bak``, ``master.key~``) holds the same key."""
    return uncopied(fold(name)).endswith(".key")


def private_key_in(data: bytes, _depth: int = 0) -> bool:
    """Does ``data`` hold a private key (its ``-----BEGIN ... PRIVATE KEY-----`` line, its END line,
    URL-encoded; a key that names itself, such as age's; any of them base64-encoded alone or inside
    other encoded text)? A key saved as ``deploy_key``
    or ``notes.txt`` is as secret as ``id_rsa``; a certificate or a public key (``BEGIN CERTIFICATE``,
    ``BEGIN PUBLIC KEY``) is not."""
    if _PRIVATE_KEY.search(data) is not None:
        return True
    if (b"age-secret-key-1" in data or b"age-plugin-" in data) and _AGE_LOWER.search(data) is not None:
        return True
    if any(mark in data for mark in _DASH_MARKS) and _DASH_ESCAPE.search(data) is not None:
        if _PRIVATE_KEY.search(_DASH_ESCAPE.sub(b"-", data)) is not None:
            return True
    if any(mark in data for mark in _URL_MARKS) and _PRIVATE_KEY_URL.search(data) is not None:
        return True
    if ((b"service_account" in data or b"authorized_user" in data)
            and _GOOGLE_KIND.search(data) is not None and _GOOGLE_SECRET.search(data) is not None):
        return True
    if b"kty" in data and _JWK_KIND.search(data) is not None and _JWK_SECRET.search(data) is not None:
        return True
    if b"Config" in data and _KUBE_KIND.search(data) is not None and _KUBE_SECRET.search(data) is not None:
        return True
    if b"auths" in data and _DOCKER_AUTHS.search(data) is not None and _DOCKER_SECRET.search(data) is not None:
        return True
    return _depth < _B64_NESTING and _key_in_base64(data, _depth)


def _der_private(der: bytes) -> bool:
    """Do the first bytes of ``der`` begin a private key: a SEQUENCE holding version 0 and then an
    algorithm (PKCS#8) or an INTEGER (PKCS#1 RSA, DSA), version 1 and an OCTET STRING (SEC1 EC) or
    an algorithm (PKCS#8 v2), version 3 (a PKCS#12 keystore), or an encrypted PKCS#8 key's PBE
    algorithm? A certificate, a CSR and a public key start with a SEQUENCE inside the first one,
    never with these."""
    if len(der) < 8 or der[0] != 0x30:
        return False
    size = der[1]
    at = 2 + (size & 0x7F if size & 0x80 else 0)
    if size & 0x80 and not 1 <= size & 0x7F <= 3:
        return False
    rest = der[at:]
    if rest[:3] == b"\x02\x01\x00" and rest[3:4] in (b"\x30", b"\x02"):
        return True
    if rest[:3] == b"\x02\x01\x01" and rest[3:4] in (b"\x04", b"\x30"):
        return True
    if rest[:4] == b"\x02\x01\x03\x30":
        return True  # PKCS#12 (a .p12 keystore: a key and its certificate), as a Kubernetes secret carries one
    if rest[:1] == b"\x30" and len(rest) > 2:
        inner = 2 + (rest[1] & 0x7F if rest[1] & 0x80 else 0)
        return any(rest[inner:].startswith(oid) for oid in _PBE_OIDS)
    return False


def _key_in_base64(data: bytes, depth: int) -> bool:
    """A private key in the base64-looking runs of ``data`` (`_B64_SIGNS`).

    Lines are joined first, without the indentation that follows a line break (a YAML block); a
    run is decoded from each of its first four characters, since a name or a few letters glued to
    its front (``abcLS0t...``) shift where the encoded text starts; what decodes to ASCII is looked
    into once more. Runs are found with ``translate`` and ``find``: linear, in C."""
    flat = b"".join(line.lstrip(b" \t") for line in data.replace(b"\r", b"\n").split(b"\n")).translate(_B64_ALT)
    runs = flat.translate(_B64_MASK)
    least = b"A" * _B64_MIN_RUN
    start = runs.find(least)
    if start < 0:
        return False  # no run long enough (most text): the signs are not looked for
    for der in _DER_B64.finditer(data.translate(_B64_ALT)):  # lines apart: joined, `adaMIIE` hides a start
        if _der_private(base64.b64decode(der.group()[:24])):
            return True
    signs = [sign for sign in _B64_SIGNS if sign in flat]  # each run is then tried for these few only
    while signs and start >= 0:
        end = runs.find(b" ", start)
        end = len(runs) if end < 0 else end
        text = flat[start:end]
        for skip in range(4) if any(sign in text for sign in signs) else ():
            decoded = base64.b64decode(text[skip: skip + (len(text) - skip) // 4 * 4])
            if private_key_in(decoded, depth + 1) if decoded.isascii() else _PRIVATE_KEY.search(decoded):
                return True
        start = runs.find(least, end)
    return False


def device_name(name: str, platform: str = os.name) -> bool:
    """A Windows device name (``CON``, ``nul.txt``, ``COM¹``) on Windows (``platform`` is an
    ``os.name``), where opening it opens the device. On POSIX it is an ordinary file an
    honest user has (a Python package's ``aux.py``), so the rule is false there."""
    if platform != "nt":
        return False
    base = unicodedata.normalize("NFKC", name).split(".", 1)[0].rstrip(" ").casefold()
    return _DEVICE.fullmatch(base) is not None


def git_dir_on_disk(path: str) -> bool:
    """A folder git uses as its repository (bare or not, any name): ``HEAD``, ``objects/``, ``refs/``."""
    try:
        return (os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))
                and os.path.isdir(os.path.join(path, "refs")))
    except (OSError, ValueError):
        return False


def python_env_on_disk(path: str) -> bool:
    """A Python environment by its contents, whatever its name: ``pyvenv.cfg`` (venv, virtualenv,
    uv) or ``conda-meta/`` (conda)."""
    try:
        return os.path.isfile(os.path.join(path, "pyvenv.cfg")) or os.path.isdir(os.path.join(path, "conda-meta"))
    except (OSError, ValueError):
        return False


def git_dir_after(path: str, child: str, is_file: bool) -> bool:
    """Would the folder ``path`` be a git directory once ``child`` (a file, or a folder on the way
    to one) exists in it? git takes any folder with a ``HEAD`` file and ``objects/`` and ``refs/``
    folders, or with ``HEAD`` and a ``commondir`` file (a worktree's: objects, refs and config
    come from the folder it names), for a repository, and finds it from every folder below it.
    A write that adds the last of these pieces would make the files written before it (a
    ``config`` with ``core.fsmonitor``) git's own, so it counts as a write into one. The child
    is compared folded (a case-insensitive file system opens ``head`` as ``HEAD``)."""
    name = fold(child)
    try:
        def has_file(piece: str) -> bool:
            return (is_file and name == piece.lower()) or os.path.isfile(os.path.join(path, piece))

        def has_dir(piece: str) -> bool:
            return (not is_file and name == piece) or os.path.isdir(os.path.join(path, piece))

        return has_file("HEAD") and (has_file("commondir") or (has_dir("objects") and has_dir("refs")))
    except (OSError, ValueError):
        return False


def _magic(path: str) -> bool:
    return path == "/proc" or path.startswith("/proc/") or path in ("/dev/fd", "/dev/stdin", "/dev/stdout",
                                                                     "/dev/stderr") or path.startswith("/dev/fd/")


def through_magic(path: str) -> bool:
    """Does ``path`` (absolute) lead through ``/proc`` or ``/dev/fd``, by its own text or a symlink on
    the way? Those links (``/proc/self/root``, ``/proc/*/cwd``, ``/proc/*/fd/N``) name another process's
    view of the file system: not a place inside a root, whatever ``realpath`` makes of them."""
    todo = [p for p in reversed(path.split("/")) if p]
    cur = "/"
    hops = 0
    while todo:
        part = todo.pop()
        if part == ".":
            continue
        if part == "..":
            cur = os.path.dirname(cur)
            continue
        nxt = os.path.join(cur, part)
        if _magic(nxt):
            return True
        try:
            target = os.readlink(nxt)
        except (OSError, ValueError):
            cur = nxt
            continue
        hops += 1
        if hops > 40:  # a loop: realpath and the open refuse it anyway
            return False
        if target.startswith("/"):
            cur = "/"
        todo.extend(p for p in reversed(target.split("/")) if p)
    return False


_NOT_FILES = frozenset({"logging", "stderr", "stdout", "off", ""})


def reach_paths(config: Any, data_dir: Path | str, source: Path | str | None) -> list[str]:
    """reach's own files and folders (real paths): the data dir, the state store (with SQLite's
    side files), the pin file, reach-audit's log file and the config file."""
    data = os.path.realpath(os.fspath(data_dir))
    found: list[str] = [data]
    section = getattr(config, "reach", None)
    store = getattr(section, "store", None)
    if store is None:
        store_path: str | None = os.path.join(data, "reach.db")
    elif store.startswith("sqlite:///"):
        store_path = store[len("sqlite:///") - 1:] if store.startswith("sqlite:////") else store[len("sqlite:///"):]
    elif "://" in store:
        store_path = None  # a server (PostgreSQL): nothing on this disk
    else:
        store_path = store
    if store_path:
        found += [store_path + suffix for suffix in ("", "-wal", "-shm", "-journal")]
    pins = getattr(section, "pins", None)
    found.append(os.fspath(pins) if pins is not None else os.path.join(data, "pins.json"))
    plugins = getattr(config, "plugins", None)
    table = plugins.plugin_table("reach-audit") if plugins is not None and hasattr(plugins, "plugin_table") else {}
    log = table.get("log")
    if isinstance(log, str) and log.strip().lower() not in _NOT_FILES:
        found.append(log)
    if source is not None:
        found.append(os.fspath(source))
    return _unique(os.path.realpath(os.path.expanduser(p)) for p in found)


def config_source(reach: Any) -> Path | None:
    """The config file this Reach was started with: ``reach.config.source`` (the file
    ``Reach(config=path)`` or the default search read). A Reach built from a dict has
    none; then the file the default search would find (``REACH_CONFIG``, ``./reach.toml``,
    ``[tool.reach]`` in ``./pyproject.toml``), which the CLI would use, is protected."""
    known = getattr(getattr(reach, "config", None), "source", None)
    if known is not None:
        return Path(known)
    try:
        from reach_core.configfile import find_default

        return find_default()[1]
    except Exception:  # noqa: BLE001 - an unreadable config is not ours to report here
        return None


def _unique(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))
