"""Glob patterns for search_files, compiled once to a regular expression.

``*`` and ``?`` stay within one folder, ``**`` crosses folders, ``[abc]``
is a character class. A pattern without ``/`` matches the file name at any
depth (``*.md`` finds every Markdown file), which is what people mean.
"""

from __future__ import annotations

import re


def compile_glob(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip() or "*"
    if "/" not in pattern:
        pattern = "**/" + pattern
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern.startswith("[!", i) or pattern.startswith("[]", i) else i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)
