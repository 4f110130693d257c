"""Real PostgreSQL (REACH_TEST_POSTGRES_URL), a DBOS schema of its own per test, the scripted model server."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest


def _pg_url() -> str:
    url = os.environ.get("REACH_TEST_POSTGRES_URL")
    if not url:
        if os.environ.get("REACH_REQUIRE_SERVICES"):
            pytest.fail("REACH_TEST_POSTGRES_URL is not set (source /work/services.env or run .ci/run)")
        pytest.skip("reach-dbos needs PostgreSQL: set REACH_TEST_POSTGRES_URL (scripts/start-postgres.sh)")
    return url


def plain_url(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@pytest.fixture
def pg_url() -> str:
    return _pg_url()


@pytest.fixture
def dbos_schema(pg_url: str) -> Iterator[str]:
    """A fresh schema for DBOS's tables, dropped afterwards (tests never see each other's runs)."""
    name = f"reach_dbos_t{uuid.uuid4().hex[:10]}"
    yield name
    with psycopg.connect(plain_url(pg_url), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests whose DBOS runs in child processes first, then the ones that start the
    in-process instance (`session_schema`), which lives until the session ends.

    DBOS migrates a new schema with CREATE INDEX CONCURRENTLY, and PostgreSQL makes each
    such index wait until every transaction of the database that began before it has
    ended: with a live instance (its background jobs hold short transactions one after
    another) a child's start-up took 20-30 s instead of 2. For the same reason this suite
    runs in one process (`[tool.reach.dev] test-workers = 1`): two workers' instances
    held each other up and the suite was no faster."""
    items.sort(key=lambda item: "session_schema" in getattr(item, "fixturenames", ()))


_SESSION: dict[str, str] = {}


@pytest.fixture(scope="session")
def session_schema() -> Iterator[str]:
    """The schema of the DBOS instance that runs inside the pytest process (one per process)."""
    url = _pg_url()
    name = f"reach_dbos_s{uuid.uuid4().hex[:10]}"
    _SESSION["schema"] = name
    yield name
    from reach_dbos.runner import shutdown

    shutdown()
    with psycopg.connect(plain_url(url), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(autouse=True)
def _close_checkpoint_connections_of_finished_loops() -> Iterator[None]:
    """Close the idle checkpoint connections kept for event loops that are closed.

    reach-dbos keeps a few autocommit connections per event loop (a connection belongs to
    its loop); a server has one loop, but each test here has its own, and a closed loop's
    idle connections stayed open until garbage collection: about 1.5 per test, which ran the
    shared PostgreSQL out of connection slots (100) over the whole suite."""
    yield
    from reach_dbos import checkpoint

    for loop, pool in list(checkpoint._CONFIG.pools.items()):
        if loop.is_closed():
            while pool.idle:
                pool.idle.pop().pgconn.finish()
            checkpoint._CONFIG.pools.pop(loop, None)
