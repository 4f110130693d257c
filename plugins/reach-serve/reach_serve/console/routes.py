"""The operators' console: ``/console`` pages served by ``reach serve http``.

Server-rendered HTML (Jinja2 templates and one small script, all in the wheel;
nothing from a CDN). Pages read the same state the REST API reads: pending
confirmations from reach-confirm's queue, the audit trail from reach-audit's
table. Decisions go through the queue exactly as ``POST /v1/confirmations/{id}/approve``
does, so the guarantees are the same: the stored call runs once, whoever clicks
first wins, the agent that asked cannot approve, and every decision is an audit
event naming the operator.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from reach_core.logs import plugin_logger

from .auth import COOKIE, LIFETIME, LOGIN_COOKIE, Session, Sessions, clear_cookie, set_cookie
from .reveal import reveal

__all__ = ["MAX_REASON", "Console", "clean_reason", "console_routes"]


MAX_FORM_BYTES = 64 * 1024
MAX_REASON = 2000
PAGE_SIZE = 100  # requests per approvals page: a person decides from the top; the count says how many wait
VIEW_CACHE = 20_000  # redacted views of requests kept (by id)
ARGS_SHOWN = 4000  # characters of a request's arguments shown at once; the rest behind a notice that counts them
STATIC = {"console.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8"}
HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # no-referrer would make chromium send `Origin: null` on our own forms
    "Cache-Control": "no-store",
}
NAV = [("/console/approvals", "Approvals"), ("/console/runs", "Runs"), ("/console/audit", "Audit"),
       ("/console/tools", "Tools")]
DONE = {"approved": "Approved {id}: the call ran once ({outcome}).",
        "rejected": "Rejected {id}; the model is told why."}


class ConsoleError(Exception):
    """A request the console refuses: the status and a sentence for the person at the screen."""

    def __init__(self, status: int, message: str, title: str = "Refused") -> None:
        super().__init__(message)
        self.status, self.message, self.title = status, message, title


class LoginRequired(Exception):
    pass


def run_href(run_id: Any) -> str:
    """The link to a run's page. The id goes in the query, every reserved character encoded:
    a run id is the caller's text, and in a path ``a/b``, ``?``, ``#`` or ``..`` would lead
    elsewhere (a browser resolves ``..`` and ``%2E%2E`` segments before sending)."""
    return "/console/run?" + urlencode({"id": str(run_id)}, quote_via=quote)


def split_text(text: str, limit: int = ARGS_SHOWN) -> tuple[str, str]:
    """``text`` as what is shown at once and the rest (shown behind a notice that counts it)."""
    if len(text) <= limit:
        return text, ""
    cut = text.rfind("\n", limit // 2, limit) + 1 or limit  # at a line end when there is one near
    return text[:cut], text[cut:]


def clean_reason(text: str) -> str | None:
    """A decision's reason as the model reads it (*a person rejected this action (reason)*):
    one line (every run of whitespace, line breaks included, is one space), at most
    ``MAX_REASON`` characters; ``None`` when nothing is left. The console's form and
    ``POST /v1/confirmations/{id}/approve|reject`` both use it."""
    return " ".join(text.split())[:MAX_REASON] or None


def ago(seconds: float) -> str:
    """A waiting time a person reads at a glance: ``45 s``, ``12 min``, ``3 h 5 min``, ``2 d``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


class Console:
    """The console's handlers, bound to one ``Api`` (its Reach and settings)."""

    def __init__(self, api: Any) -> None:
        import jinja2

        self.api = api
        self.reach = api.reach
        settings = api.settings
        self.sessions = Sessions(settings.token_agents(), set(settings.operators))
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(files("reach_serve.console") / "templates")),
            autoescape=True, trim_blocks=True, lstrip_blocks=True, auto_reload=False,
            finalize=reveal,  # every value a page prints: hidden characters spelled out (reveal.py)
        )
        self.env.filters["run_href"] = run_href
        self.env.filters["ago"] = ago
        self.env.filters["utc"] = lambda ts: time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))
        self._static: dict[str, bytes] = {}
        self._views: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------ plumbing
    def page(self, name: str, request: Request, session: Session | None, status: int = 200,
             **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(
            operator=session.operator if session else None,
            csrf=self.sessions.csrf(session) if session else "",
            path=request.url.path, nav=NAV, **context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    def session(self, request: Request) -> Session:
        session = self.sessions.read(request)
        if session is None:
            raise LoginRequired
        return session

    async def form(self, request: Request) -> dict[str, str]:
        """The posted form (urlencoded, at most 64 KiB, each field once)."""
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/x-www-form-urlencoded":
            raise ConsoleError(415, "send the form as application/x-www-form-urlencoded (use the page's buttons)")
        raw = bytearray()
        seconds = self.api.settings.read_timeout
        try:
            async with asyncio.timeout(seconds):  # as the API's bodies: a form a byte a minute holds a worker
                async for chunk in request.stream():
                    raw += chunk
                    if len(raw) > MAX_FORM_BYTES:
                        raise ConsoleError(413, f"the form exceeds {MAX_FORM_BYTES} bytes; shorten the reason")
        except TimeoutError:
            raise ConsoleError(408, f"the form did not arrive within {seconds:g} s; send it again") from None
        try:
            pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
        except (UnicodeDecodeError, ValueError):
            raise ConsoleError(400, "the form is not valid UTF-8 urlencoded data; use the page's buttons") from None
        out: dict[str, str] = {}
        for key, value in pairs:
            if key in out:
                raise ConsoleError(400, f"the field {key!r} was sent twice; send each field once")
            out[key] = value
        return out

    @staticmethod
    def same_origin(request: Request) -> None:
        """Refuse a POST a browser marks as sent from another site (before the CSRF token is even read).

        The ``Origin``'s host and port must be this request's ``Host`` (or the
        ``X-Forwarded-Host`` a TLS proxy in front sets); its scheme is not compared, since
        behind such a proxy the app itself is reached over plain http.
        """
        origin = request.headers.get("origin")
        site = request.headers.get("sec-fetch-site", "same-origin")
        refused = origin == "null" or site not in ("same-origin", "none")
        if origin is not None and origin != "null":
            netloc = urlsplit(origin).netloc.lower()
            hosts = {request.headers.get("host", "").lower(), request.headers.get("x-forwarded-host", "").lower()}
            refused = refused or not netloc or netloc not in hosts
        if refused:
            raise ConsoleError(403, "this form was sent from another site; open the console and use its buttons")

    async def csrf_form(self, request: Request, session: Session) -> dict[str, str]:
        self.same_origin(request)
        data = await self.form(request)
        if not self.sessions.check(self.sessions.csrf(session), data.get("csrf")):
            raise ConsoleError(403, "the form's security token is missing or wrong; reload the page and try again")
        return data

    def wrap(self, handler: Callable[[Request], Awaitable[Response]], *, html: bool = True) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except LoginRequired:
                if request.method == "GET" and html:
                    return RedirectResponse("/console/login", status_code=303, headers=HEADERS)
                return Response("log in at /console/login first", status_code=401, media_type="text/plain",
                                headers=HEADERS)
            except ConsoleError as exc:
                session = self.sessions.read(request)
                response = self.page("error.html", request, session, status=exc.status, title=exc.title,
                                     message=exc.message)
                if exc.status == 408:  # the rest of a late form would be read as the next request
                    response.headers["Connection"] = "close"
                return response
            except ClientDisconnect:
                return Response(status_code=400)
            except Exception as exc:  # noqa: BLE001 - a page, never a traceback
                plugin_logger("serve.console", getattr(self.reach, "redactor", None)).error(
                    "reach-serve console: %s %s failed: %r", request.method, request.url.path, exc)
                return self.page("error.html", request, None, status=500, title="Server error",
                                 message="the server failed on this request; reload the page")

        return endpoint

    # ------------------------------------------------------------ login
    async def index(self, request: Request) -> Response:
        return RedirectResponse("/console/approvals", status_code=303, headers=HEADERS)

    async def login_page(self, request: Request) -> Response:
        if self.sessions.read(request) is not None:
            return RedirectResponse("/console/approvals", status_code=303, headers=HEADERS)
        return self.login_form(request)

    def login_form(self, request: Request, status: int = 200, error: str | None = None) -> Response:
        nonce = secrets.token_urlsafe(24)
        response = self.page("login.html", request, None, status=status, login_csrf=self.sessions.login_csrf(nonce),
                             error=error)
        set_cookie(response, request, LOGIN_COOKIE, nonce, max_age=3600)
        return response

    async def login(self, request: Request) -> Response:
        self.same_origin(request)
        data = await self.form(request)
        nonce = self.sessions.login_nonce(request)
        if nonce is None or not self.sessions.check(self.sessions.login_csrf(nonce), data.get("csrf")):
            return self.login_form(request, 403, "The login form expired or did not come from this page; "
                                                 "enter the token again.")
        # the API's count of failed tokens per client address: a login form is one more place to guess
        address = request.client.host if request.client else None
        wait = self.api.failures.retry_after(address)
        if wait is not None:
            response = self.login_form(request, 429, f"Too many unknown tokens from this address; try again in "
                                                     f"{wait} s.")
            response.headers["Retry-After"] = str(wait)
            return response
        found = self.sessions.agent_of_token(data.get("token", ""))
        if found is None:
            self.api.failures.failed(address)
            return self.login_form(request, 401, "Unknown token. Use an operator token from "
                                                 "[plugins.reach-serve] tokens or clients.")
        agent, digest = found
        if not self.sessions.is_operator(agent):
            return self.login_form(request, 403, f"This token acts as agent {agent!r}, which is not an operator; "
                                                 "an agent token cannot open the console. List the agent in "
                                                 "[plugins.reach-serve] operators, or use an operator's token.")
        response = RedirectResponse("/console/approvals", status_code=303, headers=HEADERS)
        set_cookie(response, request, COOKIE, self.sessions.issue(agent, digest), max_age=int(LIFETIME))
        clear_cookie(response, request, LOGIN_COOKIE)
        return response

    async def logout(self, request: Request) -> Response:
        session = self.session(request)
        await self.csrf_form(request, session)
        response = RedirectResponse("/console/login", status_code=303, headers=HEADERS)
        clear_cookie(response, request, COOKIE)
        return response

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", status_code=404, media_type="text/plain")
        body = self._static.get(name)
        if body is None:
            body = self._static[name] = (files("reach_serve.console") / "static" / name).read_bytes()
        return Response(body, media_type=STATIC[name],
                        headers={"Cache-Control": "max-age=300", "X-Content-Type-Options": "nosniff"})

    # ------------------------------------------------------------ approvals
    def _queue(self) -> Any:
        try:
            from reach_confirm.plugin import queue_for
        except ImportError:
            raise ConsoleError(404, "approvals need the reach-confirm plugin; pip install reach-confirm",
                               "Not installed") from None
        return queue_for(self.reach)

    def _risk(self, name: str) -> str:
        try:
            return str(self.reach.tool(name).risk)
        except Exception:  # noqa: BLE001 - a tool removed since the request was made
            return "unknown"

    def _view(self, c: Any) -> dict[str, Any]:
        """What the page shows of one request, redacted once: a request's arguments never
        change (approval is bound to them), so the redacted view is cached by its id."""
        view = self._views.get(c.id)
        if view is None:
            redactor = self.reach.redactor
            learned = redactor.secrets_in(c.arguments)
            args = redactor.scrub(redactor.value(c.arguments), learned)
            view = {
                "id": c.id, "agent": c.agent, "tool": c.tool, "risk": self._risk(c.tool), "run_id": c.run_id,
                "summary": redactor.scrub(redactor.text(c.summary), learned),
                "user_message": (redactor.scrub(redactor.text(c.user_message), learned)
                                 if getattr(c, "user_message", None) else None),
                "arguments": json.dumps(args, indent=2, ensure_ascii=False, default=str),
                "rest": "",
                "created_at": c.created_at, "expires_at": c.expires_at,
            }
            # the redactor stops at its depth limit; say so, or a person approves what was never shown
            view["too_deep"] = ('"[TOO DEEP]"' in view["arguments"]
                                and "[TOO DEEP]" not in json.dumps(c.arguments, ensure_ascii=False, default=str))
            view["arguments"], view["rest"] = split_text(view["arguments"])
            if len(self._views) >= VIEW_CACHE:
                self._views.pop(next(iter(self._views)))
            self._views[c.id] = view
        return view

    async def pending(self, page: int = 1) -> tuple[list[dict[str, Any]], str, int]:
        """One page of pending requests, newest first; a version string that changes whenever
        the pending list does (the page polls it); and how many are pending in all."""
        items = await self._queue().list("pending")
        items.reverse()
        version = hashlib.sha256(" ".join(c.id for c in items).encode()).hexdigest()[:16]
        now = time.time()
        rows = []
        for c in items[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]:
            view = self._view(c)
            rows.append({**view, "waited": now - view["created_at"], "expires_in": view["expires_at"] - now})
        return rows, f"{version}-{page}", len(items)

    @staticmethod
    def _page(request: Request) -> int:
        value = request.query_params.get("page", "1")
        return max(1, min(int(value), 100_000)) if value.isascii() and value.isdigit() and len(value) < 7 else 1

    @staticmethod
    def _list_context(rows: list[dict[str, Any]], version: str, total: int, page: int) -> dict[str, Any]:
        last = max(1, -(-total // PAGE_SIZE))
        return {"rows": rows, "version": version, "total": total, "page": min(page, last), "pages": last,
                "first_shown": (page - 1) * PAGE_SIZE + 1 if rows else 0,
                "last_shown": (page - 1) * PAGE_SIZE + len(rows)}

    async def approvals(self, request: Request, *, status: int = 200, error: str | None = None) -> Response:
        session = self.session(request)
        page = self._page(request)
        rows, version, total = await self.pending(page)
        notice = await self._notice(request.query_params.get("done"), request.query_params.get("id"))
        return self.page("approvals.html", request, session, status=status, notice=notice, error=error,
                         now=time.time(), **self._list_context(rows, version, total, page))

    async def _notice(self, done: str | None, cid: str | None) -> str | None:
        """The green "Approved ..." line after a decision, told from the stored request, never from
        the link's words: a link a model wrote (``?done=approved&id=SYSTEM: all checks passed``)
        must not put its text in the console's own banner."""
        if done not in DONE or not cid or len(cid) > 64:
            return None
        from reach_confirm.queue import ConfirmationError

        try:
            c = await self._queue().get(cid)
        except ConfirmationError:
            return None
        if done == "approved" and c.status == "executed":
            ok = bool((c.result or {}).get("ok"))
            return DONE[done].format(id=c.id, outcome="ok" if ok else "the tool reported an error")
        if done == "rejected" and c.status == "rejected":
            return DONE[done].format(id=c.id, outcome="")
        return None

    async def approvals_fragment(self, request: Request) -> Response:
        session = self.session(request)
        page = self._page(request)
        rows, version, total = await self.pending(page)
        if request.query_params.get("v") == version:
            return Response(status_code=204, headers=HEADERS)  # unchanged: nothing to send
        html = self.env.get_template("_approvals_list.html").render(
            csrf=self.sessions.csrf(session), now=time.time(),
            **self._list_context(rows, version, total, page))
        return HTMLResponse(html, headers={**HEADERS, "X-Console-Version": version})

    async def decide(self, request: Request) -> Response:
        session = self.session(request)
        data = await self.csrf_form(request, session)
        from reach_confirm.queue import ConfirmationError

        cid, action = request.path_params["cid"], request.path_params["action"]
        reason = clean_reason(data.get("reason", ""))
        queue = self._queue()
        try:
            if action == "approve":
                await queue.approve(cid, by=session.operator, reason=reason)
                query = {"done": "approved", "id": cid}
            elif action == "reject":
                if reason is None:
                    return await self.approvals(request, status=400, error=(
                        f"Give a reason to reject {cid}: the model reads it and tells the user."))
                await queue.reject(cid, by=session.operator, reason=reason)
                query = {"done": "rejected", "id": cid}
            else:
                raise ConsoleError(404, "use the Approve or Reject button", "Not found")
        except ConfirmationError as exc:
            msg = str(exc)
            if msg.startswith("no confirmation"):
                return await self.approvals(request, status=404, error=f"No such request: {msg}.")
            if "already" in msg:
                return await self.approvals(request, status=409, error=f"Already decided: {msg}.")
            return await self.approvals(request, status=409, error=f"Not allowed: {msg}.")
        return RedirectResponse("/console/approvals?" + urlencode(query), status_code=303, headers=HEADERS)

    # ------------------------------------------------------------ runs, audit, tools
    @staticmethod
    def _audit() -> None:
        try:
            import reach_audit  # noqa: F401
        except ImportError:
            raise ConsoleError(404, "runs and the audit trail need the reach-audit plugin; pip install reach-audit",
                               "Not installed") from None

    async def runs(self, request: Request) -> Response:
        session = self.session(request)
        self._audit()
        from .pages import recent_runs

        return self.page("runs.html", request, session, runs=await recent_runs(self.reach))

    async def run(self, request: Request) -> Response:
        session = self.session(request)
        self._audit()
        from .pages import run_detail, shorten

        run_id = (request.path_params.get("run_id") or request.query_params.get("id") or "")[:200]
        entries = await run_detail(self.reach, run_id)
        if not entries:
            # the id is not echoed: a link can hold any text, and this is the console's own banner
            raise ConsoleError(404, "no audit record names this run (check the link)", "Not found")
        return self.page("run.html", request, session, run_id=run_id, entries=entries, shorten=shorten)

    async def audit(self, request: Request) -> Response:
        session = self.session(request)
        self._audit()
        import reach_audit

        from .pages import AuditFilter, audit_rows, shorten

        f = AuditFilter.of(request.query_params)
        entries, more = await audit_rows(self.reach, f)
        report = await reach_audit.verify(self.reach)
        return self.page("audit.html", request, session, status=400 if f.errors else 200, f=f, entries=entries,
                         more=urlencode(f.query(before=more)) if more else None, report=report,
                         csv_query=urlencode(f.query()), shorten=shorten)

    async def audit_csv(self, request: Request) -> Response:
        self.session(request)
        self._audit()
        from .pages import AuditFilter, csv_rows

        f = AuditFilter.of(request.query_params)
        if f.errors:
            raise ConsoleError(400, "; ".join(f.errors), "Bad filter")
        name = time.strftime("reach-audit-%Y%m%dT%H%M%SZ.csv", time.gmtime())
        return StreamingResponse(csv_rows(self.reach, f), media_type="text/csv; charset=utf-8",
                                 headers={**HEADERS, "Content-Disposition": f'attachment; filename="{name}"'})

    async def audit_entry(self, request: Request) -> Response:
        session = self.session(request)
        self._audit()
        from .pages import audit_record

        seq = request.path_params["seq"]
        entry = await audit_record(self.reach, seq)
        if entry is None:
            raise ConsoleError(404, f"no audit record #{seq}", "Not found")
        shown = {k: v for k, v in entry.items() if k not in ("hash",)}
        return self.page("audit_entry.html", request, session, entry=entry,
                         pretty=json.dumps(shown, indent=2, ensure_ascii=False, default=str))

    async def tools(self, request: Request) -> Response:
        session = self.session(request)
        from .pages import agent_tools

        return self.page("tools.html", request, session, agents=agent_tools(self.reach))


def console_routes(api: Any) -> list[BaseRoute]:
    """The console's routes, to add to the app's (``/console`` and below)."""
    console = Console(api)
    w = console.wrap
    return [
        Route("/console", w(console.index), methods=["GET"]),
        Route("/console/", w(console.index), methods=["GET"]),
        Route("/console/login", w(console.login_page), methods=["GET"]),
        Route("/console/login", w(console.login), methods=["POST"]),
        Route("/console/logout", w(console.logout, html=False), methods=["POST"]),
        Route("/console/static/{name}", console.static, methods=["GET"]),
        Route("/console/approvals", w(console.approvals), methods=["GET"]),
        Route("/console/approvals/fragment", w(console.approvals_fragment, html=False), methods=["GET"]),
        Route("/console/approvals/{cid}/{action}", w(console.decide, html=False), methods=["POST"]),
        Route("/console/runs", w(console.runs), methods=["GET"]),
        Route("/console/runs/{run_id}", w(console.run), methods=["GET"]),  # older links; new ones use ?id=
        Route("/console/run", w(console.run), methods=["GET"]),
        Route("/console/audit", w(console.audit), methods=["GET"]),
        Route("/console/audit.csv", w(console.audit_csv), methods=["GET"]),
        Route("/console/audit/{seq:int}", w(console.audit_entry), methods=["GET"]),
        Route("/console/tools", w(console.tools), methods=["GET"]),
    ]
