"""Taking over the unfinished runs of an instance that stopped (another executor id).

DBOS resumes, at launch, only the runs of the launching executor: a replica
that dies and is replaced under another name (a new pod) leaves its runs
PENDING for ever. reach's rule:

* by hand, ``reach runs resume --executor NAME`` declares NAME stopped: its
  unfinished runs are handed back to DBOS's queue and this instance runs them;
* automatically, with ``takeover_after`` set, every serving instance writes a
  heartbeat (``reach_executors`` in the DBOS schema) every ``heartbeat``
  seconds, and takes over the runs of any executor whose heartbeat is older than
  ``takeover_after`` seconds.

Taking over is DBOS's own recovery (``recover_pending_workflows``), which
re-enqueues a run only while it is still PENDING under the named executor, in
one UPDATE: several instances declaring the same executor dead re-enqueue each
run once, one of them dequeues it, and it clears the run's owner, so a
stopped-but-not-dead instance that comes back is refused at its next checkpoint
(``DBOSWorkflowConflictIDError``). Should both run a step at once anyway, the
step is recorded once and the tool calls' idempotency keys let the ledger settle
the second execution (the racing tests count one execution per write).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

__all__ = ["Heartbeat", "take_over"]



def take_over(executors: list[str]) -> list[str]:
    """Hand the unfinished runs of these executors to DBOS's queue (this instance runs them); their ids."""
    from dbos._dbos import _get_dbos_instance
    from dbos._recovery import recover_pending_workflows

    if not executors:
        return []
    handles = recover_pending_workflows(_get_dbos_instance(), list(executors))
    return [h.get_workflow_id() for h in handles]


class Heartbeat:
    """This instance's heartbeat, and the takeover of instances whose heartbeat stopped (a thread)."""

    def __init__(self, url: str, schema: str, executor: str, *, every: float, takeover_after: float,
                 redactor: Any = None) -> None:
        from reach_core.logs import plugin_logger

        self.url, self.executor = url, executor
        #: ``reach.dbos``, masked by the Reach's redactor (a database error can quote the DSN)
        self.log = plugin_logger("dbos", redactor)
        self.every, self.takeover_after = every, takeover_after
        quoted = f'"{schema}"'  # a validated identifier (DbosSettings.schema_name)
        self._create = (f"CREATE TABLE IF NOT EXISTS {quoted}.reach_executors "
                        "(executor_id TEXT PRIMARY KEY, beat_at BIGINT NOT NULL)")
        self._beat = (f"INSERT INTO {quoted}.reach_executors (executor_id, beat_at) VALUES (%s, %s) "
                      "ON CONFLICT (executor_id) DO UPDATE SET beat_at = excluded.beat_at")
        self._dead = f"SELECT executor_id FROM {quoted}.reach_executors WHERE beat_at < %s AND executor_id <> %s"
        self._forget = f"DELETE FROM {quoted}.reach_executors WHERE executor_id = %s AND beat_at < %s"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.taken: list[str] = []

    def start(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(self._create)
        self.tick()  # a restarted instance takes over at once, not a heartbeat later
        self._thread = threading.Thread(target=self._loop, name="reach-dbos-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def tick(self) -> list[str]:
        """Beat once; take over every executor whose last beat is older than ``takeover_after``."""
        now = int(time.time() * 1000)
        cutoff = now - int(self.takeover_after * 1000)
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(self._beat, (self.executor, now))
            dead = [r[0] for r in conn.execute(self._dead, (cutoff, self.executor)).fetchall()]
            taken: list[str] = []
            for name in dead:
                runs = take_over([name])
                if runs:
                    self.log.warning("reach-dbos: instance %r stopped beating %.0f s ago; this instance (%r) "
                                     "takes over its runs %s", name, self.takeover_after, self.executor, runs)
                taken += runs
                conn.execute(self._forget, (name, cutoff))
        self.taken += taken
        return taken

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.tick()
            except Exception as exc:  # a database hiccup must not stop the heartbeat for good
                self.log.warning("reach-dbos heartbeat failed (retrying in %.0f s): %s", self.every, exc)
