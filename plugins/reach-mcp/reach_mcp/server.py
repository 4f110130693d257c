"""reach's tools served over MCP, with the official SDK's low-level ``Server``.

The low-level server (not ``MCPServer``) because reach, not the SDK, owns the
tool list and the call path: ``tools/list`` is ``reach.select(agent=...)`` for
the caller's agent, and ``tools/call`` is ``reach.invoke(..., agent=...)``, so
policy is checked again on every call, whatever the client sends.

Over HTTP the server is stateless streamable HTTP (no session held between
requests), so several instances can run behind a load balancer. Who the caller
is comes from a bearer token: ``[plugins.reach-mcp.server] tokens`` maps each
token to a reach agent; an unknown token is refused with 401 before MCP is
spoken at all.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from reach_core import ToolResult
from reach_core.tokens import client_id_problem

from .annotations import annotations_for, open_world
from .link import IDEMPOTENCY_META_KEY
from .settings import ServeSettings

__all__ = ["TokenGate", "body_limit", "build_server", "check_agents", "http_app", "to_call_result", "to_mcp_tool"]

#: The MCP request a tool call is running for: (reach call id, request context).
PROGRESS_TARGET: contextvars.ContextVar[tuple[str, Any] | None] = contextvars.ContextVar(
    "reach_mcp_progress_target", default=None
)

AGENT_STATE_KEY = "reach_agent"


def to_mcp_tool(tool: Any, *, output_schemas: bool = True) -> types.Tool:
    """A reach ``Tool`` as an MCP tool definition: schema, tier as annotations, output schema."""
    out = tool.output_schema if output_schemas else None
    if not (isinstance(out, dict) and out.get("type") == "object"):
        out = None
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.schema,
        output_schema=out,
        annotations=annotations_for(tool.risk, tool.idempotent, open_world=open_world(tool)),
    )


def _error_payload(result: ToolResult) -> dict[str, Any]:
    """The same ``error`` object as REST's ``POST /v1/invoke`` (``ToolResult.error_dict``)."""
    return {"error": result.error_dict()}


def to_call_result(result: ToolResult, *, structured: bool) -> types.CallToolResult:
    """A reach ``ToolResult`` as an MCP ``CallToolResult``.

    Failures (``denied``, ``needs_confirmation`` with its confirmation id, ...)
    are tool errors (``isError``), not protocol errors, so the model reads them.
    """
    if not result.ok:
        payload = _error_payload(result)
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=payload,
                                    is_error=True)
    content = result.content
    sc = content if structured and isinstance(content, dict) else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=result.to_json())],
                                structured_content=sc, is_error=False)


class _NoAgent(Exception):
    """An HTTP request reached a handler without passing the token gate: refuse, never guess."""


def _agent_of(ctx: Any, fixed: str | None, from_request: bool) -> str | None:
    if not from_request:
        return fixed
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, dict) else None
    if not isinstance(state, dict) or AGENT_STATE_KEY not in state:
        raise _NoAgent
    agent = state[AGENT_STATE_KEY]
    return agent if isinstance(agent, str) else None


def scoped_key(agent: str, key: str) -> str:
    """An idempotency key in the agent's own namespace. The agent's length is part of it,
    so no agent name and key can spell another agent's (``a:b`` + ``c`` vs ``a`` + ``b:c``).
    One that would pass reach's 512 characters is written as its SHA-256 instead."""
    scoped = f"mcp:{len(agent)}:{agent}:{key}"
    if len(scoped) <= 512:
        return scoped
    import hashlib

    return "mcp:sha256:" + hashlib.sha256(scoped.encode("utf-8", "surrogatepass")).hexdigest()


#: the most a call's ``_meta`` may hold: its JSON size, nesting depth and key length
META_MAX_BYTES = 16_384
META_MAX_DEPTH = 8
META_MAX_KEY = 256


def meta_problem(meta: Any) -> str | None:
    """Why a call's ``_meta`` is refused (``None``: it is fine).

    Why refuse rather than ignore: a client that sends its idempotency key wrongly
    (a number, an empty string, a key with a line break) would have the key dropped
    and its retry of a payment run twice; a huge or deep ``_meta`` is only work for
    the server. The key itself follows reach's rule: 1-512 printable characters.
    """
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return f"_meta must be an object, got {type(meta).__name__}"
    stack: list[tuple[Any, int]] = [(meta, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > META_MAX_DEPTH:
            return f"_meta is nested more than {META_MAX_DEPTH} levels deep"
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for k, v in items:
            if isinstance(value, dict) and (not isinstance(k, str) or len(k) > META_MAX_KEY or not k.isprintable()):
                return f"_meta keys must be strings of 1-{META_MAX_KEY} printable characters"
            if isinstance(v, dict | list):
                stack.append((v, depth + 1))
    try:
        size = len(json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return "_meta must be plain JSON"
    if size > META_MAX_BYTES:
        return f"_meta holds {size} bytes; at most {META_MAX_BYTES} are accepted"
    if IDEMPOTENCY_META_KEY in meta:
        key = meta[IDEMPOTENCY_META_KEY]
        if not isinstance(key, str) or not 1 <= len(key) <= 512 or not key.isprintable():
            return (f"_meta {IDEMPOTENCY_META_KEY!r} must be a string of 1-512 printable characters "
                    "(no control, line-break or invisible characters)")
    return None


def _meta_refusal(call_id: str, name: str, problem: str, what: str = "_meta") -> types.CallToolResult:
    from reach_core import ToolError

    result = ToolResult(call_id, name, False, None,
                        ToolError("invalid_arguments", f"{problem}; send the call again with a valid {what}."))
    return to_call_result(result, structured=False)


def check_agents(reach: Any, settings: ServeSettings, agent: str | None = None, *, from_request: bool = False) -> None:
    """Refuse to serve as an agent that has no ``[agents.NAME]`` table.

    reach gives any agent it has no table for the ``default`` agent's rights, which
    are usually wider than the restricted agent a token was meant for: a typo
    (``tokens = {"…" = "suport"}`` for ``[agents.support]``) would hand that client
    ``default``'s tools instead of failing. ``default`` itself may be named.
    """
    from reach_core.tokens import require_agents

    named: list[tuple[str, str]] = []
    if from_request:
        named += [(f"tokens/clients (a token's agent {a!r})", a) for a in settings.token_agents().values()]
        if settings.anonymous_agent is not None:
            named.append(("anonymous_agent", settings.anonymous_agent))
    elif agent is not None:
        named.append(("stdio_agent / --agent", agent))
    require_agents(reach, named, "plugins.reach-mcp.server")


def build_server(reach: Any, settings: ServeSettings, *, agent: str | None = None,
                 from_request: bool = False) -> Server[Any]:
    """The MCP server for ``reach``.

    ``agent`` fixes the agent (stdio); with ``from_request`` (HTTP) the agent is the
    one the token gate put on the request, and a request without it is refused:
    a wiring mistake must fail closed, not run as the default agent. Every agent the
    settings name must have an ``[agents.NAME]`` table (:func:`check_agents`).
    """
    from mcp import MCPError

    check_agents(reach, settings, agent, from_request=from_request)

    def who(ctx: Any) -> str | None:
        try:
            return _agent_of(ctx, agent, from_request)
        except _NoAgent:
            raise MCPError(-32001, "unauthorized: this request carries no reach agent") from None

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [to_mcp_tool(t, output_schemas=settings.output_schemas) for t in reach.select(agent=who(ctx))]
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = who(ctx)
        call_id = f"mcp-{ctx.request_id}" if ctx.request_id is not None else "mcp"
        # the JSON-RPC id is the client's choice and becomes reach's call id (logs, audit, console)
        problem = client_id_problem("the request id", call_id)
        if problem is not None:
            return _meta_refusal("mcp", params.name, problem, "id")
        problem = meta_problem(params.meta)
        if problem is not None:
            return _meta_refusal(call_id, params.name, problem)
        key = (params.meta or {}).get(IDEMPOTENCY_META_KEY)
        # scoped per agent: one client's key can never replay another agent's recorded result
        scoped = scoped_key(caller or "default", key) if isinstance(key, str) else None
        call = {"id": call_id, "name": params.name, "arguments": params.arguments or {}}
        # progress the tool reports reaches this request's client (reach_tool_progress in plugin.py)
        token = PROGRESS_TARGET.set((call_id, ctx))
        try:
            result = await reach.invoke(call, agent=caller, idempotency_key=scoped)
        finally:
            PROGRESS_TARGET.reset(token)
        return to_call_result(result, structured=isinstance(result.content, dict))

    return Server(settings.name, version=_version(), on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("reach-mcp")
    except Exception:  # noqa: BLE001
        return "0"


def body_limit(reach: Any) -> int:
    """The largest request body a served call can need: reach's argument cap
    (``[reach] max_argument_bytes``) written with every character escaped as ``\\uXXXX``
    (six bytes each), plus room for the JSON-RPC envelope."""
    cap = getattr(getattr(getattr(reach, "config", None), "reach", None), "max_argument_bytes", 1_000_000)
    return 6 * int(cap) + 65_536


class TokenGate:
    """ASGI gate in front of the MCP endpoint: bearer token -> reach agent, or 401;
    a body over ``max_body`` bytes -> 413, decided while it streams in.

    Tokens are compared in constant time; a request with an ``Authorization`` header that
    is not exactly one configured token is 401, and a client address that sent
    ``max_token_failures`` of them in a minute gets 429 (``Retry-After``) until the minute
    is over, whatever it sends. Without any configured token every
    request runs as ``anonymous_agent`` (or ``default``); with tokens, a request
    without one runs as ``anonymous_agent`` only when that is set. A request without
    a token must also name this server by IP address, ``localhost`` or an
    ``allowed_hosts`` name, and not come from a web page of another site
    (``reach_core.tokens.tokenless_refusal``, the rule ``reach serve http`` applies):
    the SDK checks ``Host`` only for a server built for exactly 127.0.0.1, localhost
    or ::1, so one served on 0.0.0.0 ran a DNS-rebinding page's calls. The body is read
    here, up to ``max_body`` and no further, before the SDK parses any of it: a
    call's arguments are capped by reach again once decoded (size, depth, values); a body
    that has not arrived whole ``read_timeout`` seconds after the gate started reading is
    408 (the head's deadline is the server's, ``reach_core.tokens.uvicorn_options``).
    """

    def __init__(self, app: Any, settings: ServeSettings, max_body: int | None = None) -> None:
        from reach_core.tokens import TokenFailures

        self.app = app
        self.tokens = [(t.encode("utf-8"), a) for t, a in settings.token_agents().items()]
        self.anonymous = settings.anonymous_agent
        self.allowed_hosts = list(settings.allowed_hosts)
        self.max_body = max_body
        self.read_timeout = settings.read_timeout
        #: failed tokens per client address, this gate's own
        self.failures = TokenFailures(limit=settings.max_token_failures)

    def agent_for(self, headers: str | list[str] | None) -> tuple[bool, str | None]:
        """``(admitted, agent)`` for the request's ``Authorization`` value(s). A request that sends
        the header is judged by it alone: anything but exactly one configured token is refused,
        never run as the anonymous agent (``reach_core.tokens.bearer_agent``)."""
        from reach_core.tokens import BadToken, bearer_agent

        values = [headers] if isinstance(headers, str) else list(headers or ())
        if values:
            try:
                return True, bearer_agent(values, self.tokens)
            except BadToken:
                return False, None
        if self.tokens and self.anonymous is None:
            return False, None
        return True, self.anonymous

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [value.decode("latin-1") for key, value in scope.get("headers") or () if key == b"authorization"]
        client = scope.get("client")
        address = client[0] if client else None
        if headers and (wait := self.failures.retry_after(address)) is not None:
            body = json.dumps({"error": f"rate_limited: too many failed tokens from this address; try again in "
                                        f"{wait} s"}).encode()
            await send({"type": "http.response.start", "status": 429,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", str(wait).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        ok, agent = self.agent_for(headers)
        if not ok:
            if headers:
                self.failures.failed(address)
            body = (b'{"error":"unauthorized: send Authorization: Bearer <token> with a token configured in '
                    b'[plugins.reach-mcp.server]"}')
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        if not headers:
            from starlette.datastructures import Headers

            from reach_core.tokens import tokenless_refusal

            problem = tokenless_refusal(Headers(scope=scope), self.allowed_hosts, "plugins.reach-mcp.server")
            if problem is not None:
                body = json.dumps({"error": f"forbidden: {problem}"}).encode()
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": body})
                return
        scope.setdefault("state", {})[AGENT_STATE_KEY] = agent
        if self.max_body is not None and scope.get("method") not in ("GET", "HEAD", "DELETE"):
            receive = await self._capped_body(scope, receive, send)
            if receive is None:
                return
        await self.app(scope, receive, send)

    async def _capped_body(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        """Read the whole body, refusing it with 413 as soon as it is known to be too large
        (by Content-Length or by what has arrived); else a ``receive`` that hands it on."""
        limit = self.max_body
        assert limit is not None
        for key, value in scope.get("headers") or ():
            if key == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > limit:
                    await _too_large(send, limit)
                    return None
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.read_timeout):  # a body a byte a minute would hold the request
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        await _too_large(send, limit)
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            body = json.dumps({"error": f"timeout: the request body did not arrive within {self.read_timeout:g} s; "
                                        "send it again, faster"}).encode()
            await send({"type": "http.response.start", "status": 408,
                        "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})
            return None
        body = b"".join(chunks)
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # after the body: the client disconnecting

        return replay


async def _too_large(send: Any, limit: int) -> None:
    body = json.dumps({"error": f"request body too large: the limit is {limit} bytes "
                                "(6 x [reach] max_argument_bytes + 64 KiB); send less data"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def http_app(reach: Any, settings: ServeSettings, *, host: str = "127.0.0.1") -> Any:
    """The ASGI app: stateless streamable HTTP behind the token gate.

    DNS-rebinding protection is on for loopback hosts (the SDK's default) and for
    any ``allowed_hosts`` configured; a public bind behind a proxy relies on tokens.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(reach, settings, from_request=True)
    security = None
    if settings.allowed_hosts:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                             allowed_hosts=list(settings.allowed_hosts))
    app = server.streamable_http_app(streamable_http_path=settings.path, stateless_http=True, json_response=True,
                                     host=host, transport_security=security)
    gate = TokenGate(app, settings, max_body=body_limit(reach))
    if not settings.trusted_proxies:
        return gate
    from reach_core.tokens import TrustedProxies

    # the address the gate counts failed tokens by: the peer, or what the named proxies say
    return TrustedProxies(gate, settings.trusted_proxies)
