"""HTML pages as readable text: markup costs tokens and tells a model little.

Scripts, styles and other invisible elements are dropped, block elements start
new lines, and link targets are kept in parentheses because a model often needs
them to go on.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text", "looks_like_html"]

_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK = frozenset({
    "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header", "footer",
    "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "title", "nav", "main", "aside", "hr",
    "dt", "dd", "form", "figure", "figcaption",
})
# Leading comments in an atomic group: each ends at its first "-->" and none is taken back.
# Without it, a page of empty comments and no <html> ("<!---->" 30 times, 211 bytes) made
# the match try every way to regroup them: exponential, minutes of CPU holding the GIL.
_HTML_START = re.compile(r"\s*(?>(?:<!--.*?-->\s*)*)<(?:!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)


def looks_like_html(text: str) -> bool:
    return bool(_HTML_START.match(text[:2048]))


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "a":
            self.href = dict(attrs).get("href")
        elif tag in ("td", "th"):
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")
        if tag == "a" and self.href:
            if self.href.startswith(("http://", "https://", "/")):
                self.parts.append(f" ({self.href})")
            self.href = None

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """Visible text of an HTML document, one block per line, blank runs collapsed."""
    parser = _Extractor()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()
