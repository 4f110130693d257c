"""What a browser would style each piece of a console page as: the classes around its text.

The console frames words that are not its own (the model's, a tool provider's) in elements
classed ``model`` and keeps its own notices in ``banner``; the red-team tests read a page
back this way to check that no outside text escapes its frame.
"""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["TextClasses", "text_classes"]


class TextClasses(HTMLParser):
    """Each text node (blank ones left out) with the classes of every element around it, and
    every start tag seen, in order."""

    VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "source", "wbr"})  # never closed

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, list[str]]] = []
        self.texts: list[tuple[str, list[str]]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append((tag, (dict(attrs).get("class") or "").split()))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:  # an end tag closes whatever was left open inside it
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.texts.append((data, [c for _, classes in self.stack for c in classes]))

    def around(self, needle: str) -> list[list[str]]:
        """The classes around each text node holding ``needle``."""
        return [classes for text, classes in self.texts if needle in text]


def text_classes(page: str) -> TextClasses:
    """``page`` read as the browser nests it (fed, not closed: text after the last tag is not
    a text node yet, as no page the console serves ends in text)."""
    parser = TextClasses()
    parser.feed(page)
    return parser
