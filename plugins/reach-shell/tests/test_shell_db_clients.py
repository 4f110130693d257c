"""Database shells whose arguments are commands: sqlite3 and psql.

sqlite3's shell runs `.shell`/`.system` commands and `edit()`, and reads and writes any file
with `readfile()`/`writefile()`, `.output`, `.read`, `.import`, ATTACH, VACUUM INTO, all from
the SQL and dot commands given as arguments (a statement is no path the check reads, and
`'/else' || 'where'` builds one anyway): each of these ran through reach. sqlite3 now always
runs in its `-safe` mode and `-nonce` (safe mode's escape) is refused. psql's meta-commands
run programs (`\\!`, `\\copy … to program`, `\\o |cmd`, backticks) and read client files
(`\\lo_import`, `\\i`): an argument may hold one plain describing command (`\\dt`) only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, lexists

from reach_core import InvalidArguments


@pytest.fixture
def mark(tmp_path: Path) -> Path:
    return tmp_path / "MARK"


def _sqlite_attacks(mark: Path, outside: Path) -> list[list[str]]:
    secret, half = outside / "secret.txt", len(str(outside)) // 2
    pieces = f"'{str(secret)[:half]}' || '{str(secret)[half:]}'"
    return [
        ["db.sqlite", f".shell touch {mark}"],
        ["db.sqlite", f".system touch {mark}"],
        ["-cmd", f".shell touch {mark}", ":memory:", "select 1"],
        ["--cmd", f".system touch {mark}", ":memory:"],
        [":memory:", f"select edit('x', 'touch {mark}; true')"],
        [":memory:", f"select readfile('{secret}')"],
        [":memory:", f"select readfile({pieces})"],
        [":memory:", f"select writefile('{mark}', 'x')"],
        [":memory:", f"vacuum into '{mark}'"],
        [":memory:", f"attach '{mark}' as m; create table m.t(a)"],
        [":memory:", f".output {mark}", "select 1"],
        [":memory:", f".once {mark}", "select 1"],
        [":memory:", f".read {secret}"],
        [":memory:", ".mode csv", f".import {secret} t", "select name from pragma_table_info('t')"],
        [":memory:", f".save {mark}"],
        [":memory:", f".backup {mark}"],
        [":memory:", f".log {mark}", "select 1"],
        ["-init", "init.sql", ":memory:", "select 1"],
        ["--init", "init.sql", ":memory:"],
        ["-nonce", "n1", ":memory:", ".nonce n1", f".shell touch {mark}"],
        ["--nonce", "n1", ":memory:", ".nonce n1", f".shell touch {mark}"],
    ]


@pytest.mark.parametrize("index", range(21))
async def test_sqlite3_runs_nothing_and_touches_no_file_outside(
    root: Path, outside: Path, mark: Path, index: int
) -> None:
    (root / "init.sql").write_text(f".shell touch {mark}\nselect readfile('{outside / 'secret.txt'}');\n")
    tool = RunCommand(ShellSettings(root=root, commands={"sqlite3": {}}))
    content = None
    try:
        content = await tool.execute({"command": "sqlite3", "args": _sqlite_attacks(mark, outside)[index]})
    except InvalidArguments as refused:
        assert "reach-shell refuses" in refused.message or "root" in refused.message
    assert not lexists(mark), content
    assert SECRET not in str(content)


@pytest.mark.parametrize("index", range(21))
def test_without_safe_mode_sqlite3_does_it(root: Path, outside: Path, mark: Path, index: int) -> None:
    """Control: the same arguments to sqlite3 itself run the command, read or write the file."""
    (root / "init.sql").write_text(f".shell touch {mark}\nselect readfile('{outside / 'secret.txt'}');\n")
    args = _sqlite_attacks(mark, outside)[index]
    done = subprocess.run([shutil.which("sqlite3") or "sqlite3", *args], cwd=root, capture_output=True,
                          text=True, check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(root)})
    assert os.path.lexists(mark) or SECRET in done.stdout + done.stderr, (args, done.stderr)


async def test_sqlite3_still_answers_sql(root: Path) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"sqlite3": {}}))
    done = await tool.execute({"command": "sqlite3", "args": [
        "db.sqlite", "create table t(a); insert into t values ('x' || 'y'); select a from t;", ".tables"]})
    assert (done["exit_code"], done["stdout"]) == (0, "xy\nt\n"), done
    done = await tool.execute({"command": "sqlite3", "args": ["-json", "db.sqlite", "select a from t"]})
    assert done["stdout"].strip() == '[{"a":"xy"}]', done


def _psql_attacks(mark: Path) -> list[list[str]]:
    return [
        ["-c", f"\\! touch {mark}"],
        ["-c", f"  \\!touch {mark}"],
        ["-c", f"\\copy (select 1) to program 'touch {mark}'"],
        ["-c", f"select 1 \\g |touch {mark}"],
        ["-c", f"\\o |touch {mark}", "-c", "select 1"],
        ["-c", f"\\set x `touch {mark}`"],
        ["-c", f"\\dt `touch {mark}`"],
        ["-c", "\\lo_import 'secret'"],
        ["-c", "\\i script.sql"],
        ["-c", "\\ir script.sql"],
        ["--command", f"\\! touch {mark}"],
        [f"--command=\\! touch {mark}"],
        [f"-c\\! touch {mark}"],
        ["-o", f"|touch {mark}", "-c", "select 1"],
        [f"-o|touch {mark}", "-c", "select 1"],
        [f"--output=|touch {mark}", "-c", "select 1"],
        [f"--out=| touch {mark}", "-c", "select 1"],
        ["-f", "script.sql"],
        ["--file=script.sql"],
        ["-qf", "script.sql"],
    ]


@pytest.mark.parametrize("index", range(20))
async def test_psql_meta_commands_that_run_programs_or_read_files_are_refused(
    root: Path, mark: Path, index: int
) -> None:
    (root / "script.sql").write_text(f"\\! touch {mark}\n")
    tool = RunCommand(ShellSettings(root=root, commands={"psql": {}}))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "psql", "args": ["-X", *_psql_attacks(mark)[index]]})
    assert "reach-shell refuses" in refused.value.message
    assert not lexists(mark)


def _pg_url() -> str:
    url = os.environ.get("REACH_TEST_POSTGRES_READ_URL", "")
    if not url:
        reason = "REACH_TEST_POSTGRES_READ_URL is not set (bash scripts/start-postgres.sh prints it)"
        if os.environ.get("REACH_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + " (REACH_REQUIRE_SERVICES=1 forbids skipping)")
        pytest.skip(reason)
    return url.replace("postgresql+psycopg://", "postgresql://")


def test_psql_itself_runs_the_command(root: Path, mark: Path) -> None:
    """Control: with a server, `psql -c '\\! cmd'` runs cmd (the attacks above are real)."""
    subprocess.run(["psql", "-X", _pg_url(), "-c", f"\\! touch {mark}"], cwd=root, capture_output=True,
                   check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(root)}, timeout=30)
    assert mark.exists()


@pytest.mark.parametrize("args", [["-c", "select 'a' || 'b' as ab"], ["-c", "\\dt"], ["-c", "\\d+ pg_class"],
                                  ["-c", "\\l"]])
async def test_psql_sql_and_describing_commands_still_run(root: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, confine_paths=False, commands={"psql": {}}, timeout=30))
    done = await tool.execute({"command": "psql", "args": ["-X", _pg_url(), *args]})
    assert done["exit_code"] == 0, done
