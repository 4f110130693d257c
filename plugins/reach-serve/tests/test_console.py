"""The operators' console over real HTTP (no browser): sessions, CSRF, decisions, masking.

Attack families, each parametrised: tokens that are not an operator's, forged or
tampered session cookies, forms without a valid CSRF token or from another site,
arguments built to leak a secret or inject markup. Every refusal leaves the
request pending and the connector untouched.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from console_server import OPS, OPS2, WORKER, Served, csrf_of, model_sees, new_reach, ran, serve


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module (each test asks with fresh arguments, so requests never mix)."""
    yield from serve(tmp_path_factory.mktemp("console"))


def _decide(c: httpx.Client, cid: str, action: str, **form: str) -> httpx.Response:
    return c.post(f"/console/approvals/{cid}/{action}", data=form)


def _pending(served: Served, cid: str) -> None:
    assert served.confirmation(cid)["status"] == "pending"
    assert ran(served, cid) == 0


# -- logging in ---------------------------------------------------------------------------

def _login_form(served: Served) -> tuple[httpx.Client, str]:
    c = httpx.Client(base_url=served.base, timeout=30, verify=False)
    return c, csrf_of(c.get("/console/login").text)


@pytest.mark.parametrize("token", [WORKER, f" {WORKER} ", f"{WORKER}\n"])
def test_an_agent_token_cannot_open_the_console(served: Served, token: str) -> None:
    c, csrf = _login_form(served)
    resp = c.post("/console/login", data={"csrf": csrf, "token": token})
    assert resp.status_code == 403 and "not an operator" in resp.text
    assert "reach_console=" not in resp.headers.get("set-cookie", "")
    assert c.get("/console/approvals", follow_redirects=False).status_code == 303


@pytest.mark.parametrize("token", ["", " ", "tok-ops-00000000", "tok-ops-0000000011", "TOK-OPS-000000001",
                                   "tok-ops-000000001\x00", "tok‐ops‐000000001", "tok-ops-00000000１",
                                   "tok-ops-000000001 tok-ops-000000001", "Bearer tok-ops-000000001", "x" * 5000])
def test_unknown_tokens_are_refused(served: Served, token: str) -> None:
    c, csrf = _login_form(served)
    resp = c.post("/console/login", data={"csrf": csrf, "token": token})
    assert resp.status_code == 401 and "Unknown token" in resp.text
    assert "reach_console=" not in resp.headers.get("set-cookie", "")


@pytest.mark.parametrize("csrf", [None, "", "x", "forged-token-value"])
def test_login_needs_the_login_forms_csrf_token(served: Served, csrf: str | None) -> None:
    c, _ = _login_form(served)
    resp = c.post("/console/login", data={"token": OPS, **({"csrf": csrf} if csrf is not None else {})})
    assert resp.status_code == 403 and "reach_console=" not in resp.headers.get("set-cookie", "")
    fresh = httpx.Client(base_url=served.base, verify=False)  # no login cookie at all, the csrf of another browser
    _, other = _login_form(served)
    assert fresh.post("/console/login", data={"token": OPS, "csrf": other}).status_code == 403


@pytest.mark.parametrize("token", [WORKER, OPS, "tok-unknown-0001"])
@pytest.mark.parametrize("path", ["/console/approvals", "/console/approvals/fragment", "/console/runs",
                                  "/console/runs/run-x", "/console/audit", "/console/audit.csv", "/console/audit/1",
                                  "/console/tools"])
def test_a_bearer_header_opens_no_page(served: Served, token: str, path: str) -> None:
    with served.client(token) as c:
        resp = c.get(path, follow_redirects=False)
    assert resp.status_code in (303, 401), resp.text[:300]
    assert "pending" not in resp.text


def test_session_cookie_flags_and_security_headers(served: Served) -> None:
    c, csrf = _login_form(served)
    resp = c.post("/console/login", data={"csrf": csrf, "token": OPS}, follow_redirects=False)
    cookie = [h for h in resp.headers.get_list("set-cookie") if h.startswith("reach_console=")][0]
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered and "path=/console" in lowered
    assert "secure" not in lowered  # plain http on loopback: a Secure cookie would never come back
    page = c.get("/console/approvals")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    assert "https://" not in page.text  # no CDN: every asset from the wheel
    for asset in ("console.js", "console.css"):
        assert c.get(f"/console/static/{asset}").status_code == 200
    assert c.get("/console/static/..%2Froutes.py").status_code == 404


async def test_the_cookie_is_secure_over_tls(tmp_path: Any) -> None:
    from reach_serve.app import build_app

    reach = new_reach(tmp_path)
    app = build_app(reach, manage=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="https://console.test") as c:
        csrf = csrf_of((await c.get("/console/login")).text)
        resp = await c.post("/console/login", data={"csrf": csrf, "token": OPS})
        cookie = [h for h in resp.headers.get_list("set-cookie") if h.startswith("reach_console=")][0]
        assert "secure" in cookie.lower() and "samesite=strict" in cookie.lower()
    await reach.aclose()


# -- forged sessions ------------------------------------------------------------------------

def _tamper(cookie: str, how: str) -> str:
    body, sig = cookie.split(".")
    data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    if how == "operator":
        data["op"] = "ops2"
    elif how == "expiry":
        data["exp"] += 10**9
    elif how == "worker":
        data["op"] = "worker"
    else:
        return {"sig": f"{body}.{sig[:-2]}AA", "nosig": body, "empty": "", "dots": f"{body}.{sig}.x",
                "swap": f"{sig}.{body}", "huge": "a" * 5000 + "." + sig}[how]
    raw = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{raw}.{sig}"


@pytest.mark.parametrize("how", ["operator", "expiry", "worker", "sig", "nosig", "empty", "dots", "swap", "huge"])
def test_a_tampered_session_cookie_is_no_session(served: Served, how: str) -> None:
    cid = served.ask()
    c = served.login()
    csrf = csrf_of(c.get("/console/approvals").text)
    forged = _tamper(c.cookies["reach_console"], how)
    c.cookies.clear()
    c.cookies.set("reach_console", forged, domain="127.0.0.1", path="/console")
    assert c.get("/console/approvals").status_code == 303
    assert _decide(c, cid, "approve", csrf=csrf).status_code == 401
    _pending(served, cid)


def test_sessions_end_with_their_token_or_operator_role() -> None:
    from reach_serve.console.auth import COOKIE, Sessions
    from starlette.requests import Request

    tokens = {"tok-ops-000000001": "ops", "tok-w-00000000001": "worker"}
    found = Sessions(tokens, {"ops"}).agent_of_token("tok-ops-000000001")
    assert found is not None and found[0] == "ops"
    issued = Sessions(tokens, {"ops"}).issue("ops", found[1])  # the token's digest, keyed as the login makes it

    def read(sessions: Sessions) -> Any:
        scope = {"type": "http", "headers": [(b"cookie", f"{COOKIE}={issued}".encode())]}
        return sessions.read(Request(scope))

    assert read(Sessions(tokens, {"ops"})) is not None
    assert read(Sessions(tokens, set())) is None  # no longer an operator
    assert read(Sessions({"tok-ops-000000002": "ops", "tok-w-00000000001": "worker"}, {"ops"})) is None  # rotated
    expired = Sessions(tokens, {"ops"}).issue("ops", "x" * 32, now=1.0)
    assert expired != issued


# -- CSRF and cross-site forms ------------------------------------------------------------------

FORGED_FORMS: list[tuple[str, dict[str, Any]]] = [
    ("missing", {"data": {}}),
    ("empty", {"data": {"csrf": ""}}),
    ("wrong", {"data": {"csrf": "A" * 43}}),
    ("spaces", {"data": {"csrf": " {csrf} "}}),
    ("case", {"data": {"csrf": "{upper}"}}),
    ("truncated", {"data": {"csrf": "{short}"}}),
    ("other operator's", {"data": {"csrf": "{other}"}}),
    ("twice", {"content": "csrf={csrf}&csrf={csrf}", "headers": {"content-type": "application/x-www-form-urlencoded"}}),
    ("json", {"content": '{{"csrf": "{csrf}"}}', "headers": {"content-type": "application/json"}}),
    ("text/plain", {"content": "csrf={csrf}", "headers": {"content-type": "text/plain"}}),
    ("multipart", {"files": {"csrf": (None, "{csrf}")}}),
    ("query string", {"params": {"csrf": "{csrf}"}, "data": {}}),
    ("cross-site origin", {"data": {"csrf": "{csrf}"}, "headers": {"origin": "https://evil.example"}}),
    ("null origin", {"data": {"csrf": "{csrf}"}, "headers": {"origin": "null"}}),
    ("other port", {"data": {"csrf": "{csrf}"}, "headers": {"origin": "http://127.0.0.1:1"}}),
    ("other host", {"data": {"csrf": "{csrf}"}, "headers": {"origin": "http://localhost"}}),
    ("host as prefix", {"data": {"csrf": "{csrf}"}, "headers": {"origin": "http://127.0.0.1.evil.example"}}),
    ("userinfo", {"data": {"csrf": "{csrf}"}, "headers": {"origin": "http://evil@127.0.0.1"}}),
    ("empty origin", {"data": {"csrf": "{csrf}"}, "headers": {"origin": ""}}),
    ("forwarded host mismatch", {"data": {"csrf": "{csrf}"},
                                 "headers": {"origin": "https://evil.example", "x-forwarded-host": "console.example"}}),
    ("fetch cross-site", {"data": {"csrf": "{csrf}"}, "headers": {"sec-fetch-site": "cross-site"}}),
    ("fetch same-site", {"data": {"csrf": "{csrf}"}, "headers": {"sec-fetch-site": "same-site"}}),
    ("bad utf-8", {"content": b"csrf=\xff\xfe", "headers": {"content-type": "application/x-www-form-urlencoded"}}),
    ("oversized", {"content": "csrf={csrf}&reason=" + "x" * 70_000,
                   "headers": {"content-type": "application/x-www-form-urlencoded"}}),
]


def _fill(value: Any, tokens: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**tokens)
    if isinstance(value, dict):
        return {k: _fill(v, tokens) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_fill(v, tokens) for v in value)
    return value


@pytest.mark.parametrize("action", ["approve", "reject"])
@pytest.mark.parametrize(("name", "request_kw"), FORGED_FORMS, ids=[n for n, _ in FORGED_FORMS])
def test_a_form_without_this_sessions_csrf_token_is_refused(served: Served, action: str, name: str,
                                                            request_kw: dict[str, Any]) -> None:
    cid = served.ask()
    c = served.login()
    csrf = csrf_of(c.get("/console/approvals").text)
    other = csrf_of(served.login(OPS2).get("/console/approvals").text)
    kw = _fill(request_kw, {"csrf": csrf, "upper": csrf.swapcase(), "short": csrf[:-1], "other": other})
    if action == "reject" and "data" in kw:
        kw["data"] = {**kw["data"], "reason": "no"}
    resp = c.post(f"/console/approvals/{cid}/{action}", **kw)
    assert resp.status_code in (400, 403, 413, 415), (resp.status_code, resp.text[:300])
    _pending(served, cid)
    ok = _decide(c, cid, action, csrf=csrf, reason="checked")  # the real form still works
    assert ok.status_code == 303


def test_logout_needs_the_csrf_token_and_ends_the_session(served: Served) -> None:
    c = served.login()
    csrf = csrf_of(c.get("/console/approvals").text)
    assert c.post("/console/logout", data={"x": "1"}).status_code == 403
    assert c.get("/console/approvals").status_code == 200
    resp = c.post("/console/logout", data={"csrf": csrf})
    assert resp.status_code == 303 and resp.headers["location"] == "/console/login"
    assert c.get("/console/approvals").status_code == 303


# -- decisions ------------------------------------------------------------------------------

def test_approve_runs_the_call_once_and_names_the_operator(served: Served) -> None:
    cid = served.ask(12)
    c = served.login()
    resp = _decide(c, cid, "approve", csrf=csrf_of(c.get("/console/approvals").text))
    assert resp.status_code == 303 and "done=approved" in resp.headers["location"]
    assert ran(served, cid) == 1 and {"amount": 12} in served.counter.seen
    assert "the call ran once (ok)" in c.get(resp.headers["location"]).text
    events = {e["status"]: e for e in served.audit(kind="confirmation") if e["confirmation_id"] == cid}
    assert events["approved"]["by"] == "ops" and events["executed"]["by"] == "ops"
    # a second click, from this operator or another, is "already decided" and runs nothing
    for client in (c, served.login(OPS2)):
        again = _decide(client, cid, "approve", csrf=csrf_of(client.get("/console/approvals").text))
        assert again.status_code == 409 and "Already decided" in again.text and "executed by ops" in again.text
    assert ran(served, cid) == 1


def test_concurrent_clicks_of_two_operators_run_the_call_once(served: Served) -> None:
    cids = [served.ask() for _ in range(5)]
    clients = [served.login(OPS), served.login(OPS2)]
    tokens = [csrf_of(c.get("/console/approvals").text) for c in clients]
    codes: list[int] = []
    lock = threading.Lock()

    def click(i: int, cid: str) -> None:
        code = _decide(clients[i], cid, "approve", csrf=tokens[i]).status_code
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=click, args=(i, cid)) for cid in cids for i in (0, 1, 0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(codes) == [303] * 5 + [409] * 15
    assert [ran(served, cid) for cid in cids] == [1] * 5


def test_reject_needs_a_reason_and_the_model_reads_it(served: Served) -> None:
    cid = served.ask()
    c = served.login()
    csrf = csrf_of(c.get("/console/approvals").text)
    for blank in ("", "   ", "\t\n"):
        resp = _decide(c, cid, "reject", csrf=csrf, reason=blank)
        assert resp.status_code == 400 and "Give a reason" in resp.text
    _pending(served, cid)
    resp = _decide(c, cid, "reject", csrf=csrf, reason="  limit is 3 EUR\nwithout a manager ")
    assert resp.status_code == 303 and "done=rejected" in resp.headers["location"]
    assert served.confirmation(cid)["reason"] == "limit is 3 EUR without a manager"
    events = {e["status"]: e for e in served.audit(kind="confirmation") if e["confirmation_id"] == cid}
    assert events["rejected"]["by"] == "ops" and events["rejected"]["reason"] == "limit is 3 EUR without a manager"
    assert ran(served, cid) == 0
    assert "limit is 3 EUR" in model_sees(served, cid)


def test_an_operator_cannot_approve_its_own_request(served: Served) -> None:
    with served.client(OPS) as c:
        mine = c.post("/v1/invoke", json={"name": "add_credit", "arguments": {"amount": 3}}).json()
    cid = mine["meta"]["confirmation_id"]
    ops = served.login(OPS)
    resp = _decide(ops, cid, "approve", csrf=csrf_of(ops.get("/console/approvals").text))
    assert resp.status_code == 409 and "cannot approve its own request" in resp.text
    assert ran(served, cid) == 0
    other = served.login(OPS2)
    assert _decide(other, cid, "approve", csrf=csrf_of(other.get("/console/approvals").text)).status_code == 303
    assert ran(served, cid) == 1


@pytest.mark.parametrize("cid", ["cf_unknown", "cf_" + "x" * 300, "..", "cf_%00", "cf_%3Cscript%3E"])
def test_unknown_requests_and_actions(served: Served, cid: str) -> None:
    c = served.login()
    csrf = csrf_of(c.get("/console/approvals").text)
    resp = c.post(f"/console/approvals/{cid}/approve", data={"csrf": csrf})
    assert resp.status_code in (404, 405) and "<script>" not in resp.text
    real = served.ask()
    assert _decide(c, real, "delete", csrf=csrf).status_code == 404
    _pending(served, real)


# -- what the page shows ------------------------------------------------------------------------

SECRETS = [
    {"api_key": "sk-live-abcdefghijklmnop1234"},
    {"note": "password=hunter2hunter2"},
    {"note": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijk"},
    {"account": "postgres://app:s3cr3t-pass@db.internal/x"},
    {"note": "aws AKIAIOSFODNN7EXAMPLE"},
    {"note": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
]


@pytest.mark.parametrize("args", SECRETS)
def test_arguments_are_shown_with_secrets_masked(served: Served, args: dict[str, str]) -> None:
    cid = served.ask(**args)
    page = served.login().get("/console/approvals").text
    assert cid in page and "[REDACTED]" in page
    for secret in ("sk-live-abcdefghijklmnop1234", "hunter2hunter2", "eyJzdWIiOiIxIn0", "s3cr3t-pass",
                   "AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghij"):
        assert secret not in page


MARKUP = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "</pre><form action=//evil>",
          "{{ 7*7 }}", "javascript:alert(1)", "\u202egnp.exe"]


@pytest.mark.parametrize("text", MARKUP)
def test_arguments_cannot_inject_markup(served: Served, text: str) -> None:
    served.ask(note=text, account=text)
    page = served.login().get("/console/approvals").text
    for raw in ("<script>alert", "<img src=x", "<form action=//evil"):
        assert raw not in page
    assert "{{ 7*7 }}" not in page or "49" not in page.split("note")[1][:40]


def test_the_list_is_newest_first_and_the_fragment_says_when_nothing_changed(served: Served) -> None:
    first, second = served.ask(), served.ask()
    c = served.login()
    page = c.get("/console/approvals").text
    assert page.index(second) < page.index(first)
    frag = c.get("/console/approvals/fragment")
    version = frag.headers["x-console-version"]
    assert c.get("/console/approvals/fragment", params={"v": version}).status_code == 204
    third = served.ask()
    changed = c.get("/console/approvals/fragment", params={"v": version})
    assert changed.status_code == 200 and third in changed.text and " pending" in changed.text
    anonymous = httpx.get(f"{served.base}/console/approvals/fragment", verify=False)
    assert anonymous.status_code == 401


# -- runs, audit, tools ---------------------------------------------------------------------------

def _calls(served: Served, run_id: str) -> None:
    with served.client() as c:
        assert c.post("/v1/invoke", json={"name": "lookup", "arguments": {"city": "Oslo"},
                                          "run_id": run_id}).json()["ok"]
        bad = c.post("/v1/invoke", json={"name": "lookup", "arguments": {"town": "=HYPERLINK(\"x\")"},
                                         "run_id": run_id}).json()
        assert bad["error"]["code"] == "invalid_arguments"


def test_runs_list_a_run_and_its_page_links_each_call_to_its_record(served: Served) -> None:
    _calls(served, "run-console-1")
    c = served.login()
    runs = c.get("/console/runs")
    assert runs.status_code == 200 and "/console/run?id=run-console-1" in runs.text
    page = c.get("/console/runs/run-console-1")
    assert page.status_code == 200 and "invalid_arguments" in page.text and "Oslo" in page.text
    seqs = [int(x) for x in re.findall(r'href="/console/audit/(\d+)"', page.text)]
    assert len(seqs) == 2
    record = c.get(f"/console/audit/{seqs[0]}")
    assert record.status_code == 200 and "run-console-1" in record.text and "lookup" in record.text
    assert c.get("/console/runs/no-such-run").status_code == 404
    assert c.get("/console/audit/999999").status_code == 404


def test_audit_filters_verification_and_csv_export(served: Served) -> None:
    _calls(served, "run-console-2")
    c = served.login()
    page = c.get("/console/audit", params={"tool": "lookup", "status": "invalid_arguments", "since": "1h"})
    assert page.status_code == 200 and 'id="chain"' in page.text and "Chain verified" in page.text
    rows = re.findall(r"<tr>.*?</tr>", page.text.split("<tbody>")[1], re.S)
    assert rows and all("invalid_arguments" in r and "lookup" in r for r in rows)
    assert "No record matches" in c.get("/console/audit", params={"agent": "nobody"}).text
    assert "No record matches" in c.get("/console/audit", params={"until": "2000-01-01"}).text
    csv_resp = c.get("/console/audit.csv", params={"tool": "lookup", "status": "invalid_arguments"})
    assert csv_resp.status_code == 200 and csv_resp.headers["content-type"].startswith("text/csv")
    assert "attachment" in csv_resp.headers["content-disposition"]
    lines = list(csv.reader(io.StringIO(csv_resp.text)))
    assert lines[0][:3] == ["seq", "ts", "kind"] and len(lines) >= 2
    assert all(line[11] == "invalid_arguments" for line in lines[1:])


@pytest.mark.parametrize("value", ["bogus", "yesterday", "2026-13-45", "1y", "<script>", "9" * 300])
def test_a_bad_time_filter_is_a_message(served: Served, value: str) -> None:
    c = served.login()
    page = c.get("/console/audit", params={"since": value})
    assert page.status_code == 400 and "must look like" in page.text and "<script>" not in page.text
    assert c.get("/console/audit.csv", params={"until": value}).status_code == 400


@pytest.mark.parametrize("text", ["=1+2", "+SUM(A1)", "-2+3", "@SUM(A1)", "\t=1", "=HYPERLINK(\"http://x\")"])
def test_csv_cells_cannot_run_as_formulas(text: str) -> None:
    from reach_audit.spreadsheet import cell

    assert cell(text).startswith("'")
    assert cell({"a": text}).startswith("{") and cell(12) == 12 and cell("fine") == "fine"


def test_a_broken_chain_is_shown(tmp_path: Any) -> None:
    import sqlite3

    gen = serve(tmp_path)
    served = next(gen)
    try:
        _calls(served, "run-tamper")
        c = served.login()
        assert "Chain verified" in c.get("/console/audit").text
        db = sqlite3.connect(tmp_path / "data" / "reach.db")
        db.execute("DROP TRIGGER audit_log_no_update")
        db.execute("UPDATE audit_log SET record = replace(record, 'Oslo', 'Rome') WHERE seq = 1")
        db.commit()
        db.close()
        page = c.get("/console/audit")
        assert "Chain BROKEN at record #1" in page.text
    finally:
        gen.close()


def test_tools_by_agent_tier_and_pin(served: Served) -> None:
    served.reach.pin_tools(["lookup"])
    page = served.login().get("/console/tools").text

    def verdict(agent: str, tool: str) -> str:
        row = re.search(rf'<tr data-agent="{agent}" data-tool="{tool}">(.*?)</tr>', page, re.S)
        assert row, (agent, tool)
        return " ".join(re.sub(r"<[^>]+>", " ", row.group(1)).split())

    assert "runs" in verdict("worker", "lookup") and "pinned, matches" in verdict("worker", "lookup")
    assert "asks a person" in verdict("worker", "add_credit") and "not pinned" in verdict("worker", "add_credit")
    assert "runs" in verdict("default", "add_credit")
    assert verdict("guest", "add_credit").startswith("add_credit denied") and "runs" in verdict("guest", "lookup")


@pytest.mark.parametrize("run_id", ["<script>alert(1)</script>", "run\u202e1", "../../etc/passwd", "%00", "a" * 500,
                                    "run-1' OR '1'='1"])
def test_hostile_run_ids_find_nothing_and_inject_nothing(served: Served, run_id: str) -> None:
    from urllib.parse import quote

    page = served.login().get("/console/runs/" + quote(run_id, safe=""))
    assert page.status_code == 404 and "<script>alert" not in page.text


def test_a_long_queue_is_shown_a_page_at_a_time(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    from reach_serve.console import routes

    monkeypatch.setattr(routes, "PAGE_SIZE", 3)
    newest = [served.ask() for _ in range(4)][::-1]
    c = served.login()
    first = c.get("/console/approvals").text
    total = int(re.search(r"(\d+) pending", first).group(1))  # type: ignore[union-attr]
    assert total >= 4 and first.count('class="card request"') == 3 and "(showing 1–3)" in first
    assert [cid for cid in newest[:3] if cid in first] == newest[:3] and newest[3] not in first
    assert 'href="/console/approvals?page=2">Older requests' in first
    second = c.get("/console/approvals", params={"page": "2"}).text
    assert newest[3] in second and "Newer requests" in second
    for odd in ("0", "-1", "x", "99999999", "1e3"):
        assert c.get("/console/approvals", params={"page": odd}).status_code == 200


def test_behind_a_tls_proxy_the_origin_is_the_forwarded_host(served: Served) -> None:
    cid = served.ask()
    c = served.login()
    csrf = csrf_of(c.get("/console/approvals").text)
    resp = c.post(f"/console/approvals/{cid}/reject", data={"csrf": csrf, "reason": "via the proxy"},
                  headers={"origin": "https://console.example", "x-forwarded-host": "console.example"})
    assert resp.status_code == 303


class _AsksForCredit:
    """An in-process scripted model: asks for add_credit once, then answers."""

    name = "script"

    def __init__(self, amount: int) -> None:
        self.amount, self.calls = amount, 0

    def describe(self) -> str:
        return "scripted model"

    async def complete(self, request: Any) -> Any:
        from reach_core import ModelResponse, ModelToolCall, Usage

        self.calls += 1
        if self.calls == 1:
            call = ModelToolCall("c1", "add_credit", json.dumps({"amount": self.amount}))
            return ModelResponse(tool_calls=[call], usage=Usage(10, 5, 0))
        return ModelResponse(text="I asked a person to approve it.", usage=Usage(10, 5, 0))


@pytest.mark.parametrize("said", [
    "Refund order 1182: credit 80 EUR. My password is hunter2hunter2",
    "退款给订单1182 <script>alert(1)</script>",
])
async def test_a_request_from_a_run_shows_the_runs_last_user_message(served: Served, said: str) -> None:
    from console_server import Credit

    agent = new_reach(served.data)  # the model's side: its own process on the same store
    agent.register(Credit())
    await agent.run(said, agent="worker", adapter=_AsksForCredit(amount=7_000 + len(said)))
    await agent.aclose()
    page = served.login().get("/console/approvals").text
    assert 'class="user-message model"' in page
    assert "hunter2hunter2" not in page and "<script>alert" not in page
    visible = said.split(" My password")[0].split(" <script>")[0]
    assert visible in page
