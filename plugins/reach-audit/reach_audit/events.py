"""Audit records as structlog events: JSON lines, or a readable line on a terminal.

Events are emitted after their batch is committed, so a log line never claims a
record the database does not hold. Records are already redacted; the redaction
processor runs again anyway, so nothing a future field adds can slip through.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

import structlog

from reach_core.logs import get_logger, is_enabled

from .record import Row
from .redact import Redactor


def _dumps(obj: Any, **kw: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


class EventLog:
    """Writes one structlog event per audit record.

    ``"logging"`` (default) goes to the stdlib logger ``reach.audit``, like the
    core's own ``reach.tool_call`` events: silent unless the host configures
    logging, so one configuration decides level and destination (the ``reach``
    CLI shows them with ``--log-level info``).
    ``"stderr"``, ``"stdout"`` or a file path give a self-contained stream: JSON
    lines, or a readable console line when the stream is a terminal.
    """

    def __init__(self, target: str, redactor: Redactor) -> None:
        self.target = target
        self.redactor = redactor
        self._file: TextIO | None = None

    @property
    def enabled(self) -> bool:
        return self.target.lower() not in ("off", "none", "")

    def active(self) -> bool:
        """Would :meth:`emit` write anything now? (``"logging"``: only while the host
        listens to ``reach.audit`` at INFO.)"""
        if not self.enabled:
            return False
        return self.target.lower() != "logging" or is_enabled(20, "reach.audit")

    def _stream(self) -> TextIO:
        name = self.target.lower()
        if name == "stderr":
            return sys.stderr  # looked up each time: test runners swap it
        if name == "stdout":
            return sys.stdout
        if self._file is None:
            path = Path(self.target)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")
        return self._file

    def emit(self, rows: list[Row]) -> None:
        """Called by the writer (in a worker thread) after ``rows`` were committed."""
        if not self.enabled or not rows:
            return
        if self.target.lower() == "logging":
            if not is_enabled(20, "reach.audit"):
                return
            app_logger = get_logger("reach.audit")
            for row in rows:
                app_logger.info(f"audit.{row.kind}", **self._event(row))
            return
        stream = self._stream()
        tty = bool(getattr(stream, "isatty", lambda: False)())
        renderer: Any = (
            structlog.dev.ConsoleRenderer(colors=False)
            if tty
            else structlog.processors.JSONRenderer(serializer=_dumps)
        )
        logger = structlog.wrap_logger(
            structlog.WriteLogger(stream),
            # our own level: the app's structlog filter must not swallow the audit stream
            wrapper_class=structlog.make_filtering_bound_logger(0),
            processors=[self.redactor.structlog_processor, renderer],
        )
        for row in rows:
            logger.info(f"audit.{row.kind}", **self._event(row))
        stream.flush()

    def _event(self, row: Row) -> dict[str, Any]:
        record = dict(row.record)
        key = record.pop("idempotency_key", None)  # a field of the record, not a secret by its name
        event = self.redactor.value(record)  # already redacted; cheap insurance
        if key is not None:
            event["idempotency_key"] = self.redactor.text(str(key))
        event.pop("v", None)
        event["hash"] = row.hash
        return event

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
