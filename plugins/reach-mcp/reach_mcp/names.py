"""Reach names for remote tools: ``SERVER__tool``, always legal for OpenAI (``^[a-zA-Z0-9_-]{1,64}$``).

MCP allows dots, slashes and long names; a model provider does not. Illegal
characters become ``_``; a name that would pass 64 characters is cut and given a
short hash of the full name so two long names never collide.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["SEPARATOR", "tool_name"]

SEPARATOR = "__"
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")
_MAX = 64


def tool_name(prefix: str, remote: str) -> str:
    """The reach name of ``remote`` on the server whose prefix is ``prefix``."""
    raw = f"{prefix}{SEPARATOR}{remote}" if prefix else remote
    name = _ILLEGAL.sub("_", raw) or "tool"
    if len(name) <= _MAX and name == raw:
        return name
    # replaced characters or a long name: add a hash of the original so `a.b` and `a_b` stay distinct
    digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
    return f"{name[: _MAX - 9]}_{digest}"
