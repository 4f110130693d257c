"""reach-mcp: MCP on both sides of reach.

* As a client, every server in ``[plugins.reach-mcp.servers.NAME]`` (a stdio
  command or a streamable-HTTP URL) becomes a set of reach connectors named
  ``NAME__tool``, so each call runs through reach's validation, policy,
  confirmation, audit and shaping.
* As a server, ``reach serve mcp`` exposes the registered tools to any MCP host,
  filtered per agent (bearer token -> agent), over stateless streamable HTTP or stdio.
"""

from __future__ import annotations

from .annotations import annotations_for, risk_from_annotations
from .names import tool_name
from .settings import McpSettings, ServerConfig, ServeSettings

__all__ = [
    "McpSettings",
    "ServeSettings",
    "ServerConfig",
    "annotations_for",
    "risk_from_annotations",
    "tool_name",
]
