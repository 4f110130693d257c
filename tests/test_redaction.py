"""The core's own log events go through its Reach's redactor (``reach.redactor``):
connector exceptions, unknown tool names, bound values; plugins add rules to it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from reach_core import BusinessError, Reach, connector
from reach_core.redact import MASK, RedactingLogger, Redactor

SECRET = "Qv7-hunter2-Secr3tValue"


@connector(risk="read")
def crash(text: str) -> str:
    """Fail with an exception whose message carries ``text``.

    Args:
        text: what the exception says
    """
    raise RuntimeError(text)


@connector(risk="read")
def refuse(text: str) -> str:
    """Fail with a business error whose message carries ``text``.

    Args:
        text: what the error says
    """
    raise BusinessError(text)


@pytest.fixture
def captured() -> Iterator[list[str]]:
    """The core's events as text, whether they go through structlog's configuration
    or through stdlib ``logging``."""
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage() + " " + repr(getattr(record, "reach_event", "")))

    handler = Keep(level=logging.DEBUG)
    logger = logging.getLogger("reach")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    structlog.reset_defaults()
    from structlog.testing import capture_logs

    with capture_logs() as events:
        yield lines
        lines.extend(repr(e) for e in events)
    logger.removeHandler(handler)
    logger.setLevel(old_level)


TEXTS = [
    "could not connect to postgresql://app:{s}@db/x", "password={s}", "my password is {s}",
    "GET https://h.test/?api_key={s} failed", "Authorization: Bearer {s}", "curl -u a:{s} h", "mysql -p{s}",
    "db:5432:x:app:{s}",
]


@pytest.mark.parametrize("template", TEXTS)
async def test_connector_exceptions_are_redacted_in_log_events(tmp_path, captured, template):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    reach.register(crash)
    reach.register(refuse)
    first = await reach.invoke("crash", {"text": template.format(s=SECRET)})
    second = await reach.invoke("refuse", {"text": template.format(s=SECRET)})
    await reach.aclose()
    assert first.error.code == "execution_failed" and SECRET not in first.error.message
    assert second.error.code == "execution_failed"  # the model gets its own business error back
    text = "\n".join(captured)
    assert "reach.connector_exception" in text and "reach.tool_call" in text
    assert SECRET not in text


@pytest.mark.parametrize("template", ["password={s}", "postgres://u:{s}@h/db", "Bearer {s}", "token:{s}",
                                      "x?api_key={s}", "my pin is {s}"])
async def test_unknown_tool_names_are_redacted_in_log_events(tmp_path, captured, template):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    result = await reach.invoke({"id": "c1", "name": template.format(s=SECRET), "arguments": "{}"})
    await reach.aclose()
    assert result.error.code == "unknown_tool"
    text = "\n".join(captured)
    assert "reach.tool_call" in text and SECRET not in text


async def test_rules_a_plugin_adds_reach_the_core_events(tmp_path, captured):
    reach = Reach({"reach": {"data_dir": str(tmp_path)}}, plugins=[])
    reach.redactor.add(patterns=[r"ACME-\d{6}"])
    reach.register(crash)
    await reach.invoke("crash", {"text": "order ACME-424242 failed"})
    await reach.aclose()
    text = "\n".join(captured)
    assert "reach.connector_exception" in text and "ACME-424242" not in text
    other = Reach({"reach": {"data_dir": str(tmp_path / "b")}}, plugins=[])
    assert other.redactor.text("ACME-424242") == "ACME-424242"  # rules are per Reach


def test_the_redacting_logger_masks_events_and_bound_values() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    class Sink:
        def __init__(self, bound: dict[str, Any] | None = None) -> None:
            self.bound = bound or {}

        def bind(self, **kw: Any) -> Sink:
            return Sink({**self.bound, **kw})

        def info(self, event: str, **kw: Any) -> None:
            seen.append((event, {**self.bound, **kw}))

        error = warning = info

    log = RedactingLogger(Sink(), Redactor()).bind(password=SECRET, tool=f"x?token={SECRET}")
    log.info(f"my password is {SECRET}", error=f"dsn host=h password={SECRET}", headers={"X-Auth": SECRET})
    log.error("reach.x", nested=[{"db_pass": SECRET}])
    assert SECRET not in repr(seen)
    assert seen[0][1]["password"] == MASK
