"""Red-team family: psql connection strings naming files outside the root.

libpq opens the files a connection string names: `passfile` (whose passwords log in),
`sslkey`, `sslcert`, `sslrootcert`, `sslcrl`, `sslcrldir`, `servicefile`, `sslkeylogfile` (it
writes), and a `host` starting with `/` is a socket folder. The path check read only what
follows an argument's first `=`, so `host=h passfile=/elsewhere/pgpass` (any key but the first),
a URI's second parameter (`?sslmode=disable&passfile=…`, percent-encoded too) and the same
strings given to `-d`/`--dbname` went through: psql logged in with a password file outside the
root (the controls do it without reach). Each is refused now while paths are confined; a
password file inside the root still works.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from reach_shell import RunCommand, ShellSettings
from reach_shell.argv import ArgvRefused
from reach_shell.paths import check_paths
from reach_shell.programs import PSQL

from reach_core import InvalidArguments


def _server() -> dict[str, str]:
    url = os.environ.get("REACH_TEST_POSTGRES_READ_URL", "")
    if not url:
        reason = "REACH_TEST_POSTGRES_READ_URL is not set (bash scripts/start-postgres.sh prints it)"
        if os.environ.get("REACH_REQUIRE_SERVICES") == "1":
            pytest.fail(reason + " (REACH_REQUIRE_SERVICES=1 forbids skipping)")
        pytest.skip(reason)
    parts = urlparse(url.replace("postgresql+psycopg://", "postgresql://"))
    return {"host": parts.hostname or "", "port": str(parts.port or 5432), "db": parts.path.lstrip("/"),
            "user": parts.username or "", "password": parts.password or ""}


@pytest.fixture
def pg(root: Path, outside: Path) -> dict[str, str]:
    """The server, and its password in `outside/pgpass` (mode 600): a file only a read outside finds."""
    server = _server()
    pgpass = outside / "pgpass"
    pgpass.write_text(f"*:*:*:*:{server['password']}\n")
    pgpass.chmod(0o600)
    return {**server, "abs": str(pgpass), "rel": "../outside/pgpass"}


def _attacks(s: dict[str, str]) -> list[list[str]]:
    base = f"host={s['host']} port={s['port']} dbname={s['db']} user={s['user']}"
    uri = f"postgresql://{s['user']}@{s['host']}:{s['port']}/{s['db']}"
    conninfos = [
        f"{base} passfile={s['abs']}",
        f"{base} passfile={s['rel']}",
        f"{base} passfile='{s['abs']}'",
        f"{base} passfile = {s['abs']}",
        f"{base}\tpassfile=\t{s['rel']}",
        f"{base}\npassfile={s['abs']}",
        f"{base}\r\fpassfile  =  '{s['rel']}'",
        f"   {base}\vpassfile='{s['abs']}'   ",
    ]
    uris = [
        f"{uri}?sslmode=disable&passfile={s['abs']}",
        f"{uri}?sslmode=disable&passfile={quote(s['abs'], safe='')}",
        f"{uri}?connect_timeout=10&pass%66ile={quote(s['rel'], safe='')}",
        f"postgres://{s['user']}@{s['host']}:{s['port']}/{s['db']}?application_name=x&passfile={s['rel']}",
    ]
    return ([[c, "-tAc", "select 'in'"] for c in conninfos + uris]
            + [["-d", c, "-tAc", "select 'in'"] for c in (conninfos[0], uris[1])]
            + [[f"--dbname={conninfos[1]}", "-tAc", "select 'in'"], [f"-d{uris[2]}", "-tAc", "select 'in'"],
               ["--dbname", conninfos[4], "-tAc", "select 'in'"], ["-tAc", "select 'in'", conninfos[3]]])


_COUNT = 18


def test_the_family_is_complete(pg: dict[str, str]) -> None:
    assert len(_attacks(pg)) == _COUNT


def _psql(root: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["psql", "-X", *args], cwd=root, capture_output=True, text=True, check=False, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(root / "sub"), "LANG": "C.UTF-8"},
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("index", range(_COUNT))
def test_control_psql_logs_in_with_a_password_file_outside(root: Path, pg: dict[str, str], index: int) -> None:
    done = _psql(root, _attacks(pg)[index])
    assert done.stdout.strip() == "in", (_attacks(pg)[index], done.stderr)


@pytest.mark.parametrize("index", range(_COUNT))
async def test_psql_reads_no_password_file_outside(root: Path, pg: dict[str, str], index: int) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"psql": {}}, timeout=30))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "psql", "args": ["-X", *_attacks(pg)[index]]})
    assert "outside the root" in refused.value.message or "`~`" in refused.value.message


def test_control_psql_connects_to_a_socket_folder_outside(root: Path, outside: Path) -> None:
    """libpq goes to `<host>/.s.PGSQL.<port>` when `host` starts with `/`."""
    done = _psql(root, [f"host=localhost host={outside} port=5", "-c", "select 1"])
    assert f"{outside}/.s.PGSQL.5" in done.stderr, done.stderr


_OTHER_FILES = [
    "host=h sslkey=/elsewhere/k", "host=h sslcert=../elsewhere/c", "host=h sslrootcert='~/.postgresql/root.crt'",
    "host=h sslcrl = /etc/ssl/crl.pem", "host=h sslcrldir=/etc/ssl", "dbname=d servicefile=/etc/pg_service.conf",
    "host=h sslkeylogfile=/tmp/keys.log", "host=h,/var/run/postgresql", "port=5 host=/run/postgresql",
    "postgresql://h/d?sslmode=require&sslkey=%2Felsewhere%2Fk", "postgresql://%2Fvar%2Frun%2Fpostgresql/d",
    "postgresql://h,%2Frun%2Fpostgresql:5432/d", "postgresql:///d?port=5&host=/run/postgresql",
    "postgresql://h/d?x=1&sslcert=..%2F..%2Fc",
]


@pytest.mark.parametrize("text", _OTHER_FILES)
@pytest.mark.parametrize("shape", ["plain", "-d", "--dbname=", "-d attached"])
def test_every_file_a_connection_string_names_is_a_path(root: Path, text: str, shape: str) -> None:
    args = {"plain": [text], "-d": ["-d", text], "--dbname=": [f"--dbname={text}"], "-d attached": [f"-d{text}"]}[shape]
    with pytest.raises(ArgvRefused, match="outside the root|`~`"):
        check_paths("psql", args, root, [[root]] * len(args), PSQL)


async def test_a_password_file_inside_the_root_still_logs_in(root: Path, pg: dict[str, str]) -> None:
    (root / "pgpass").write_text(f"*:*:*:*:{pg['password']}\n")
    (root / "pgpass").chmod(0o600)
    tool = RunCommand(ShellSettings(root=root, commands={"psql": {}}, timeout=30))
    conninfo = f"host={pg['host']} port={pg['port']} dbname={pg['db']} user={pg['user']} passfile=pgpass"
    done = await tool.execute({"command": "psql", "args": ["-X", conninfo, "-tAc", "select 'in'"]})
    assert done["stdout"].strip() == "in", done
    done = await tool.execute({"command": "psql", "args": [
        "-X", "-d", f"postgresql://{pg['user']}@{pg['host']}:{pg['port']}/{pg['db']}?sslmode=disable&passfile=pgpass",
        "-tAc", "select 'in'"]})
    assert done["stdout"].strip() == "in", done
