"""A host process with reach and every installed plugin in it: ``python guest_scenario.py MODE WORK REPORT``.

Run in a child process by ``test_guest.py`` (a fresh interpreter: nothing imported, no
logging configured, no loop policy set before the host's own lines below). ``MODE``:

* ``configured``: the host configured logging at DEBUG (a handler on the root logger that
  keeps every record), uses structlog, sqlglot and a logger of its own, and set a
  level and a filter on ``reach`` itself;
* ``bare``: the host configured nothing.

Then one ``Reach`` per configuration does ordinary, failing, denied, confirmed and
streamed calls through every plugin that can run offline, an agent run whose model
adapter fails, and a tool selection. The host's state is taken before reach is even
imported and again at the end; the report (JSON, written to ``REPORT``; never stdout,
which the test requires to stay empty) holds both, every log record as a handler
formats it, and each call's outcome.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
import socket
import sqlite3
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODE, WORK, REPORT = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

#: configured secrets of the first Reach (env values), and of the second one
SECRET = "gst-" + secrets.token_hex(10)
TOKEN = "srv-" + secrets.token_hex(10)  # a bearer token written as a table key (reach-mcp's server)
SERVE_TOKEN = "rst-" + secrets.token_hex(10)  # the same for reach-serve
OTHER = "oth-" + secrets.token_hex(10)  # the second Reach's only secret

KEPT: list[dict[str, Any]] = []


class Keep(logging.Handler):
    """The host's handler: every record as the host's formatter writes it (traceback included)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "reach_event", None)
        KEPT.append({"name": record.name, "level": record.levelno, "path": record.pathname,
                     "text": self.format(record), "event": repr(event) if event is not None else ""})


class HostFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return True


def host_setup() -> None:
    if MODE != "configured":
        return
    import structlog

    root = logging.getLogger()
    root.addHandler(Keep())
    root.setLevel(logging.DEBUG)
    structlog.configure(processors=[structlog.processors.JSONRenderer()], cache_logger_on_first_use=False)
    app = logging.getLogger("host.app")
    app.addHandler(logging.NullHandler())
    app.setLevel(logging.INFO)
    for name in ("sqlglot", "wordllama", "onnxruntime", "httpx", "mcp", "asyncio"):
        logging.getLogger(name)  # loggers of libraries the host uses too, at their defaults
    ours = logging.getLogger("reach")
    ours.setLevel(logging.DEBUG)
    ours.addFilter(HostFilter())
    ours.addHandler(logging.NullHandler())  # the host's own (reach adds one only to a bare `reach`)


def snapshot() -> dict[str, Any]:
    """What a guest must leave as it found it, as comparable text."""
    loggers = {"": logging.getLogger()}
    loggers.update({n: lg for n, lg in logging.Logger.manager.loggerDict.items() if isinstance(lg, logging.Logger)})
    state: dict[str, Any] = {
        f"logger {name or '<root>'}": [logging.getLevelName(lg.level), [repr(h) + str(id(h)) for h in lg.handlers],
                                       [str(id(f)) for f in lg.filters], lg.propagate, lg.disabled]
        for name, lg in loggers.items()
    }
    state["logging.lastResort"] = repr(logging.lastResort)
    state["logging.raiseExceptions"] = logging.raiseExceptions
    state["logging disable level"] = logging.root.manager.disable
    state["logging record factory"] = repr(logging.getLogRecordFactory())
    state["logging logger class"] = repr(logging.getLoggerClass())
    state["warnings.filters"] = [repr(f) for f in warnings.filters]
    state["warnings.showwarning"] = repr(warnings.showwarning)
    state["os.environ"] = dict(os.environ)
    state["sys.path"] = list(sys.path)
    state["sys.stdout/stderr"] = [repr(sys.stdout), repr(sys.stderr)]
    state["signal handlers"] = {  # by identity: a handler's repr can change with the task it refers to
        s.name: _handler(signal.getsignal(s)) for s in signal.valid_signals()
        if isinstance(s, signal.Signals) and s not in (signal.SIGKILL, signal.SIGSTOP)
    }
    state["socket default timeout"] = socket.getdefaulttimeout()
    state["asyncio event loop policy"] = repr(asyncio.get_event_loop_policy())
    state["sys.excepthook"] = repr(sys.excepthook)
    state["sys.unraisablehook"] = repr(sys.unraisablehook)
    state["threading.excepthook"] = repr(threading.excepthook)
    state["os.getcwd"] = os.getcwd()
    state["sys.getrecursionlimit"] = sys.getrecursionlimit()
    state["sys.getswitchinterval"] = sys.getswitchinterval()
    if "structlog" in sys.modules:
        state["structlog config"] = repr(sys.modules["structlog"].get_config())
    return state


def _handler(handler: Any) -> str:
    return repr(handler) if handler is None or isinstance(handler, int) else f"{type(handler).__name__} {id(handler)}"


class Upstream(BaseHTTPRequestHandler):
    """An API on loopback: /ok answers, /reflect fails quoting the credentials it got (many servers do)."""

    def do_GET(self) -> None:
        if self.path.startswith("/reflect"):
            self._send(403, {"error": f"bad credentials: {self.headers.get('Authorization')} (url {self.path})"})
        else:
            self._send(200, {"items": [1, 2, 3]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(200, {"ok": True})

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config(port: int, weather: Any) -> dict[str, Any]:
    notes = WORK / "notes" / "notes.jsonl"
    notes.parent.mkdir(parents=True)
    # a damaged line: reach-notes warns, naming the file (whose path is a configured secret here)
    notes.write_text('{"id": "n_1", "created_at": "2026-01-01T00:00:00Z", "content": "hi", "tags": []}\n{broken\n')
    os.environ["GUEST_NOTES"] = str(notes)
    os.environ["GUEST_TOKEN"] = SECRET
    os.environ["GUEST_MCP_URL"] = f"http://127.0.0.1:{closed_port()}/mcp?key={SECRET}"
    files, shell = WORK / "files", WORK / "shell"
    files.mkdir()
    shell.mkdir()
    (files / "a.txt").write_text("hello\n")
    db = WORK / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO items (name) VALUES ('pen'), ('ink')")
    base = f"http://127.0.0.1:{port}"
    return {
        "reach": {"data_dir": str(WORK / "data")},
        "agents": {"limited": {"allow": ["list_notes"]}},
        "connectors": {"run_command": {"risk": "write"}},
        "plugins": {
            "disable": ["reach-dbos"],  # needs PostgreSQL (its own suite runs it)
            "reach-notes": {"path": {"env": "GUEST_NOTES"}},
            "reach-files": {"roots": [str(files)]},
            "reach-shell": {"root": str(shell), "commands": {"echo": {"description": "print its arguments"}}},
            "reach-sql": {"url": f"sqlite:///{db}"},
            "reach-http": {"services": {"api": {
                "base_url": base, "generic": True, "allow_private": True, "methods": ["GET", "POST", "DELETE"],
                "description": "a test API", "auth": {"type": "bearer", "token": {"env": "GUEST_TOKEN"}}}}},
            "reach-notify": {"webhooks": {"ops": {"url": f"{base}/hook", "description": "the on-call channel",
                                                  "allow_private": True}}},
            "reach-weather": weather,
            "reach-mcp": {"servers": {"down": {"url": {"env": "GUEST_MCP_URL"}, "connect_timeout": 1}},
                          "server": {"tokens": {TOKEN: "support"}}},
            "reach-serve": {"tokens": {SERVE_TOKEN: "support"}},
            "reach-preselect": {"cache_dir": str(WORK.parent.parent / "preselect-cache")},
        },
    }


class FailingModel:
    """A model adapter whose provider call fails quoting the key it was given (SDKs do)."""

    async def complete(self, request: Any) -> Any:
        raise RuntimeError(f"401 from the provider: invalid api key {SECRET!r} (sent as Bearer%20{SECRET})")


async def calls(reach: Any) -> dict[str, Any]:
    from reach_core import connector

    @connector(risk="read")
    def leak(x: int) -> int:
        """Fails the way a driver does: its message quotes the connection string."""
        raise RuntimeError(f"could not connect to postgresql://shop:{SECRET}@db/shop; token={TOKEN} {SERVE_TOKEN}")

    @connector(risk="read")
    def leak_other(x: int) -> int:
        """Fails quoting the other Reach's secret (which this Reach must not know)."""
        raise RuntimeError(f"unrelated text {OTHER}")

    reach.register(leak)
    reach.register(leak_other)
    out: dict[str, Any] = {}

    async def call(label: str, name: str, args: Any, **kw: Any) -> None:
        result = await reach.invoke(name, args, **kw)
        out[label] = "ok" if result.ok else result.error.code

    await call("notes", "list_notes", {})
    await call("note_added", "append_note", {"content": "guest note"})
    await call("file", "read_file", {"path": "a.txt"})
    await call("file_missing", "read_file", {"path": "nope.txt"})
    await call("file_outside", "read_file", {"path": "/etc/passwd"})
    await call("sql", "sql_query", {"sql": "SELECT name FROM items ORDER BY id"})
    await call("http", "http_get", {"service": "api", "path": "/ok"})
    await call("http_reflect", "http_get", {"service": "api", "path": "/reflect"})
    await call("shell", "run_command", {"command": "echo", "args": ["hi"]})
    await call("webhook", "send_webhook", {"channel": "ops", "text": "deployed"})
    await call("weather", "get_weather", {"city": "London"})
    await call("leak", "leak", {"x": 1})
    await call("leak_other", "leak_other", {"x": 1})
    await call("invalid", "leak", {"x": "one"})
    await call("unknown", "no_such_tool", {})
    await call("denied", "append_note", {"content": "x"}, agent="limited")
    await call("dangerous", "http_request", {"service": "api", "method": "DELETE", "path": "/x"})
    events = [type(e).__name__ async for e in reach.invoke_stream("list_notes", {})]
    out["stream"] = "ok" if events else "empty"
    out["selected"] = len(reach.tools(query="read a file from the team folder", limit=3))
    run = await reach.run("what is in a.txt?", adapter=FailingModel())
    out["run"] = run.outcome
    return out


async def main() -> None:
    host_setup()
    before = snapshot()

    from reach_weather import start_demo_server

    from reach_core import Reach

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    weather = start_demo_server()
    report: dict[str, Any] = {"secrets": {"SECRET": SECRET, "TOKEN": TOKEN, "SERVE_TOKEN": SERVE_TOKEN, "OTHER": OTHER}}
    reach = Reach(config(upstream.server_port, weather.settings()))
    report["plugins"] = {p.name: p.status for p in reach.plugin_info}
    report["calls"] = await calls(reach)
    # a second configuration in the same process: its own secret only
    os.environ["GUEST_OTHER"] = OTHER
    other = Reach({"reach": {"data_dir": str(WORK / "other")}, "plugins": {
        "load": ["reach-http"], "reach-http": {"services": {"b": {
            "base_url": "http://127.0.0.1:9", "allow_private": True, "generic": True, "description": "b",
            "auth": {"type": "bearer", "token": {"env": "GUEST_OTHER"}}}}}}})
    report["masking"] = {
        "first masks its own": reach.redactor.text(SECRET) != SECRET,
        "first masks reach-mcp's table-key token": reach.redactor.text(TOKEN) != TOKEN,
        "first masks reach-serve's table-key token": reach.redactor.text(SERVE_TOKEN) != SERVE_TOKEN,
        "first leaves the other's": reach.redactor.text(OTHER) == OTHER,
        "other masks its own": other.redactor.text(OTHER) != OTHER,
        "other leaves the first's": other.redactor.text(SECRET) == SECRET,
    }
    from reach_core import connector

    @connector(risk="read")
    def echo_first(x: int) -> int:
        """Fails quoting the first Reach's secret, which this one was never given."""
        raise RuntimeError(f"not a secret here: {SECRET}")

    other.register(echo_first)
    await other.invoke("echo_first", {"x": 1})
    await reach.aclose()
    await other.aclose()
    upstream.shutdown()
    weather.close() if hasattr(weather, "close") else None
    for _ in range(50):  # threads reach started (audit writer, store) settle
        if threading.active_count() <= 2:
            break
        await asyncio.sleep(0.02)
    report["before"], report["after"] = before, snapshot()
    report["records"] = KEPT
    REPORT.write_text(json.dumps(report, default=repr))  # noqa: ASYNC240 (the run is over)


if __name__ == "__main__":
    asyncio.run(main())
