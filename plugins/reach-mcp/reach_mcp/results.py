"""What an MCP ``CallToolResult`` becomes in reach.

* ``isError`` -> ``BusinessError`` carrying the server's own text (the model can
  read why, and reach never retries it);
* ``structuredContent`` is preferred: it is the typed answer the server's output
  schema describes;
* otherwise the content blocks: one text block is returned as a string (JSON text
  is decoded, so it is not double-encoded on the way to the model); several
  blocks become a compact list; binary data is described, never dumped.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from reach_core import BusinessError

__all__ = ["MAX_SERVER_TEXT", "clip", "content_of", "error_text"]

#: The most of a server's own explanation (an ``isError`` text, a JSON-RPC error message,
#: a transport's complaint) that reaches the model and reach's logs.
MAX_SERVER_TEXT = 2000


def clip(text: str, limit: int = MAX_SERVER_TEXT) -> str:
    """``text`` cut at ``limit`` characters, saying how many were cut.

    Why one function: a server chooses how to fail. reach cut an ``isError`` text, but
    the same server could answer with a JSON-RPC error instead, and its message (a
    megabyte of text or of instructions) reached the model whole. Every path a
    server's words take to the model or a log goes through here.
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … ({len(text) - limit:,} more characters from the server cut)"


def _block(block: Any) -> Any:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind in ("image", "audio"):
        data = getattr(block, "data", "") or ""
        return {"type": kind, "mime_type": getattr(block, "mime_type", None), "base64_chars": len(data)}
    if kind == "resource_link":
        return {"type": "resource_link", "uri": str(block.uri), "name": getattr(block, "name", None)}
    if kind == "resource":
        res = block.resource
        out: dict[str, Any] = {"type": "resource", "uri": str(res.uri)}
        if getattr(res, "text", None) is not None:
            out["text"] = res.text
        else:
            out["base64_chars"] = len(getattr(res, "blob", "") or "")
        return out
    dump = getattr(block, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else str(block)


def error_text(result: types.CallToolResult) -> str:
    """The server's explanation of a failed call, as plain text."""
    parts = [b.text for b in result.content if isinstance(b, types.TextContent) and b.text]
    text = "\n".join(parts).strip() or "the tool reported an error without a message"
    return clip(text)


def content_of(result: types.CallToolResult, *, server: str, tool: str) -> Any:
    """The reach content of a successful result; raises ``BusinessError`` for ``isError``."""
    if result.is_error:
        raise BusinessError(f"{tool} (MCP server {server!r}) failed: {error_text(result)}")
    if result.structured_content is not None:
        return result.structured_content
    blocks = result.content
    if len(blocks) == 1 and isinstance(blocks[0], types.TextContent):
        text = blocks[0].text
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json.loads(text)
            except ValueError:
                pass
        return text
    if not blocks:
        return None
    return [_block(b) for b in blocks]
