"""Red team of the console's Tools page: a tool's description is the provider's text, not reach's.

Descriptions come from outside reach: MCP servers linked by reach-mcp, OpenAPI files read
by reach-http, third-party plugins. A person reading the Tools page must see them as
someone else's words, as the approval page shows the model's. Families (a real
``reach serve http`` on 127.0.0.1, tools registered with hostile descriptions):

* HTML and script: shown as text, never as markup;
* hidden characters (bidi controls, zero-width, tags, line separators): ``⟨U+XXXX⟩``;
* wording dressed as the console's own (approve, pinned, banners): inside the provider frame;
* Markdown links and images: shown literally, no link or image is made of them;
* very long text: cut, with a notice of how much is left out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import pytest
from console_server import serve
from html_classes import text_classes

from reach_core import Connector

LABEL = "From the tool's provider"
NOTICE = r"… ([\d,]+) more characters hidden \(reach tools --agent \w+ --json shows them\)"

HTML_ATTACKS = ["<script>alert('P0')</script>", "<img src=x onerror=alert('P1')>", '"><svg onload=alert("P2")>',
                "</td></tr></table><h1>Approved P3</h1>", "<!-- P4 --><b>bold</b>", "&lt;script&gt;P5",
                "<a href='javascript:alert(1)'>P6</a>", "<style>body{display:none}</style>P7",
                "<iframe src=//evil.example>P8</iframe>", "<form action=//evil.example><button>P9</button></form>"]
HIDDEN = ["\u202e", "\u202d", "\u202b", "\u2066", "\u2067", "\u2068", "\u200f", "\u061c", "\u200b", "\u200d",
          "\u2060", "\ufeff", "\u00ad", "\x1b", "\x85", "\u2028", "\u2029", "\U000e0041", "\ue000", "\u3164"]
FAKE = ["Approve", "✅ Approved by ops: this tool was reviewed FAKE", "SYSTEM: reach verified this tool, approve FAKE",
        "pinned, matches FAKE", "runs without asking FAKE", "⚠ reach console: auto-approve is on FAKE",
        "blocked: definition changed since pinned FAKE", "Signed in as ops FAKE"]
MARKDOWN = ["[Approve](http://evil.example/a)", "![logo](http://evil.example/p.png)", "<http://evil.example/b>",
            "[click](javascript:alert(1))", "[x][1]\n\n[1]: http://evil.example/c", "**Approved** _by ops_"]
LONG = ["A" * 5000 + "END", "北" * 20_000 + "END", "word " * 3000 + "END", "\u202e" * 400 + "x" * 400 + "END"]


class Described(Connector):
    """A read tool whose description is whatever its provider wrote."""

    risk = "read"
    input_schema = {"type": "object", "properties": {}}

    def __init__(self, name: str, description: str) -> None:
        self.name, self.description = name, description

    async def execute(self, params: Any, ctx: Any) -> Any:
        return {}


CASES = {f"html_{i}": t for i, t in enumerate(HTML_ATTACKS)} | {f"hidden_{i}": f"pay{c}ment tool P{i}"
                                                                 for i, c in enumerate(HIDDEN)} \
    | {f"fake_{i}": t for i, t in enumerate(FAKE)} | {f"md_{i}": t for i, t in enumerate(MARKDOWN)} \
    | {f"long_{i}": t for i, t in enumerate(LONG)} | {"honest": "Look a country up. Use for capitals."}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Tools page of a server whose provider wrote every description in ``CASES``."""
    for served in serve(tmp_path_factory.mktemp("provider")):
        for name, text in CASES.items():
            served.reach.register(Described(name, text))
        c = served.login()
        text = c.get("/console/tools").text
        c.close()
        yield text


def _cells(page: str, tool: str) -> list[str]:
    """The description cell of ``tool`` in every agent's table."""
    rows = re.findall(rf'<tr data-agent="[^"]*" data-tool="{tool}">(.*?)</tr>', page, re.S)
    assert rows, tool
    return [row.split("</td>")[-2] for row in rows]


def _framed(cell: str, notice: list[str] | None = None) -> str:
    """The provider's text in one description cell, checked to sit inside the provider frame
    (labelled, model-styled) and to hold no markup of its own. The console's own notice of
    what it cut (outside the model text, inside the frame) is appended to ``notice``."""
    frames = text_classes(cell + "</td>")
    assert frames.tags.count("script") == frames.tags.count("img") == frames.tags.count("a") == 0, cell
    label = [classes for text, classes in frames.texts if text.strip() == LABEL]
    assert len(label) == 1 and "model-label" in label[0] and "provider" in label[0], cell
    shown = [(text, classes) for text, classes in frames.texts if text.strip() != LABEL]
    notices = [text.strip() for text, classes in shown if "hidden-notice" in classes]
    assert len(notices) <= 1 and all("model" not in c for t, c in shown if "hidden-notice" in c), cell
    if notice is None:
        assert not notices, cell
    else:
        notice.extend(notices)
    shown = [(text, classes) for text, classes in shown if "hidden-notice" not in classes]
    assert shown, cell
    for _, classes in shown:
        assert "model" in classes and "provider" in classes and "banner" not in classes, (cell, classes)
    return "".join(text for text, _ in shown)


def _marker(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


@pytest.mark.parametrize("i", range(len(HTML_ATTACKS)))
def test_html_in_a_description_is_text(page: str, i: int) -> None:
    for cell in _cells(page, f"html_{i}"):
        assert HTML_ATTACKS[i] not in cell  # escaped
        assert _framed(cell) == HTML_ATTACKS[i]  # what the provider wrote, character for character


@pytest.mark.parametrize("i", range(len(HIDDEN)), ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_hidden_characters_in_a_description_are_spelled_out(page: str, i: int) -> None:
    for cell in _cells(page, f"hidden_{i}"):
        assert HIDDEN[i] not in cell
        assert _framed(cell) == f"pay{_marker(HIDDEN[i])}ment tool P{i}"


@pytest.mark.parametrize("i", range(len(FAKE)))
def test_wording_dressed_as_the_console_is_framed(page: str, i: int) -> None:
    cells = _cells(page, f"fake_{i}")
    assert len(cells) == 5  # default, guest, ops, ops2, worker
    for cell in cells:
        assert _framed(cell) == FAKE[i]


@pytest.mark.parametrize("i", range(len(MARKDOWN)))
def test_markdown_in_a_description_makes_no_link(page: str, i: int) -> None:
    for cell in _cells(page, f"md_{i}"):
        assert "href" not in cell and "src=" not in cell
        assert _framed(cell) == " ".join(MARKDOWN[i].split())  # on one line, as written


@pytest.mark.parametrize("i", range(len(LONG)))
def test_a_long_description_is_cut_with_a_notice(page: str, i: int) -> None:
    from reach_core.reveal import reveal_text

    whole = reveal_text(" ".join(LONG[i].split()), one_line=True)
    for cell in _cells(page, f"long_{i}"):
        notice: list[str] = []
        head = _framed(cell, notice)
        found = re.fullmatch(NOTICE, notice[0] if notice else "")
        assert found, (head[-200:], notice)
        assert "END" not in head and len(head) < 400
        assert head.count("⟨") == head.count("⟩")  # never half a marker
        assert "END" not in html.unescape(cell)
        if "⟨" not in whole:  # plain text: what is shown and what the notice counts make the whole
            assert whole.startswith(head) and len(head) + int(found.group(1).replace(",", "")) == len(whole)
        else:
            assert "\u202e" not in cell and head.startswith("⟨")


def test_an_honest_description_is_shown_whole_in_the_frame(page: str) -> None:
    for cell in _cells(page, "honest"):
        assert _framed(cell) == CASES["honest"]


def test_the_frame_says_whose_words_these_are(page: str) -> None:
    """A person can tell reach's text from the provider's: the label, once per described tool."""
    rows = len(re.findall(r'<tr data-agent="', page))
    assert page.count(LABEL) == rows
