"""reach-mcp: MCP on both sides of reach.

* As a client, every server in ``[plugins.reach-mcp.servers.NAME]`` (a stdio
  command or a streamable-HTTP URL) becomes a set of reach connectors named
  ``NAME__tool``, so each call runs through reach's validation, policy,
  confirmation, audit and shaping.
* As a server, ``reach serve mcp`` exposes the registered tools to any MCP host,
  filtered per agent (bearer token -> agent), over stateless streamable HTTP or stdio.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "McpSettings",
    "ServeSettings",
    "ServerConfig",
    "annotations_for",
    "risk_from_annotations",
    "tool_name",
]

_WHERE = {
    "McpSettings": "settings", "ServeSettings": "settings", "ServerConfig": "settings",
    "annotations_for": "annotations", "risk_from_annotations": "annotations", "tool_name": "names",
}


def __getattr__(name: str) -> Any:
    """Lazy exports: the MCP SDK is only imported when a server is configured or served."""
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
