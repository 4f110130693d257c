"""The state store: durable, ordered, never blocking the loop, versioned schema."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from reach_core.stores import Store, StoreClosed


async def test_execute_fetch_roundtrip_and_wal(tmp_path):
    store = Store(tmp_path / "d" / "reach.db")
    await store.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
    assert await store.execute("INSERT INTO t VALUES (?, ?)", ("a", 1)) == 1
    assert await store.executemany("INSERT INTO t VALUES (?, ?)", [("b", 2), ("c", 3)]) == 2
    assert await store.fetchall("SELECT k, v FROM t ORDER BY k") == [("a", 1), ("b", 2), ("c", 3)]
    assert await store.fetchone("SELECT v FROM t WHERE k = ?", ("b",)) == (2,)
    assert await store.fetchone("SELECT v FROM t WHERE k = ?", ("zz",)) is None
    assert (await store.fetchone("PRAGMA journal_mode"))[0] == "wal"
    assert (await store.fetchone("PRAGMA synchronous"))[0] == 2  # FULL
    await store.aclose()
    # another connection (another process would be the same) sees the committed rows
    conn = sqlite3.connect(tmp_path / "d" / "reach.db")
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)


async def test_transaction_rolls_back_on_error(tmp_path):
    store = Store(tmp_path / "reach.db")
    await store.execute("CREATE TABLE t (v INTEGER)")

    def bad(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        raise ValueError("boom")

    with pytest.raises(ValueError):
        await store.transaction(bad)
    assert await store.fetchall("SELECT v FROM t") == []
    assert await store.transaction(lambda c: c.execute("INSERT INTO t VALUES (2)").rowcount) == 1
    await store.aclose()


async def test_statements_run_off_the_event_loop_thread(tmp_path):
    store = Store(tmp_path / "reach.db")
    loop_thread = threading.get_ident()
    seen = await store.transaction(lambda conn: threading.get_ident())
    assert seen != loop_thread
    # a slow statement does not stop the loop from running other tasks
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    t = asyncio.create_task(ticker())
    await store.transaction(lambda conn: __import__("time").sleep(0.1))
    t.cancel()
    assert ticks >= 5
    await store.aclose()


async def test_deferred_writes_are_batched_and_ordered(tmp_path):
    store = Store(tmp_path / "reach.db")
    await store.execute("CREATE TABLE c (k TEXT PRIMARY KEY, n INTEGER)")
    await store.execute("INSERT INTO c VALUES ('x', 0)")
    for _ in range(500):
        store.defer("UPDATE c SET n = n + 1 WHERE k = 'x'")
    # a later read sees every earlier deferred write
    assert await store.fetchone("SELECT n FROM c") == (500,)
    bad = store.defer("INSERT INTO nope VALUES (1)")
    ok = store.defer("UPDATE c SET n = n + 1 WHERE k = 'x'")
    await store.flush()
    assert isinstance(bad.exception(), sqlite3.OperationalError)
    assert ok.result() == 1
    assert await store.fetchone("SELECT n FROM c") == (501,)
    await store.aclose()


async def test_migrations_apply_once_in_order(tmp_path):
    path = tmp_path / "reach.db"
    store = Store(path)
    v1 = ["CREATE TABLE a (x INTEGER)"]
    assert await store.migrate("comp", v1) == 1
    assert await store.migrate("comp", v1) == 1  # nothing re-applied
    v2 = [*v1, "ALTER TABLE a ADD COLUMN y TEXT; CREATE INDEX a_y ON a (y)"]
    assert await store.migrate("comp", v2) == 2
    rows = await store.fetchall("SELECT component, version FROM reach_schema ORDER BY version")
    assert rows == [("comp", 1), ("comp", 2)]
    await store.aclose()
    store2 = Store(path)
    with pytest.raises(RuntimeError, match="newer than this code"):
        await store2.migrate("comp", v1)
    # a failing migration leaves nothing half-applied
    with pytest.raises(sqlite3.OperationalError):
        await store2.migrate("other", ["CREATE TABLE b (x INTEGER)", "SELECT * FROM missing_table"])
    assert await store2.fetchone("SELECT name FROM sqlite_master WHERE name = 'b'") is None
    await store2.aclose()


async def test_a_migration_may_differ_per_database(tmp_path):
    """The documented dict form: SQLite takes its own entry (or "default")."""
    store = Store(tmp_path / "reach.db")
    steps = [
        {"sqlite": "CREATE TABLE a (x INTEGER)", "postgresql": "CREATE TABLE a (x BIGINT)"},
        {"default": "CREATE TABLE b (y TEXT)"},
    ]
    assert await store.migrate("comp", steps) == 2
    names = await store.fetchall("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'b')")
    assert sorted(n for (n,) in names) == ["a", "b"]
    with pytest.raises(RuntimeError, match="migration 1 of 'other' has no SQLite form"):
        await store.migrate("other", [{"postgresql": "CREATE TABLE c (z INTEGER)"}])
    await store.aclose()


def test_sync_twins_for_cli(tmp_path):
    store = Store(tmp_path / "reach.db")
    store.execute_sync("CREATE TABLE t (v INTEGER)")
    store.executemany_sync("INSERT INTO t VALUES (?)", [(1,), (2,)])
    assert store.fetchall_sync("SELECT v FROM t ORDER BY v") == [(1,), (2,)]
    assert store.fetchone_sync("SELECT COUNT(*) FROM t") == (2,)
    store.close_sync()
    with pytest.raises(StoreClosed):
        store.execute_sync("SELECT 1")


async def test_lazy_open_creates_nothing_until_used(tmp_path):
    path = tmp_path / "sub" / "reach.db"
    store = Store(path)
    assert not path.exists()
    await store.fetchone("SELECT 1")
    assert path.exists()
    await store.aclose()
    await store.aclose()  # idempotent
