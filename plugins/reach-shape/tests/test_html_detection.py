"""``looks_like_html`` on pages built to make it backtrack, and on ordinary page starts.

reach-shape asks it of every large string result (a fetched page, an HTTP body in JSON).
Its leading-comments pattern used to regroup empty comments in every possible way when no
``<html>`` followed: "<!---->" 20 times took 0.3 s, 30 times minutes, and the page decides.
"""

from __future__ import annotations

import time

import pytest
from reach_shape.htmltext import looks_like_html

# Sizes the previous pattern still finished on (24 empty comments: ~5 s; each one more
# doubled it), so a regression fails here instead of hanging the suite.
HOSTILE = [
    "<!---->" * 24 + "x",  # empty comments, then text
    "<!---->" * 24 + "<htm",  # ... then a cut-off tag
    "<!-- -->\n" * 24 + "<body>",
    "<!--" * 600,  # opened, never closed
    "<!-- a -- b -->" * 24 + " <!-- x",
    "   " * 500 + "<!---->" * 24,
]


@pytest.mark.parametrize("page", HOSTILE, ids=range(len(HOSTILE)))
def test_pages_of_comments_are_judged_at_once(page: str) -> None:
    t0 = time.process_time()
    assert looks_like_html(page) is False
    assert time.process_time() - t0 < 1.0


@pytest.mark.parametrize(("page", "html"), [
    ("<!DOCTYPE html><html><body>x</body></html>", True),
    ("  \n<html lang='en'>", True),
    ("<!-- generated --> <!doctype HTML>\n<html>", True),
    ("<!-- a -->\n<!-- b --><html>", True),
    ("<!---->" * 50 + "<html>", True),
    ("<!-- -- > --> <HTML>", True),
    ("<html", False),
    ("<htmlx>", False),
    ("plain text <html>", False),
    ('{"html": "<html>"}', False),
])
def test_page_starts(page: str, html: bool) -> None:
    assert looks_like_html(page) is html
