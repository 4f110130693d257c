"""``McpTool``: one remote MCP tool as a reach connector.

It is an ordinary ``Connector``: reach validates the arguments against the
server's input schema, applies policy, confirmation, guard rails and audit, and
only then ``execute`` forwards the call over the server's session.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import mcp_types as types

from reach_core import Connector

from .annotations import risk_from_annotations
from .names import tool_name

if TYPE_CHECKING:
    from .link import ServerLink

__all__ = ["MAX_DESCRIPTION", "McpTool"]

#: The most of a server's tool description reach registers. The model reads every
#: description on every turn; a server chose to send 2 MB descriptions, which went whole.
MAX_DESCRIPTION = 10_000


def _description(link: ServerLink, definition: types.Tool) -> str:
    text = (definition.description or "").strip()
    title = (definition.title or "").strip() if getattr(definition, "title", None) else ""
    if not text:
        text = title or f"The {definition.name!r} tool of the MCP server {link.name!r}."
    if len(text) > MAX_DESCRIPTION:  # cut the same way every time, so a pin of it stays valid
        text = (f"{text[:MAX_DESCRIPTION]} … ({len(text) - MAX_DESCRIPTION:,} more characters of the server's "
                "description cut by reach)")
    return text


class McpTool(Connector):
    """A tool listed by an MCP server; ``execute`` calls it through that server's session."""

    #: its name is the server's (with ``prefix = ""`` as the server spells it): it never takes the
    #: name of a tool another plugin registered, nor one differing only in case or -/_ (``Connector.imported``)
    imported = True

    def __init__(self, link: ServerLink, definition: types.Tool) -> None:
        self.link = link
        self.definition = definition
        self.remote = definition.name
        self.name = tool_name(link.prefix, definition.name)
        self.description = _description(link, definition)
        schema = copy.deepcopy(dict(definition.input_schema or {}))
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.input_schema = schema
        out = definition.output_schema
        self.output_schema = copy.deepcopy(dict(out)) if isinstance(out, dict) and out.get("type") == "object" else None
        cfg = link.config
        self.risk, self.idempotent = risk_from_annotations(  # type: ignore[assignment]
            definition.annotations, min_risk=cfg.min_risk, default_risk=cfg.default_risk
        )
        self.timeout = cfg.timeout
        tags = ["mcp", f"mcp:{link.name}"]
        ann = definition.annotations
        if ann is not None and ann.open_world_hint:
            tags.append("open_world")
        self.tags = tuple(tags)
        self.blocked: str | None = None
        self.removed = False

    async def execute(self, params: Any, ctx: Any = None) -> Any:
        return await self.link.call(self, dict(params), ctx)
