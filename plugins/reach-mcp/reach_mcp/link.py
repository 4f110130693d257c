"""One configured MCP server, as reach talks to it.

Two kinds of connection, because reach has two moments:

* start-up (``reach_register_tools``) is synchronous and may run inside or
  outside an event loop, so discovery opens a short-lived session on a helper
  thread with its own loop, lists the tools and closes;
* calls are async and may come from several event loops over a process's life
  (``asyncio.run`` in a CLI, a server's loop, a test's loop), so each loop gets
  its own long-lived session, opened on first use by an owner task that also
  watches for ``tools/list_changed`` and re-lists. A dropped connection is
  forgotten and reopened by the next call.

A re-listing compares every registered tool with its new definition: a pinned
tool whose definition changed is blocked (the core's pin semantics: left out of
``reach.tools()`` and refused), so a server cannot swap a tool's description or
schema under a model after a person reviewed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import mcp_types as types

from reach_core import BusinessError, Denied, NotFound, RetryableError
from reach_core.logs import plugin_logger

from .results import clip, content_of
from .settings import ServerConfig

if TYPE_CHECKING:
    from mcp import Client

    from .connector import McpTool

__all__ = ["ServerLink", "discover"]

_PAGE_CAP = 100
# forwarded with non-idempotent calls, so a reach server behind this one can recognise a repeat
IDEMPOTENCY_META_KEY = "reach/idempotency_key"
_CONNECTION_CODES = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})


def describe_error(exc: BaseException) -> str:
    """A one-line reason from whatever a transport raised (task groups wrap errors in groups),
    cut like any text a server chose (an ``MCPError`` carries the server's own message)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return clip(f"{type(exc).__name__}: {text}" if text != type(exc).__name__ else text)


def _is_connection_error(exc: BaseException) -> bool:
    import anyio
    import httpx2
    from mcp import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.code in _CONNECTION_CODES
    return isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                            OSError, httpx2.TransportError, TimeoutError, ConnectionError))


async def list_all(client: Client) -> list[types.Tool]:
    """Every tool the server lists, page by page (capped, so a looping cursor cannot hang us)."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_PAGE_CAP):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


class _Session:
    """A long-lived client session owned by one task on one event loop."""

    def __init__(self, link: ServerLink) -> None:
        self.link = link
        self.client: Client | None = None
        self.error: BaseException | None = None
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.changed = asyncio.Event()
        self.closed = False
        self.relist_lock = asyncio.Lock()
        self.task: asyncio.Task[None] | None = None

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if method == "notifications/tools/list_changed":
            self.changed.set()

    async def run(self) -> None:
        link = self.link
        try:
            async with link.client(message_handler=self._on_message) as client:
                self.client = client
                self.ready.set()
                async with asyncio.TaskGroup() as tg:
                    watch = tg.create_task(self._watch(client))
                    listen = tg.create_task(self._listen(client))
                    await self.stop.wait()
                    watch.cancel()
                    listen.cancel()
        except BaseException as exc:  # noqa: BLE001 - recorded; the next call reopens
            if not isinstance(exc, asyncio.CancelledError):
                self.error = exc
                link.log.warning("reach.mcp_session_closed", server=link.name, error=describe_error(exc))
            else:
                raise
        finally:
            self.client = None
            self.closed = True
            self.ready.set()

    async def _listen(self, client: Client) -> None:
        """2026-era servers announce list changes on a ``subscriptions/listen`` stream."""
        caps = client.server_capabilities.tools
        if caps is None or not caps.list_changed:
            return
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self.changed.set()
        except Exception as exc:  # noqa: BLE001 - older servers: notifications or periodic re-listing instead
            self.link.log.debug("reach.mcp_listen_unavailable", server=self.link.name, error=describe_error(exc))

    async def _watch(self, client: Client) -> None:
        while True:
            await self.changed.wait()
            self.changed.clear()
            try:
                await self.relist(client)
            except Exception as exc:  # noqa: BLE001
                self.link.log.warning("reach.mcp_relist_failed", server=self.link.name, error=describe_error(exc))

    async def relist(self, client: Client) -> None:
        async with self.relist_lock:
            tools = await list_all(client)
            self.link.apply_listing(tools)

    def discard(self) -> None:
        self.closed = True
        self.stop.set()


class ServerLink:
    """A configured MCP server: its tools' definitions and a session per event loop."""

    def __init__(self, name: str, config: ServerConfig, reach: Any = None) -> None:
        self.name = name
        self.config = config
        # weak: the links live on reach-mcp's object in that Reach; no cycle back to it to keep alive
        self._reach = weakref.ref(reach) if reach is not None else None
        self.prefix = config.prefix if config.prefix is not None else name
        #: ``reach.mcp``, masked by the Reach's redactor (a server's error can quote its token)
        self.log = plugin_logger("mcp", getattr(reach, "redactor", None))
        self.connectors: dict[str, McpTool] = {}
        self._sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Session] = weakref.WeakKeyDictionary()
        self._listed_at = time.monotonic()

    @property
    def reach(self) -> Any:
        return self._reach() if self._reach is not None else None

    # ------------------------------------------------------------ transport
    def client(self, *, message_handler: Any = None) -> Client:
        """A fresh (unentered) SDK client for this server."""
        from mcp import Client, StdioServerParameters

        cfg = self.config
        server: Any
        if cfg.command:
            server = StdioServerParameters(command=cfg.command, args=list(cfg.args), env=dict(cfg.env) or None,
                                           cwd=cfg.cwd)
        else:
            server = _http_transport(cfg.url or "", cfg.http_headers(), cfg.timeout)
        return Client(server, message_handler=message_handler, cache=None)

    # ------------------------------------------------------------ sessions
    async def session(self) -> _Session:
        """This loop's open session, opened now if needed."""
        loop = asyncio.get_running_loop()
        s = self._sessions.get(loop)
        if s is None or s.closed:
            s = _Session(self)
            self._sessions[loop] = s
            s.task = loop.create_task(s.run(), name=f"reach-mcp:{self.name}")
        try:
            await asyncio.wait_for(s.ready.wait(), self.config.connect_timeout)
        except TimeoutError:
            s.discard()
            raise RetryableError(
                f"the MCP server {self.name!r} did not answer within {self.config.connect_timeout:g} s; "
                "try again later"
            ) from None
        if s.client is None:
            why = describe_error(s.error) if s.error else "the connection closed"
            raise RetryableError(f"the MCP server {self.name!r} is unreachable ({why}); try again later")
        return s

    async def aclose(self) -> None:
        """Close this loop's session (others close with their loops)."""
        with contextlib.suppress(RuntimeError):
            loop = asyncio.get_running_loop()
            s = self._sessions.pop(loop, None)
            if s is not None and s.task is not None:
                s.stop.set()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(s.task, 5)

    # ------------------------------------------------------------ calls
    async def call(self, conn: McpTool, arguments: dict[str, Any], ctx: Any = None) -> Any:
        s = await self.session()
        client = s.client
        assert client is not None
        if self.config.refresh == 0 or time.monotonic() - self._listed_at >= self.config.refresh:
            try:
                await s.relist(client)
            except Exception as exc:  # noqa: BLE001
                if _is_connection_error(exc):
                    s.discard()
                    raise RetryableError(f"the MCP server {self.name!r} dropped the connection; try again") from None
                raise
        tool = getattr(ctx, "tool", None)
        blocked = getattr(tool, "blocked", None) or conn.blocked
        if blocked:
            raise Denied(f"{blocked}; do not call it again.",
                         fix=f"review the change, then run `reach tools pin {conn.name}`")
        if conn.removed:
            raise NotFound(f"the tool {conn.name!r}: the MCP server {self.name!r} no longer offers it")
        key = getattr(ctx, "idempotency_key", None)
        meta: Any = {IDEMPOTENCY_META_KEY: key} if key else None
        try:
            result = await client.call_tool(conn.remote, arguments, meta=meta)
        except RuntimeError as exc:
            if "structured content" in str(exc) or "output schema" in str(exc):
                raise BusinessError(f"{conn.name}: the server's answer did not match its declared output schema") \
                    from None
            raise self._translate(exc, s, conn) from None
        except Exception as exc:  # noqa: BLE001 - translated into reach's failure kinds
            raise self._translate(exc, s, conn) from None
        return content_of(result, server=self.name, tool=conn.name)

    def _translate(self, exc: BaseException, s: _Session, conn: McpTool) -> Exception:
        from mcp import MCPError

        if _is_connection_error(exc):
            s.discard()
            return RetryableError(f"the MCP server {self.name!r} dropped the connection ({describe_error(exc)}); "
                                  "try again")
        if isinstance(exc, MCPError):
            return BusinessError(f"{conn.name} (MCP server {self.name!r}) refused the call: {clip(exc.message)}")
        return exc if isinstance(exc, Exception) else RuntimeError(str(exc))

    # ------------------------------------------------------------ tool lists
    def apply_listing(self, tools: list[types.Tool]) -> None:
        """Check a fresh listing against what was registered (and pinned)."""
        self._listed_at = time.monotonic()
        by_name = {t.name: t for t in tools}
        for remote, conn in self.connectors.items():
            new = by_name.get(remote)
            if new is None:
                if not conn.removed:
                    self.log.warning("reach.mcp_tool_removed", server=self.name, tool=conn.name)
                conn.removed = True
                continue
            conn.removed = False
            self._raise_tier(conn, new)
            if _same_definition(conn.definition, new):
                continue
            self._changed(conn, new)
        extra = sorted(set(by_name) - set(self.connectors))
        if extra:
            self.log.info("reach.mcp_tools_added", server=self.name, tools=extra,
                      note="new tools are registered at the next start")

    def _raise_tier(self, conn: McpTool, new: types.Tool) -> None:
        """A server that now calls a tool riskier is believed at once; one that calls it safer is not.

        A tier set in ``[connectors.NAME] risk`` is the operator's decision and stays.
        """
        from .annotations import RANK, risk_from_annotations

        if self.reach is None:
            return
        ccfg = self.reach.config.connectors.get(conn.name)
        if ccfg is not None and ccfg.risk:
            return
        risk, idem = risk_from_annotations(new.annotations, min_risk=self.config.min_risk,
                                           default_risk=self.config.default_risk)
        try:
            registered = self.reach.tool(conn.name)
        except KeyError:
            return
        if registered.connector is not conn:  # the name is another plugin's tool (see _changed)
            return
        if RANK[risk] <= RANK[registered.risk]:
            return
        self.log.warning("reach.mcp_tool_tier_raised", server=self.name, tool=conn.name, was=registered.risk, now=risk)
        registered.risk = risk
        registered.idempotent = bool(registered.idempotent and idem)
        self.reach.refresh()  # allow and confirmation decisions are cached per tool

    def _changed(self, conn: McpTool, new: types.Tool) -> None:
        from reach_core.tool import Tool

        from .connector import McpTool

        reach = self.reach
        if reach is None:
            return
        try:
            registered = reach.tool(conn.name)
        except KeyError:
            return
        if registered.connector is not conn:
            # the tool of that name is not this server's (another plugin's, kept by the core's rule
            # for imported names or by [connectors.NAME] provider): what the server lists now is
            # no reason to re-tier or block it
            return
        ccfg = reach.config.connectors.get(conn.name)
        overrides = ccfg.overrides() if ccfg is not None else {}
        try:
            candidate = Tool.build(McpTool(self, new), plugin=registered.plugin, overrides=overrides)
        except Exception as exc:  # noqa: BLE001 - an unusable new definition is a change too
            reason = (f"the MCP server {self.name!r} changed {conn.name!r} into something reach cannot use "
                      f"({exc}); it stays blocked until restarted and reviewed")
            self._block(registered, conn, reason)
            return
        if candidate.fingerprint() == registered.fingerprint():
            return  # annotations or titles only: reach keeps the tier it started with
        reason = reach.pins.check(candidate)
        if reason:
            self._block(registered, conn, reason)
        else:
            self.log.warning("reach.mcp_tool_changed", server=self.name, tool=conn.name,
                         note="not pinned: the model keeps the definition from start-up; "
                              "pin MCP tools (`reach tools pin`) to block such changes")

    def _block(self, registered: Any, conn: McpTool, reason: str) -> None:
        if conn.blocked == reason:
            return
        conn.blocked = reason
        self.reach.block_tool(registered.name, reason)
        self.log.warning("reach.tool_pin_mismatch", server=self.name, tool=conn.name, reason=reason)


def _same_definition(a: types.Tool, b: types.Tool) -> bool:
    return (a.description, a.input_schema, a.output_schema) == (b.description, b.input_schema, b.output_schema)


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str], timeout_s: float) -> AsyncIterator[Any]:
    """Streamable HTTP with our own httpx2 client, so configured headers (secrets) go with every request."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeouts = httpx2.Timeout(timeout_s, read=max(timeout_s, 300.0))
    async with httpx2.AsyncClient(headers=headers, timeout=timeouts) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


def discover(links: list[ServerLink]) -> dict[str, list[types.Tool] | BaseException]:
    """List every server's tools at once, from synchronous start-up code.

    Runs on a helper thread with its own event loop, so it works whether or not
    the caller is inside a running loop. Each server has its ``connect_timeout``;
    a failure is returned, not raised.
    """

    async def one(link: ServerLink) -> list[types.Tool]:
        async with asyncio.timeout(link.config.connect_timeout):
            async with link.client() as client:
                return await list_all(client)

    async def every() -> list[Any]:
        return await asyncio.gather(*(one(link) for link in links), return_exceptions=True)

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["out"] = asyncio.run(every())
        except BaseException as exc:  # noqa: BLE001
            box["err"] = exc

    thread = threading.Thread(target=target, name="reach-mcp-discovery", daemon=True)
    thread.start()
    thread.join(max(link.config.connect_timeout for link in links) + 15.0)
    if thread.is_alive():  # a transport that ignores cancellation: give up on all, start without them
        return {link.name: TimeoutError("discovery did not finish") for link in links}
    if "err" in box:
        return {link.name: box["err"] for link in links}
    return {link.name: res for link, res in zip(links, box["out"], strict=True)}
