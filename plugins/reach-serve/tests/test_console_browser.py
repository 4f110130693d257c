"""The console in a real browser: Debian's chromium driven by Playwright (no browser download).

The tests click through what an operator does: a request appears while the page is
open, approve it (the connector counts one run), a second operator's stale click is
told "already decided", reject with a reason (the model reads it), a forged post is
refused, an agent's token is refused. Screenshots of each page at desktop and phone
width go to the test's tmp directory (and to ``$REACH_CONSOLE_SCREENSHOTS`` when set:
``nox -s console_screenshots`` uses that for the docs).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_server import OPS, OPS2, WORKER, Served, model_sees, ran, serve

CHROMIUM = os.environ.get("REACH_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
WAIT_MS = 20_000  # generous: a loaded CI machine; nothing here measures speed

if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
    pytest.fail(f"the console's browser tests need Debian's chromium at {CHROMIUM}: apt-get install -y chromium "
                "(or set REACH_CHROMIUM)", pytrace=False)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("console-browser"))


@pytest.fixture
def shots(tmp_path: Path) -> Any:
    """``shots(page, name)``: a full-page PNG at the page's current width."""
    folders = [tmp_path / "screenshots"]
    if os.environ.get("REACH_CONSOLE_SCREENSHOTS"):
        folders.append(Path(os.environ["REACH_CONSOLE_SCREENSHOTS"]))

    def take(page: Any, name: str) -> None:
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(folder / f"{name}.png"), full_page=True)

    return take


def login(browser: Any, served: Served, token: str = OPS, viewport: dict[str, int] = DESKTOP) -> Any:
    """A fresh browser context logged in with the keyboard alone; returns its page on Approvals."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{served.base}/console")
    assert page.url.endswith("/console/login")
    # the token field takes the focus by itself (autofocus), but only once the page has
    # settled: typing before that would go nowhere on a loaded machine
    page.wait_for_function("document.activeElement && document.activeElement.id === 'token'")
    page.keyboard.type(token)
    assert page.locator("#token").input_value() == token
    page.keyboard.press("Enter")
    page.wait_for_url("**/console/approvals")
    return page


def test_a_request_appears_is_approved_once_and_a_stale_click_is_told(browser: Any, served: Served,
                                                                      shots: Any) -> None:
    first = login(browser, served, OPS)
    second = login(browser, served, OPS2)
    cid = served.ask(77, account="ACME-1", api_key="sk-live-abcdefghijklmnop1234")
    # both pages show it without a reload
    for page in (first, second):
        card = page.locator(f"#req-{cid}")
        card.wait_for()
        assert "add_credit" in card.inner_text() and "worker" in card.inner_text()
        assert "[REDACTED]" in card.inner_text() and "sk-live" not in page.content()
    shots(first, "approvals-desktop")
    # the second operator's page stops hearing from the server: its list goes stale
    second.route("**/console/approvals/fragment*", lambda route: route.abort())
    second.wait_for_load_state("networkidle")  # a poll already on its way has landed
    second.locator(f"#req-{cid}").wait_for()
    first.get_by_role("button", name=f"Approve add_credit ({cid})").click()
    first.wait_for_url("**/console/approvals?done=approved*")
    assert "ran once (ok)" in first.locator("#notice").inner_text()
    assert first.locator(f"#req-{cid}").count() == 0
    assert ran(served, cid) == 1
    second.get_by_role("button", name=f"Approve add_credit ({cid})").click()
    error = second.locator("#decision-error")
    error.wait_for()
    assert "Already decided" in error.inner_text() and "executed by ops" in error.inner_text()
    shots(second, "approvals-already-decided")
    assert ran(served, cid) == 1
    events = {e["status"]: e.get("by") for e in served.audit(kind="confirmation") if e["confirmation_id"] == cid}
    assert events["approved"] == "ops" and events["executed"] == "ops"
    first.context.close()
    second.context.close()


def test_reject_with_a_reason_by_keyboard_and_the_model_reads_it(browser: Any, served: Served, shots: Any) -> None:
    page = login(browser, served, OPS, PHONE)
    cid = served.ask(78)
    page.locator(f"#req-{cid}").wait_for()
    shots(page, "approvals-phone")
    reason_id = f"reason-{cid}"
    for _ in range(200):  # Tab through the page to the reason field: no mouse
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement && document.activeElement.id") == reason_id:
            break
    else:
        pytest.fail("the reason field cannot be reached with Tab")
    page.keyboard.type("over the limit for this account")
    page.keyboard.press("Tab")  # to its Reject button
    focused = page.evaluate("document.activeElement.textContent")
    assert focused.strip() == "Reject"
    page.keyboard.press("Enter")
    page.wait_for_url("**/console/approvals?done=rejected*")
    assert ran(served, cid) == 0
    seen = model_sees(served, cid)
    assert "rejected this action (over the limit for this account)" in seen
    page.context.close()


def test_forged_posts_are_refused_in_the_browser(browser: Any, served: Served) -> None:
    page = login(browser, served, OPS)
    cid = served.ask(79)
    page.locator(f"#req-{cid}").wait_for()
    for body in ("", "reason=x", "csrf=forged"):
        status = page.evaluate(
            """async ([cid, body]) => (await fetch(`/console/approvals/${cid}/approve`, {method: "POST",
                 headers: {"Content-Type": "application/x-www-form-urlencoded"}, body})).status""", [cid, body])
        assert status == 403
    # a page on another site posting a form at the console: no cookie goes with it, and it is refused
    evil = page.context.new_page()
    evil.set_content(f"""<form id=f method=post action="{served.base}/console/approvals/{cid}/approve">
                         <input name=csrf value=guess></form>""")
    with evil.expect_navigation():
        evil.evaluate("document.getElementById('f').submit()")
    assert "Approved" not in evil.content()
    assert ran(served, cid) == 0 and served.confirmation(cid)["status"] == "pending"
    page.context.close()


def test_an_agent_token_is_refused(browser: Any, served: Served, shots: Any) -> None:
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{served.base}/console/approvals")
    assert page.url.endswith("/console/login")
    page.get_by_label("Operator token").fill(WORKER)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()
    assert "not an operator" in page.locator("#login-error").inner_text()
    assert not any(c["name"] == "reach_console" for c in context.cookies())
    shots(page, "login-refused")
    page.goto(f"{served.base}/console/approvals")
    assert page.url.endswith("/console/login")
    context.close()


@pytest.mark.parametrize(("label", "viewport"), [("desktop", DESKTOP), ("phone", PHONE)])
def test_screenshots_of_each_page(browser: Any, served: Served, shots: Any, label: str,
                                  viewport: dict[str, int]) -> None:
    served.ask(80, account="ACME-7", note="refund for order 1182")
    with served.client() as c:
        c.post("/v1/invoke", json={"name": "lookup", "arguments": {"city": "Lisbon"}, "run_id": "run-shots"})
        c.post("/v1/invoke", json={"name": "lookup", "arguments": {"town": "Porto"}, "run_id": "run-shots"})
    page = login(browser, served, OPS, viewport)
    page.locator(".request").first.wait_for()
    pages = [("approvals", "/console/approvals", "Pending approvals"), ("runs", "/console/runs", "Recent runs"),
             ("run", "/console/runs/run-shots", "Run run-shots"), ("audit", "/console/audit", "Audit trail"),
             ("audit-record", "/console/audit/1", "Audit record #1"), ("tools", "/console/tools", "Tools by agent")]
    for name, href, heading in pages:
        page.goto(served.base + href)
        assert page.locator("h1").inner_text() == heading
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], f"{href} scrolls sideways at {viewport['width']} px ({width} px)"
        shots(page, f"{name}-{label}")
    # the audit filters work from the keyboard: type a tool, press Enter
    page.goto(served.base + "/console/audit")
    page.get_by_label("Tool").focus()
    page.keyboard.type("lookup")
    page.keyboard.press("Enter")
    page.wait_for_url("**/console/audit?*tool=lookup*")
    assert "Chain verified" in page.locator("#chain").inner_text()
    page.context.close()
