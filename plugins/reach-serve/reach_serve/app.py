"""The ASGI app behind ``reach serve http``.

Endpoints (JSON in, JSON out; ``Authorization: Bearer <token>`` names the agent):

* ``POST /v1/invoke`` ``{name, arguments, id?, agent?, run_id?, idempotency_key?}``
  → the ``ToolResult`` as a dict. A tool failure is a *result* (HTTP 200 with
  ``ok: false`` and an error code), exactly what ``reach.invoke`` returns;
  HTTP errors are only for the request itself (401, 403, 400, 413, 429).
* ``GET /v1/tools?query=&limit=`` → ``{"tools": [...]}`` (OpenAI ``tools`` entries).
* ``GET /v1/confirmations?status=pending|all``, ``GET /v1/confirmations/{id}``,
  ``POST /v1/confirmations/{id}/approve|reject`` ``{reason?}`` (operators only;
  needs reach-confirm). Approving runs the stored call exactly once, whichever
  instance receives it: the ``pending → approved`` UPDATE decides.
* ``GET /v1/audit/tail?limit=&after=&agent=&tool=&kind=``, ``GET /v1/audit/verify``
  (operators only; needs reach-audit).
* ``GET /healthz`` (process alive), ``GET /readyz`` (the state store answers).

Nothing lives in process memory between requests except caches, so any
instance can take any request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from reach_core.logs import plugin_logger
from reach_core.tokens import MAX_CLIENT_ID, BadToken, TokenFailures, TrustedProxies, bearer_agent, client_id_problem

from .agents import check_agents
from .console import console_routes as _console_routes
from .settings import ServeHttpSettings

__all__ = ["build_app"]


def _log(reach: Any) -> Any:
    """``reach.serve``, masked by the served Reach's redactor (a failure can quote a token)."""
    return plugin_logger("serve", getattr(reach, "redactor", None))


class HttpError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.headers = status, code, message, headers


def slow_body(seconds: float) -> HttpError:
    """408 for a body that did not arrive in time; the connection is closed (the rest of the body
    would otherwise be read as the next request)."""
    return HttpError(408, "timeout", f"the request body did not arrive within {seconds:g} s; send it again, "
                                     "faster", {"Connection": "close"})


def _json(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _BadJson(f"the key {key!r} appears twice in one object; send each key once")
        out[key] = value
    return out


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _BadJson(f"the number {text[:40]} is out of range; send a finite number")
    return value


def _no_constant(name: str) -> Any:
    raise _BadJson(f"{name} is not JSON; send a number or null")


class _BadJson(ValueError):
    pass


MAX_DEPTH = 100  # levels of nesting a request body may have (the parser's own stack ends near 1,000)
MAX_DIGITS = 64  # digits of an integer: more is no identifier or amount, and int() of 100,000 digits is slow


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _BadJson(f"a number of {len(text)} digits is out of range; send at most {MAX_DIGITS} digits")
    return int(text)


def _depth(data: Any) -> int:
    """Deepest nesting of lists and objects, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        elif not isinstance(value, list):
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((v, level + 1) for v in value if isinstance(v, dict | list))
    return deepest


def parse_object(raw: bytes) -> dict[str, Any]:
    """Parse a request body that must be one JSON object; every defect is an HttpError 400."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HttpError(400, "invalid_json",
                        f"the body is not UTF-8 (byte {exc.start}); send a UTF-8 JSON object") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_finite, parse_int=_int,
                          parse_constant=_no_constant)
    except _BadJson as exc:
        raise HttpError(400, "invalid_json", str(exc)) from None
    except RecursionError:
        raise HttpError(400, "invalid_json", "the body is nested too deeply; send a flatter JSON object") from None
    except ValueError as exc:  # JSONDecodeError, and int() refusing a number of thousands of digits
        hint = f" ({exc.msg} at line {exc.lineno} column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise HttpError(400, "invalid_json", f"the body must be a JSON object{hint}") from None
    if not isinstance(data, dict):
        raise HttpError(400, "invalid_json", "the body must be a JSON object")
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _depth(data) > MAX_DEPTH:
        raise HttpError(400, "invalid_json",
                        f"the body is nested more than {MAX_DEPTH} levels deep; send a flatter JSON object")
    try:  # "\ud800" parses to a lone surrogate, which no store or response can encode
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise HttpError(400, "invalid_json",
                        "the body holds a lone UTF-16 surrogate (\\ud800-\\udfff); send valid Unicode text") from None
    except (RecursionError, ValueError):
        raise HttpError(400, "invalid_json", "the body is nested too deeply; send a flatter JSON object") from None
    return data


def _int_param(request: Request, name: str, default: int | None, *, low: int, high: int) -> int | None:
    """A small non-negative integer query parameter, or a 400 that says what is expected."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise HttpError(400, "invalid_request", f"`{name}` must be an integer from {low} to {high}")
    return max(low, min(int(value), high))


def scoped_key(agent: str, key: str) -> str:
    """An idempotency key in the agent's own namespace: one agent can neither replay
    another's recorded result nor claim its key first (as ``reach serve mcp`` does).
    The agent's length is part of it, so no agent name and key can spell another's.
    One that would pass reach's 512 characters is written as its SHA-256 instead."""
    scoped = f"http:{len(agent)}:{agent}:{key}"
    if len(scoped) <= 512:
        return scoped
    import hashlib

    return "http:sha256:" + hashlib.sha256(scoped.encode("utf-8", "surrogatepass")).hexdigest()


class Api:
    """Request handlers bound to one ``Reach`` and its settings."""

    def __init__(self, reach: Any, settings: ServeHttpSettings) -> None:
        self.reach = reach
        self.settings = settings
        self._tokens = [(t.encode("utf-8"), a) for t, a in settings.token_agents().items()]
        self._operators = set(settings.operators)
        #: failed tokens per client address (API and console login alike), this instance's own
        self.failures = TokenFailures(limit=settings.max_token_failures)

    # ------------------------------------------------------------ request helpers
    def check_failures(self, request: Request) -> str | None:
        """The client's address, after a 429 if it sent too many failed tokens of late."""
        address = request.client.host if request.client else None
        wait = self.failures.retry_after(address)
        if wait is not None:
            raise HttpError(429, "rate_limited", f"too many failed tokens from this address; try again in {wait} s",
                            {"Retry-After": str(wait)})
        return address

    def agent_of(self, request: Request) -> str:
        """The agent the request's token names. A request that sends an ``Authorization`` header
        is judged by it alone: anything but exactly one configured token is 401 (and counted
        against the client), never the anonymous agent (``reach_core.tokens.bearer_agent``)."""
        values = request.headers.getlist("authorization")
        if values:
            address = self.check_failures(request)
            try:
                agent = bearer_agent(values, self._tokens)
            except BadToken as exc:
                self.failures.failed(address)
                raise HttpError(401, "unauthorized", str(exc)) from None
            if agent is not None:
                return agent
        if self.settings.anonymous_agent:
            self._anonymous_from_here(request)
            return self.settings.anonymous_agent
        raise HttpError(401, "unauthorized",
                        "send Authorization: Bearer <token> with a token configured in [plugins.reach-serve]")

    def _anonymous_from_here(self, request: Request) -> None:
        """Refuse a token-less request a browser sent for another site, or through a name
        re-pointed at this server (DNS rebinding): the rule every front-end shares,
        ``reach_core.tokens.tokenless_refusal``."""
        from reach_core.tokens import tokenless_refusal

        problem = tokenless_refusal(request.headers, self.settings.allowed_hosts, "plugins.reach-serve")
        if problem is not None:
            raise HttpError(403, "forbidden", problem)

    def operator_of(self, request: Request) -> str:
        """The operator a request's bearer token names. Operators act only with a token: no header
        (X-Forwarded-For, Host: localhost, an Origin) and no ``anonymous_agent`` stands in for one."""
        if not request.headers.getlist("authorization"):
            raise HttpError(401, "unauthorized",
                            "confirmations and the audit log need Authorization: Bearer <token> with an "
                            "operator's token from [plugins.reach-serve]")
        agent = self.agent_of(request)
        if agent not in self._operators:
            raise HttpError(403, "forbidden",
                            f"agent {agent!r} is not an operator; list it in [plugins.reach-serve] operators")
        return agent

    async def body(self, request: Request) -> dict[str, Any]:
        """The request's JSON object, read under the size limit as it streams in.

        A declared ``Content-Length`` over the limit is refused before a byte is
        read; a chunked body is read piece by piece and refused as soon as it
        passes the limit, so an endless body costs at most ``max_body_bytes`` of
        memory; a body that has not arrived whole ``read_timeout`` seconds after the server
        started reading it is 408 (and the connection closed). Anything that is not one
        well-formed JSON object (bad UTF-8, lone
        surrogates, duplicate keys, NaN, numbers too long to be numbers, nesting
        deeper than the parser's stack) is a 400 with a JSON error, never a 500.
        """
        limit = self.settings.max_body_bytes
        size = request.headers.get("content-length")
        if size is not None and size.isascii() and size.isdigit() and int(size) > limit:
            raise HttpError(413, "too_large", f"the body exceeds {limit} bytes; send at most {limit} bytes")
        raw = bytearray()
        try:
            async with asyncio.timeout(self.settings.read_timeout):  # a body a byte a minute holds a worker
                async for chunk in request.stream():
                    raw += chunk
                    if len(raw) > limit:
                        raise HttpError(413, "too_large",
                                        f"the body exceeds {limit} bytes; send at most {limit} bytes")
        except TimeoutError:
            raise slow_body(self.settings.read_timeout) from None
        if not raw:
            return {}
        return parse_object(bytes(raw))

    # ------------------------------------------------------------ endpoints
    async def invoke(self, request: Request) -> Response:
        agent = self.agent_of(request)
        data = await self.body(request)
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise HttpError(400, "invalid_request", '`name` (the tool name, a string) is required')
        arguments = data.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, (dict, str)):
            raise HttpError(400, "invalid_request", "`arguments` must be an object or a JSON string")
        claimed = data.get("agent")
        if claimed is not None and claimed != agent:
            raise HttpError(403, "forbidden", f"this token acts as agent {agent!r}, not {claimed!r}")
        # ids the client chooses end up in logs, the audit trail and the console; an empty one is
        # refused rather than dropped (an unset variable: a dropped key lets a retry run twice)
        for field, most in (("id", MAX_CLIENT_ID), ("run_id", MAX_CLIENT_ID), ("idempotency_key", 512)):
            if data.get(field) is not None and (problem := client_id_problem(field, data[field], most)):
                raise HttpError(400, "invalid_request", problem)
        call = {"id": data.get("id") or f"http_{uuid.uuid4().hex[:16]}", "name": name, "arguments": arguments}
        run_id, key = data.get("run_id"), data.get("idempotency_key")
        if not key and run_id:  # what the core would derive (run id + call id), scoped the same way
            key = f"{run_id}:{call['id']}"
        result = await self.reach.invoke(call, agent=agent, run_id=run_id,
                                         idempotency_key=scoped_key(agent, key) if key else None)
        return _json(result.to_dict())

    async def tools(self, request: Request) -> Response:
        agent = self.agent_of(request)
        query = request.query_params.get("query") or None
        limit = _int_param(request, "limit", None, low=1, high=10_000)
        tools = self.reach.tools(agent=agent, query=query, limit=limit)
        return _json({"agent": agent, "tools": tools})

    def _queue(self) -> Any:
        try:
            from reach_confirm.plugin import queue_for
        except ImportError:
            raise HttpError(404, "not_installed", "confirmations need the reach-confirm plugin") from None
        return queue_for(self.reach)

    async def confirmations(self, request: Request) -> Response:
        self.operator_of(request)
        status = request.query_params.get("status", "pending")
        items = await self._queue().list(None if status == "all" else status)
        return _json({"confirmations": [c.to_dict() for c in items]})

    async def confirmation(self, request: Request) -> Response:
        self.operator_of(request)
        from reach_confirm.queue import ConfirmationError

        try:
            c = await self._queue().get(request.path_params["cid"])
        except ConfirmationError as exc:
            raise HttpError(404, "not_found", str(exc)) from None
        return _json(c.to_dict())

    async def decide(self, request: Request) -> Response:
        by = self.operator_of(request)
        from reach_confirm.queue import ConfirmationError

        cid, action = request.path_params["cid"], request.path_params["action"]
        data = await self.body(request)
        reason = data.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise HttpError(400, "invalid_request", "`reason` must be a string (the model reads it) or null")
        from .console.routes import clean_reason

        reason = clean_reason(reason) if reason else None  # the console's rule: one line, at most 2,000 characters
        q = self._queue()
        try:
            if action == "approve":
                result = await q.approve(cid, by=by, reason=reason)
                return _json({"confirmation_id": cid, "status": "executed", "result": result.to_dict()})
            if action == "reject":
                c = await q.reject(cid, by=by, reason=reason)
                return _json(c.to_dict())
        except ConfirmationError as exc:
            msg = str(exc)
            status = 404 if msg.startswith("no confirmation") else 409
            raise HttpError(status, "not_found" if status == 404 else "conflict", msg) from None
        raise HttpError(404, "not_found", "use /approve or /reject")

    def _audit(self) -> Any:
        try:
            import reach_audit
        except ImportError:
            raise HttpError(404, "not_installed", "the audit log needs the reach-audit plugin") from None
        return reach_audit

    async def audit_tail(self, request: Request) -> Response:
        self.operator_of(request)
        params = request.query_params
        limit = _int_param(request, "limit", 50, low=1, high=1000) or 50
        after = _int_param(request, "after", None, low=0, high=999_999_999)
        audit = self._audit()
        from reach_audit.query import tail_sync

        await audit.flush(self.reach)  # this instance's own records first
        entries = await asyncio.to_thread(
            tail_sync, self.reach.store, limit=limit, after=after,
            agent=params.get("agent"), tool=params.get("tool"), kind=params.get("kind"),
        )
        return _json({"entries": [e.to_dict() for e in entries]})

    async def audit_verify(self, request: Request) -> Response:
        self.operator_of(request)
        report = await self._audit().verify(self.reach)
        return _json(report.to_dict(), status=200 if report.ok else 409)

    async def healthz(self, request: Request) -> Response:
        return _json({"ok": True})

    async def readyz(self, request: Request) -> Response:
        try:
            await self.reach.store.fetchone("SELECT 1")
        except Exception as exc:  # noqa: BLE001 - reported to the load balancer
            return _json({"ok": False, "error": type(exc).__name__}, status=503)
        return _json({"ok": True})


async def _sweep(reach: Any, interval: float, margin: float) -> None:
    """On a shared store: mark ``running`` ledger rows of dead instances ``unknown``
    (never re-run), without waiting for some instance to restart."""
    guards = getattr(getattr(reach, "runtime", None), "guards", None)
    if guards is None or interval <= 0:
        return
    log = _log(reach)
    while True:
        await asyncio.sleep(interval)
        try:
            marked = await guards.ledger.recover(older_than=guards.stale_before(margin))
            if marked:
                log.warning("reach-serve: %d interrupted call(s) marked unknown", marked)
        except Exception as exc:  # noqa: BLE001 - retried next interval
            log.warning("reach-serve: ledger sweep failed: %r", exc)


def build_app(reach: Any, settings: ServeHttpSettings | None = None, *, manage: bool = True) -> Starlette:
    """The app; with ``manage`` its lifespan starts ``reach`` and closes it (flushing audit)."""
    settings = settings or reach.plugin_settings("reach-serve") or ServeHttpSettings()
    check_agents(reach, settings)
    api = Api(reach, settings)

    def wrap(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)  # type: ignore[no-any-return]
            except HttpError as exc:
                headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else exc.headers
                return _json({"error": {"code": exc.code, "message": exc.message}}, exc.status, headers)
            except ClientDisconnect:
                return Response(status_code=400)  # nobody is listening for an answer
            except Exception as exc:  # noqa: BLE001 - a request must get JSON back, never a bare 500 page
                _log(reach).error("reach-serve: %s %s failed: %r", request.method, request.url.path, exc)
                return _json({"error": {"code": "internal_error",
                                        "message": "the server failed on this request; do not resend it unchanged"}},
                             500)

        return endpoint

    routes = [
        Route("/v1/invoke", wrap(api.invoke), methods=["POST"]),
        Route("/v1/tools", wrap(api.tools), methods=["GET"]),
        Route("/v1/confirmations", wrap(api.confirmations), methods=["GET"]),
        Route("/v1/confirmations/{cid}", wrap(api.confirmation), methods=["GET"]),
        Route("/v1/confirmations/{cid}/{action}", wrap(api.decide), methods=["POST"]),
        Route("/v1/audit/tail", wrap(api.audit_tail), methods=["GET"]),
        Route("/v1/audit/verify", wrap(api.audit_verify), methods=["GET"]),
        Route("/healthz", api.healthz, methods=["GET"]),
        Route("/readyz", api.readyz, methods=["GET"]),
        *_console_routes(api),  # /console: the operators' pages (reach_serve.console)
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if not manage:
            yield
            return
        await reach.start()
        task = None
        if getattr(reach.store, "shared", False):
            task = asyncio.create_task(_sweep(reach, settings.sweep_interval, settings.stale_margin),
                                       name="reach-serve-sweep")
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await reach.aclose()

    async def http_error(request: Request, exc: Exception) -> Response:
        """Starlette's own 404/405 (no route, wrong method) as JSON, like every other error here."""
        status = getattr(exc, "status_code", 500)
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "http_error")
        # the path is not echoed back: it is the caller's text, and may be markup
        message = {404: "no such endpoint; the API is under /v1 (POST /v1/invoke, GET /v1/tools ...)",
                   405: f"{request.method} is not allowed on this endpoint"}.get(status, "HTTP error")
        headers = getattr(exc, "headers", None)
        return _json({"error": {"code": code, "message": message}}, status, headers)

    # the client address every handler reads (failed tokens, console logins): the peer, or what the
    # proxies named in trusted_proxies say; never a header the client wrote itself
    middleware = [Middleware(TrustedProxies, trusted=settings.trusted_proxies)] if settings.trusted_proxies else []
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                     exception_handlers={StarletteHTTPException: http_error})
