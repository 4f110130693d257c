"""Red team: a cut never splits a configured secret into pieces the model can read.

Shaping cuts long strings in their middle (``head…[N chars cut]…tail``, ``[… N chars
of line 0 omitted …]``) and read_result cuts an over-long line. The core masked
configured secrets only after the post-invoke hooks, so when a cut fell inside a
secret, each half sat in the middle of the shaped text where the mask (which finds
cut pieces at a text's two ends only) could not see it: the model read the secret's
first or last characters, and two calls with different padding gave it all. The
core now masks the result before any hook sees it. The family places the secret
across each cut (its head and its tail side, at several overlaps), in four result
shapes, in five spellings, and reads it back with read_result.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from conftest import Echo

from reach_core import Reach
from reach_core.redact import MASK

SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
SPELLINGS = {
    "as-is": lambda s: s,
    "upper": lambda s: s.upper(),
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "url-all": lambda s: "".join(f"%{ord(c):02X}" for c in s),
}
FILL = " ".join(f"w{i}" for i in range(4000))[:12000].rstrip()  # no run of 5 characters of any spelling above
BUDGET = {"default_budget": 300, "read_budget": 200}
KINDS = ["text", "json_line", "rows"]  # a multi-line text drops whole lines: read_result cuts its long line


def _payload(kind: str, body: str) -> Any:
    if kind == "text":
        return body
    if kind == "json_line":
        return {"id": 7, "body": body}
    if kind == "log":
        return "\n".join(["start ok"] * 3 + [body] + ["done ok"] * 3)
    return {"rows": [body, "short"]}


def _body(kind: str, content: Any) -> str:
    """The shaped text of the long string."""
    if kind == "json_line":
        return content["body"]
    if kind == "rows":
        return content["rows"][0]
    return content


def _cuts(out: str, original: str) -> tuple[int, int]:
    """Where the shown head of ``original`` ends and its shown tail starts."""
    start = out.index(original[:40])
    head = 0
    while start + head < len(out) and head < len(original) and out[start + head] == original[head]:
        head += 1
    end = out.rindex(original[-40:]) + 40
    tail = 0
    while tail < len(original) and out[end - tail - 1] == original[-tail - 1]:
        tail += 1
    return head, len(original) - tail


_CUTS: dict[str, tuple[int, int]] = {}


async def _cut_points(make, kind: str) -> tuple[int, int]:
    if kind not in _CUTS:
        reach, echo = make(BUDGET)
        echo.payload = _payload(kind, FILL)
        r = await reach.invoke("fetch", {})
        assert r.ok and "_shaped" in r.to_json() or "[reach-shape:" in r.to_json()
        _CUTS[kind] = _cuts(_body(kind, r.content), FILL)
        assert _CUTS[kind][0] < _CUTS[kind][1]  # the fill was cut: there is a middle cut to straddle
    return _CUTS[kind]


def _assert_no_piece(seen: str, leaked: str) -> None:
    low = seen.lower()
    pieces = {leaked[i:i + 5].lower() for i in range(len(leaked) - 4)}
    shown = sorted(p for p in pieces if p in low)
    assert not shown, f"pieces of the secret reached the model: {shown[:5]}"


def _reach(make) -> tuple[Reach, Echo]:
    reach, echo = make(BUDGET)
    reach.redactor.add(values=[SECRET])
    return reach, echo


@pytest.mark.parametrize("overlap", [1, 4, 7, 0.5, -7, -4, -1])
@pytest.mark.parametrize("side", ["head", "tail"])
@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_cut_inside_a_secret_shows_no_piece(make, kind, spelling, side, overlap):
    leaked = SPELLINGS[spelling](SECRET)
    head, tail = await _cut_points(make, kind)
    at = head if side == "head" else tail
    k = int(len(leaked) * overlap) if isinstance(overlap, float) else overlap % len(leaked)
    pos = at - k  # the secret starts k characters before the cut: the cut falls inside it
    body = FILL[:pos] + leaked + FILL[pos + len(leaked):]
    reach, echo = _reach(make)
    echo.payload = _payload(kind, body)
    r = await reach.invoke("fetch", {}, run_id="run-1")
    assert r.ok
    _assert_no_piece(r.to_json(), leaked)
    assert FILL[:30] in r.to_json()  # the rest of the result is shown as it was


@pytest.mark.parametrize("overlap", [3, 0.5, -3])
@pytest.mark.parametrize("spelling", ["as-is", "base64", "hex"])
async def test_read_result_pages_show_no_piece(make, spelling, overlap):
    """read_result cuts a line longer than its budget: a secret across that cut is masked too."""
    leaked = SPELLINGS[spelling](SECRET)
    reach, echo = _reach(make)
    echo.payload = _payload("log", FILL)
    r = await reach.invoke("fetch", {}, run_id="run-1")
    handle = r.content.split('handle="', 1)[1].split('"', 1)[0]
    page = await reach.invoke("read_result", {"handle": handle, "offset": 3, "limit": 1}, run_id="run-1")
    assert page.ok
    head, _ = _cuts(page.to_json(), FILL)
    k = int(len(leaked) * overlap) if isinstance(overlap, float) else overlap % len(leaked)
    body = FILL[:head - k] + leaked + FILL[head - k + len(leaked):]
    echo.payload = _payload("log", body)
    r = await reach.invoke("fetch", {}, run_id="run-1")
    handle = r.content.split('handle="', 1)[1].split('"', 1)[0]
    page = await reach.invoke("read_result", {"handle": handle, "offset": 3, "limit": 1}, run_id="run-1")
    assert page.ok
    _assert_no_piece(page.to_json(), leaked)
    found = await reach.invoke("read_result", {"handle": handle, "query": "w12"}, run_id="run-1")
    _assert_no_piece(found.to_json(), leaked)


async def test_positive_control_a_cut_result_without_secrets_is_unchanged(make):
    """Masking first changes nothing else: with secrets configured, a result that holds none
    is shaped to the same head and tail of the original text, with no mask in it."""
    reach, echo = _reach(make)
    echo.payload = _payload("json_line", FILL)
    body = (await reach.invoke("fetch", {})).content["body"]
    head, tail = _cuts(body, FILL)
    assert MASK not in body and 0 < head < tail < len(FILL)
    assert body.startswith(FILL[:head]) and body.endswith(FILL[tail:])


# --------------------------------------------------------------------------- HTML pages
# Shaping shows an HTML page as its visible text. Dropping the markup can join a secret
# the core found nowhere in the page (a token split by tags, as pages that wrap long
# words write it), and a cut in that text then split it. The page's text is masked now
# before it is cut or kept.

SPLITS = {
    "b-tags": lambda s: f"<b>{s[:9]}</b><i>{s[9:]}</i>",
    "wbr": lambda s: "<wbr>".join(s[i:i + 8] for i in range(0, len(s), 8)),
    "span-attrs": lambda s: f'<span class="k">{s[:20]}</span><span data-x="1">{s[20:]}</span>',
    "comment": lambda s: f"{s[:5]}<!-- hidden -->{s[5:]}",
    "script": lambda s: f"{s[:12]}<script>var x = 1;</script>{s[12:]}",
    "entities": lambda s: "".join(f"&#{ord(c)};" if i % 3 == 0 else c for i, c in enumerate(s)),
    "tags-and-case": lambda s: f"<em>{s[:6].upper()}</em>{s[6:].upper()}",
}
BIG_FILL = " ".join(f"w{i}" for i in range(60000))  # over 256 KB: shaped in a worker thread
HTML_KINDS = ["page", "json_body", "big_page"]


def _page(kind: str, text_html: str) -> Any:
    page = f"<!doctype html><html><head><title>t</title></head><body><p>{text_html}</p></body></html>"
    return {"status": 200, "body": page} if kind == "json_body" else page


def _page_text(kind: str, content: Any) -> str:
    return content["body"] if kind == "json_body" else content


_HTML_CUTS: dict[str, tuple[int, int]] = {}


async def _html_cut_points(make, kind: str, fill: str) -> tuple[int, int]:
    if kind not in _HTML_CUTS:
        reach, echo = make(BUDGET)
        echo.payload = _page(kind, fill)
        r = await reach.invoke("fetch", {})
        assert r.meta["shaped"].get("html")  # shown as text
        _HTML_CUTS[kind] = _cuts(_page_text(kind, r.content), fill)
    return _HTML_CUTS[kind]


@pytest.mark.parametrize("overlap", [3, 0.5, -3])
@pytest.mark.parametrize("side", ["head", "tail"])
@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("kind", HTML_KINDS)
async def test_a_secret_split_by_markup_is_masked_in_the_page_text(make, kind, split, side, overlap):
    fill = BIG_FILL if kind == "big_page" else FILL
    head, tail = await _html_cut_points(make, kind, fill)
    k = int(len(SECRET) * overlap) if isinstance(overlap, float) else overlap % len(SECRET)
    pos = (head if side == "head" else tail) - k
    reach, echo = _reach(make)
    echo.payload = _page(kind, fill[:pos] + SPLITS[split](SECRET) + fill[pos + len(SECRET):])
    r = await reach.invoke("fetch", {}, run_id="run-1")
    assert r.ok and r.meta["shaped"].get("html")
    _assert_no_piece(r.to_json(), SECRET)
    handle = r.meta["shaped"]["handle"]
    args: dict[str, Any] = {"handle": handle, "offset": 0, "limit": 1}
    if kind == "json_body":
        args["path"] = "body"
    page = await reach.invoke("read_result", args, run_id="run-1")  # the kept text, cut to read_budget
    assert page.ok
    _assert_no_piece(page.to_json(), SECRET)
