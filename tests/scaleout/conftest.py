"""Fixtures of the scale-out tests: one PostgreSQL schema and one Redis per run,
and three real ``reach serve http`` processes sharing them.

Services come from ``REACH_TEST_POSTGRES_URL`` / ``REACH_TEST_REDIS_URL``
(``eval "$(bash scripts/start-postgres.sh)"``, ``eval "$(bash scripts/start-redis.sh)"``);
without them the tests skip, unless ``REACH_REQUIRE_SERVICES=1`` (then they fail).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent


def _service(var: str, script: str) -> str:
    value = os.environ.get(var)
    if value:
        return value
    message = f'{var} is not set; start one with: eval "$(bash scripts/{script})"'
    if os.environ.get("REACH_REQUIRE_SERVICES") == "1":
        pytest.fail(message + " (REACH_REQUIRE_SERVICES=1)")
    pytest.skip(message)


def _raw_conninfo(url: str) -> str:
    from reach_core.stores.postgres import _split_url

    return _split_url(url)[0]


@pytest.fixture(scope="session")
def pg_url() -> Any:
    """A store URL on a schema of its own, dropped at the end of the session."""
    base = _service("REACH_TEST_POSTGRES_URL", "start-postgres.sh")
    psycopg = pytest.importorskip("psycopg", reason="psycopg is in reach-core's test extra")
    schema = f"reach_scaleout_{uuid.uuid4().hex[:10]}"
    yield f"{base}{'&' if '?' in base else '?'}schema={schema}"
    with psycopg.connect(_raw_conninfo(base), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def redis_url() -> str:
    pytest.importorskip("redis", reason="the redis client is in reach-core's test extra")
    return _service("REACH_TEST_REDIS_URL", "start-redis.sh")


def pg_query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the shared state directly (as an operator would), in the store's schema."""
    import psycopg

    from reach_core.stores.postgres import _split_url

    conninfo, schema = _split_url(url)
    with psycopg.connect(conninfo, autocommit=True, options=f"-c search_path={schema}") as conn:
        cur = conn.execute(sql, params)
        return cur.fetchall() if cur.description is not None else []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    """N reach serve http processes on one store and one Redis."""

    pg_url: str
    redis_url: str
    workdir: Path
    tokens: dict[str, str]  # role -> token
    agents: dict[str, str]  # role -> agent name
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{p}" for p in self.ports]

    def headers(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[role]}"}

    def effects(self, kind: str | None = None, key: str | None = None) -> list[list[str]]:
        path = self.workdir / "effects.log"
        if not path.exists():
            return []
        rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
        return [r for r in rows if (kind is None or r[0] == kind) and (key is None or r[1] == key)]

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return pg_query(self.pg_url, sql, params)

    def log_of(self, i: int) -> str:
        return (self.workdir / f"server{i}.log").read_text(errors="replace")


def write_config(workdir: Path, pg_url: str, redis_url: str, tokens: dict[str, str], agents: dict[str, str]) -> Path:
    tok = ", ".join(f'"{tokens[r]}" = "{agents[r]}"' for r in tokens)
    text = f"""
[reach]
store = "{pg_url}"
data_dir = "{workdir / 'data'}"
default_timeout = 3

[limits]
storage = "{redis_url}"

[connectors.ping]
daily_budget = 200

[agents.{agents['limited']}]
rate_limit = "20/hour"

[agents.{agents['worker']}]

[agents.{agents['ops']}]

[plugins.reach-serve]
tokens = {{ {tok} }}
operators = ["{agents['ops']}"]
sweep_interval = 0.5
stale_margin = 1.0

[plugins.reach-audit]
log = "off"
otel = false
"""
    path = workdir / "reach.toml"
    path.write_text(text)
    return path


def _plugin_site(workdir: Path) -> Path:
    """Make the tools module an installed plugin (entry point ``reach``) on PYTHONPATH."""
    site = workdir / "site"
    info = site / "reach_scaleout_tools-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reach-scaleout-tools\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[reach]\nreach-scaleout-tools = reach_scaleout_tools\n")
    return site


def start_server(cluster: Cluster, config: Path, i: int, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update({
        "REACH_PLUGINS": "reach-audit,reach-confirm,reach-serve,reach-scaleout-tools",
        "PYTHONPATH": os.pathsep.join([str(_plugin_site(cluster.workdir)), str(HERE), env.get("PYTHONPATH", "")]),
        "REACH_SCALEOUT_EFFECTS": str(cluster.workdir / "effects.log"),
    })
    env.pop("REACH_CONFIG", None)
    log = open(cluster.workdir / f"server{i}.log", "ab")  # noqa: SIM115 - owned by the child
    return subprocess.Popen(
        [sys.executable, "-c", "from reach_core.cli import main; main()", "--config", str(config),
         "serve", "http", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=cluster.workdir,
    )


@pytest.fixture(scope="module")
def cluster(pg_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    for module, dist in (("reach_serve", "reach-serve"), ("reach_audit", "reach-audit"),
                         ("reach_confirm", "reach-confirm")):
        pytest.importorskip(module, reason=f"the cluster tests run {dist}; install it (pip install -e plugins/{dist})")
    run = uuid.uuid4().hex[:8]
    workdir = tmp_path_factory.mktemp("scaleout")
    roles = ("worker", "limited", "ops")
    agents = {r: f"{r}_{run}" for r in roles}  # fresh agents: fresh Redis keys per run
    tokens = {r: f"tok-{r}-{uuid.uuid4().hex}" for r in roles}
    config = write_config(workdir, pg_url, redis_url, tokens, agents)
    c = Cluster(pg_url, redis_url, workdir, tokens, agents)
    c.ports = [_free_port() for _ in range(3)]
    try:
        # all at once: their start-up migrations race on the empty schema
        c.procs.extend(start_server(c, config, i, port) for i, port in enumerate(c.ports))
        from reach_serve.testing import wait_ready

        for i in range(3):
            wait_ready(c.urls[i], c.procs[i], timeout=40, log=lambda i=i: c.log_of(i))
        yield c
    finally:
        for p in c.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in c.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
