"""Scale-out figures: calls per second through 1, 2 and 3 ``reach serve http``
processes on one PostgreSQL and one Redis, and the per-call cost of the
PostgreSQL store against SQLite inside one process.

Needs the services (the lead's ``.ci/run`` starts them)::

    eval "$(bash scripts/start-postgres.sh)"; eval "$(bash scripts/start-redis.sh)"
    python bench/bench_scaleout.py

Honest reading: the load generator runs on the same machine as the servers and
PostgreSQL; with 2 cores, a third server process competes with the rest for
CPU, so the curve flattens early. Figures are medians of ``BENCH_ROUNDS``.
Every call goes through the whole pipeline including an audit row.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import structlog

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


from reach_core import connector  # noqa: E402
from reach_core.testing import make_reach  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOOLS_DIR = ROOT / "tests" / "scaleout"  # reach_scaleout_tools.py: the served tools
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
CALLS = int(os.environ.get("BENCH_CALLS", "2000"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "24"))
N_LOCAL = int(os.environ.get("BENCH_N", "1500"))


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def _drop(url: str) -> None:
    import psycopg

    from reach_core.stores.postgres import _split_url

    conninfo, schema = _split_url(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# ------------------------------------------------------------------ in-process store cost
@connector(risk="write")
async def book(slot: int) -> int:
    """Book a slot."""
    return slot


@connector(risk="read")
async def peek(slot: int) -> int:
    """Peek at a slot."""
    return slot


async def _per_call(config: dict[str, Any]) -> dict[str, float]:
    reach = make_reach(config=config)
    reach.register(book)
    reach.register(peek)
    await reach.start()
    await reach.invoke("peek", {"slot": 0})
    await reach.invoke({"id": "w", "name": "book", "arguments": {"slot": 0}}, idempotency_key=f"warm-{uuid.uuid4()}")
    out: dict[str, float] = {}
    for label, make in (
        ("read, daily budget", lambda i: reach.invoke("peek", {"slot": i})),
        ("write, ledger key", lambda i: reach.invoke({"id": f"c{i}", "name": "book", "arguments": {"slot": i}},
                                                      idempotency_key=f"k-{uuid.uuid4().hex}")),
    ):
        samples = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            for i in range(N_LOCAL // 5):
                r = await make(i)
                assert r.ok, r.error
            samples.append((time.perf_counter() - t0) / (N_LOCAL // 5) * 1e6)
        out[f"{label}, sequential µs/call"] = statistics.median(samples)
        samples = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            results = await asyncio.gather(*(make(i) for i in range(N_LOCAL)))
            assert all(r.ok for r in results)
            samples.append(N_LOCAL / (time.perf_counter() - t0))
        out[f"{label}, {N_LOCAL} at once, calls/s"] = statistics.median(samples)
    await reach.aclose()
    return out


def bench_store_cost(pg_base: str) -> None:
    print("== per-call cost of the state store (one process, pipeline + guard rails, no audit) ==")
    with tempfile.TemporaryDirectory() as tmp:
        base = {"connectors": {"peek": {"daily_budget": 10**9}}}
        sqlite = asyncio.run(_per_call({**base, "reach": {"data_dir": tmp}}))
        url = _with_schema(pg_base, f"reach_bench_{uuid.uuid4().hex[:8]}")
        try:
            pg = asyncio.run(_per_call({**base, "reach": {"data_dir": tmp, "store": url}}))
        finally:
            _drop(url)
    print(f"{'':52s} {'SQLite':>10s} {'PostgreSQL':>11s}")
    for key in sqlite:
        print(f"{key:52s} {sqlite[key]:10.0f} {pg[key]:11.0f}")


# ------------------------------------------------------------------ servers
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(workdir: Path, pg_url: str, redis_url: str, token: str) -> Path:
    path = workdir / "reach.toml"
    path.write_text(f"""
[reach]
store = "{pg_url}"
data_dir = "{workdir / 'data'}"
log_calls = false
default_timeout = 5

[limits]
storage = "{redis_url}"

[agents.bench]
rate_limit = "1000000/hour"

[plugins.reach-serve]
tokens = {{ "{token}" = "bench" }}

[plugins.reach-audit]
log = "off"
otel = false
""")
    return path


def _site(workdir: Path) -> Path:
    info = workdir / "site" / "reach_scaleout_tools-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: reach-scaleout-tools\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[reach]\nreach-scaleout-tools = reach_scaleout_tools\n")
    return workdir / "site"


def _start(workdir: Path, config: Path, ports: list[int]) -> list[subprocess.Popen[bytes]]:
    env = dict(os.environ)
    env.update({
        "REACH_PLUGINS": "reach-audit,reach-serve,reach-scaleout-tools",
        "PYTHONPATH": os.pathsep.join([str(_site(workdir)), str(TOOLS_DIR), env.get("PYTHONPATH", "")]),
        "REACH_SCALEOUT_EFFECTS": str(workdir / "effects.log"),
    })
    procs = [subprocess.Popen(
        [sys.executable, "-c", "from reach_core.cli import main; main()", "--config", str(config),
         "serve", "http", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=open(workdir / f"s{port}.log", "wb"),  # noqa: SIM115
    ) for port in ports]
    from reach_serve.testing import wait_ready

    for port, proc in zip(ports, procs, strict=True):
        wait_ready(f"http://127.0.0.1:{port}", proc, timeout=60,
                   log=lambda port=port: (workdir / f"s{port}.log").read_text())
    return procs


async def _worker(host: str, port: int, token: str, jobs: Any, body_of: Any) -> None:
    """One keep-alive HTTP/1.1 connection sending requests back to back.

    A raw client on purpose: httpx's pool costs more CPU per request than the
    server under test at this concurrency, and it shares the 2 cores."""
    import json

    reader, writer = await asyncio.open_connection(host, port)
    head = (f"POST /v1/invoke HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: ")
    try:
        for i in jobs:
            body = json.dumps(body_of(i)).encode()
            writer.write(f"{head}{len(body)}\r\n\r\n".encode() + body)
            status = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            data = json.loads(await reader.readexactly(length))
            assert b" 200 " in status and data["ok"], data
    finally:
        writer.close()


async def _load(urls: list[str], token: str, body_of: Any) -> float:
    targets = [tuple(u.removeprefix("http://").split(":")) for u in urls]

    async def run(n: int) -> None:
        jobs = iter(range(n))
        await asyncio.gather(*(
            _worker(targets[w % len(targets)][0], int(targets[w % len(targets)][1]), token, jobs, body_of)
            for w in range(CONCURRENCY)
        ))

    await run(CONCURRENCY * 2)  # warm every server's connections and caches
    t0 = time.perf_counter()
    await run(CALLS)
    return CALLS / (time.perf_counter() - t0)


def bench_instances(pg_base: str, redis_url: str) -> None:
    print(f"\n== calls/s through N `reach serve http` processes ({os.cpu_count()} cores; "
          f"{CALLS} calls, {CONCURRENCY} in flight, load generator on the same machine) ==")
    mixes = {
        "read (rate limit in Redis, audit row)": lambda i: {"name": "echo", "arguments": {"n": i}},
        "write (ledger claim + outcome, audit row)": lambda i: {
            "name": "charge", "arguments": {"amount": i}, "idempotency_key": uuid.uuid4().hex},
    }
    rows: dict[str, list[float]] = {m: [] for m in mixes}
    for n in (1, 2, 3):
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            url = _with_schema(pg_base, f"reach_bench_{uuid.uuid4().hex[:8]}")
            token = f"tok-{uuid.uuid4().hex}"
            ports = [_free_port() for _ in range(n)]
            procs = _start(workdir, _config(workdir, url, redis_url, token), ports)
            try:
                urls = [f"http://127.0.0.1:{p}" for p in ports]
                for mix, body_of in mixes.items():
                    rows[mix].append(statistics.median(asyncio.run(_load(urls, token, body_of)) for _ in range(ROUNDS)))
            finally:
                for p in procs:
                    p.send_signal(signal.SIGTERM)
                for p in procs:
                    p.wait(30)
                _drop(url)
    print(f"{'':44s} {'1 inst':>8s} {'2 inst':>8s} {'3 inst':>8s}")
    for mix, values in rows.items():
        print(f"{mix:44s} " + " ".join(f"{v:8.0f}" for v in values))


def main() -> None:
    pg = os.environ.get("REACH_TEST_POSTGRES_URL")
    redis_url = os.environ.get("REACH_TEST_REDIS_URL")
    if not pg or not redis_url:
        raise SystemExit('set REACH_TEST_POSTGRES_URL and REACH_TEST_REDIS_URL: '
                         'eval "$(bash scripts/start-postgres.sh)"; eval "$(bash scripts/start-redis.sh)"')
    bench_store_cost(pg)
    bench_instances(pg, redis_url)


if __name__ == "__main__":
    main()
