"""A library is a guest: reach writes nothing on its host's stdout or stderr.

Its events go through the stdlib ``logging`` module (loggers ``reach`` and
``reach.<plugin>``), silent until the host configures logging; the CLI is a host
and shows them on stderr only.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reach_core import Reach, connector

SCRIPT = textwrap.dedent('''
    import asyncio, sys
    {prelude}
    from reach_core import Reach, connector, NotFound

    @connector(risk="read")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @connector(risk="read")
    def boom(x: int) -> int:
        """Fails inside."""
        raise RuntimeError("kaboom with password=hunter2")

    @connector(risk="read")
    def lookup(sku: str) -> dict:
        """Looks a product up."""
        raise NotFound(f"product {{sku}}")

    async def main():
        reach = Reach({config})
        reach.register(add); reach.register(boom); reach.register(lookup)
        for i in range(3):
            await reach.invoke("add", {{"a": i, "b": 1}})
        await reach.invoke("add", '{{"a": "one"}}')     # invalid arguments
        await reach.invoke("add", "{{not json")          # invalid JSON
        await reach.invoke("nope", {{}})                 # unknown tool
        await reach.invoke("boom", {{"x": 1}})           # internal error, logged with its traceback
        await reach.invoke("lookup", {{"sku": "A1"}})    # not found
        await reach.aclose()
    asyncio.run(main())
''')


def _run(prelude: str = "", config: str = "plugins=[]") -> subprocess.CompletedProcess:
    code = SCRIPT.format(prelude=prelude, config=config)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("config", ["plugins=[]", "", "{'reach': {'log_calls': True}}"])
def test_a_default_reach_writes_nothing_on_stdout_or_stderr(config):
    out = _run(config=config)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert out.stderr == ""


def test_a_host_that_configures_logging_gets_the_events_on_its_own_stream():
    out = _run(prelude="import logging; logging.basicConfig(level='INFO', stream=sys.stderr)")
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    calls = [line for line in out.stderr.splitlines() if "reach.tool_call" in line]
    assert len(calls) == 8, out.stderr
    assert any("tool=add" in line and "status=ok" in line for line in calls)
    assert "hunter2" not in out.stderr


def test_a_host_that_configures_structlog_is_not_reconfigured_and_hears_nothing_on_stdout():
    prelude = "import structlog; structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout))"
    out = _run(prelude=prelude)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "" and out.stderr == ""


async def test_the_event_carries_its_fields_for_json_formatters(caplog):
    @connector(risk="read")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    reach = Reach(plugins=[])
    reach.register(add)
    with caplog.at_level(logging.INFO, logger="reach"):
        await reach.invoke("add", {"a": 1, "b": 2})
    (record,) = [r for r in caplog.records if r.name == "reach"]
    assert record.reach_event["event"] == "reach.tool_call"
    assert record.reach_event["tool"] == "add" and record.reach_event["status"] == "ok"
    assert record.getMessage().startswith("reach.tool_call ")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="reach"):  # a host that raises the level hears nothing
        await reach.invoke("add", {"a": 1, "b": 2})
    assert [r for r in caplog.records if r.name == "reach"] == []


def test_the_cli_keeps_stdout_for_its_output_and_logs_on_stderr(tmp_path):
    reach = [str(Path(sys.executable).with_name("reach"))]
    args = ["call", "add_numbers", "--args", '{"a": 20, "b": 22}']
    quiet = subprocess.run([*reach, *args], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip() == "42" and "reach.tool_call" not in quiet.stderr
    loud = subprocess.run([*reach, "--log-level", "info", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert loud.stdout.strip() == "42"
    assert "reach.tool_call" in loud.stderr
    as_json = subprocess.run([*reach, "--log-level", "info", "--log-json", *args], capture_output=True,
                             text=True, cwd=tmp_path, timeout=60)
    import json

    events = [json.loads(line) for line in as_json.stderr.splitlines() if line.startswith("{")]
    assert any(e["event"] == "reach.tool_call" and e["tool"] == "add_numbers" for e in events)
    assert as_json.stdout.strip() == "42"


async def test_the_event_follows_the_hosts_level_changes_after_quiet_calls(caplog):
    """The pipeline skips the logger's ``isEnabledFor`` when the logger's own cache says "not
    at INFO"; every way a host turns the event on or off later must still be heard."""

    @connector(risk="read")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    reach = Reach(plugins=[])
    reach.register(add)
    log = logging.getLogger("reach")

    def events() -> int:
        return len([r for r in caplog.records if r.name == "reach" and r.reach_event["event"] == "reach.tool_call"])

    caplog.set_level(logging.WARNING, logger="reach")
    caplog.handler.setLevel(logging.NOTSET)  # the logger's level decides, not the capture's
    for _ in range(3):  # quiet calls: the cache now says "not at INFO"
        await reach.invoke("add", {"a": 1, "b": 2})
    assert events() == 0
    log.setLevel(logging.INFO)  # the host raises the level: heard at once
    await reach.invoke("add", {"a": 1, "b": 2})
    assert events() == 1
    logging.disable(logging.INFO)  # process-wide off, then on again
    try:
        await reach.invoke("add", {"a": 1, "b": 2})
        assert events() == 1
    finally:
        logging.disable(logging.NOTSET)
    await reach.invoke("add", {"a": 1, "b": 2})
    assert events() == 2
    log.disabled = True  # what logging.config does to loggers it was not told about
    try:
        await reach.invoke("add", {"a": 1, "b": 2})
        assert events() == 2
    finally:
        log.disabled = False
    logging.getLogger().setLevel(logging.INFO)  # the root's level, with "reach" left unset
    log.setLevel(logging.NOTSET)
    await reach.invoke("add", {"a": 1, "b": 2})
    assert events() == 3
