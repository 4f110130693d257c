"""``[plugins.reach-files]`` settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: the names of `protect.AUTORUN_PLACES` (and ``*``: all of them)
AutorunPlace = Literal[".husky", ".vscode", ".devcontainer", ".github/workflows", ".gitlab-ci.yml", ".circleci",
                       ".pre-commit-config.yaml", "git-hook-config", ".gitconfig", "shell-startup", "git-hooks", "ssh",
                       "python-env", "package-manager", "build-tool", "tool-startup", ".idea", "*"]


class FilesSettings(BaseModel):
    """Where the tools may look and how much they hand back.

    ``roots`` are the only folders the tools can see; relative paths start at
    the first one. Without ``roots`` the plugin uses ``files/`` in the reach
    data directory (created on first use).
    """

    model_config = ConfigDict(extra="forbid")

    roots: list[str] = Field(default_factory=list, description="allowed folders; relative paths start at the first")
    max_read_bytes: int = Field(default=64_000, ge=256, description="bytes read_file returns per call")
    max_write_bytes: int = Field(default=1_000_000, ge=1,
                                 description="largest content write_file accepts (UTF-8 bytes)")
    max_list_entries: int = Field(default=200, ge=1, description="entries list_dir returns")
    max_search_results: int = Field(default=50, ge=1, description="largest number of hits search_files returns")
    max_search_files: int = Field(default=5_000, ge=1, description="files search_files looks at before stopping")
    max_search_entries: int = Field(
        default=100_000, ge=1, description="folder entries a search (or list_dir) reads before it stops, matched or not"
    )
    max_search_depth: int = Field(default=64, ge=1, description="folder levels a search descends below its `path`")
    max_search_file_bytes: int = Field(default=2_000_000, ge=1, description="larger files are skipped by text search")
    max_file_bytes: int = Field(default=50_000_000, ge=1,
                                description="largest a file may be after write_file (an append counts the whole file)")
    min_free_bytes: int = Field(default=64 * 1024 * 1024, ge=0,
                                description="write_file refuses a write that would leave less free disk space")
    max_write_depth: int = Field(default=32, ge=1, description="folder levels below its root a written file may be")
    allow_vcs_writes: bool = Field(default=False, description="let write_file change version-control metadata "
                                   "(.git, .hg, .svn, .bzr, git repositories by their contents)")
    allow_env_writes: bool = Field(default=False,
                                   description="let write_file change .env, .envrc, .env.* and NAME.env files")
    allow_autorun_writes: list[AutorunPlace] = Field(
        default_factory=list, description="places write_file may change although other programs run them by "
        "themselves later: \".husky\", \".vscode\", \".devcontainer\", \".github/workflows\", \".gitlab-ci.yml\", "
        "\".circleci\", \".pre-commit-config.yaml\", \"git-hook-config\" (lefthook, overcommit, husky 4, "
        "simple-git-hooks, lint-staged), \".gitconfig\", \"shell-startup\", \"git-hooks\" (a repository's "
        "core.hooksPath folder), \"ssh\" (.ssh), \"python-env\" (site-packages, a virtualenv or conda environment), "
        "\"package-manager\" (.yarnrc.yml, .yarnrc, .pnpmfile.cjs, .cargo/config.toml, rust-toolchain.toml, "
        ".yarn/releases and plugins, .pnp.cjs, bunfig.toml, .npmrc), \"build-tool\" (gradlew, mvnw, gradle/wrapper, "
        ".mvn, Gradle init scripts, .bazelrc, .bazelversion, Directory.Build.*), \"tool-startup\" (.gdbinit, "
        ".lldbinit, .pythonrc.py, .ipython), \".idea\" (JetBrains), or \"*\" for all of them")
    allow_secret_files: bool = Field(
        default=False, description="let read_file read, search_files search and write_file change secret stores "
        "(.env files, .netrc, .pgpass, .git-credentials, .aws/credentials, private keys), and show credentials in "
        "git config files and the passwords in configuration files (database.yml, .properties, .tfvars ...) unmasked")
    max_line_chars: int = Field(default=300, ge=20, description="matched lines are cut to this length")
