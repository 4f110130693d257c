"""MCP tool annotations <-> reach risk tiers, in both directions.

Annotations come from the server and are hints, not guarantees: a server can
claim ``readOnlyHint`` for anything. So the tier taken from them is never below
the server's ``min_risk`` setting, and ``[connectors.NAME] risk`` (applied by
the core after this) always has the last word.

The MCP spec says an unannotated tool should be presumed destructive; reach
presumes ``write`` (its own safe default, still audited and ledgered) unless the
server's ``default_risk`` says otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types as types

__all__ = ["OUTWARD_TAGS", "RANK", "annotations_for", "open_world", "risk_from_annotations"]

#: Tags that say a tool reaches outside this system (a web API, another MCP server, a
#: person's inbox). A tool with none of them works on a closed world: files under a
#: root, a database, a notebook, a computation.
OUTWARD_TAGS = frozenset({"external_api", "open_world", "mcp", "notify", "web", "internet"})

RANK = {"read": 0, "write": 1, "dangerous": 2}


def _hint(ann: Any, attr: str) -> bool | None:
    if ann is None:
        return None
    value = getattr(ann, attr, None)
    return value if isinstance(value, bool) else None


def risk_from_annotations(ann: Any, *, min_risk: str = "read", default_risk: str = "write") -> tuple[str, bool | None]:
    """``(risk, idempotent)`` for a tool with MCP ``annotations`` (or ``None``).

    readOnlyHint -> read; destructiveHint -> dangerous; otherwise ``default_risk``;
    never below ``min_risk``. idempotentHint -> idempotent (``None`` leaves the
    core's default: reads are idempotent).
    """
    if _hint(ann, "read_only_hint"):
        risk = "read"
    elif _hint(ann, "destructive_hint"):
        risk = "dangerous"
    else:
        risk = default_risk
    if RANK[risk] < RANK[min_risk]:
        risk = min_risk
    if risk == "read":
        return risk, True
    return risk, _hint(ann, "idempotent_hint")


def annotations_for(risk: str, idempotent: bool, *, open_world: bool | None = None,
                    title: str | None = None) -> types.ToolAnnotations:
    """The annotations reach's MCP server sends for a tool of this tier."""
    import mcp_types as types

    return types.ToolAnnotations(
        title=title,
        read_only_hint=risk == "read",
        destructive_hint=risk == "dangerous" if risk != "read" else None,
        idempotent_hint=idempotent if risk != "read" else None,
        open_world_hint=open_world,
    )


def open_world(tool: Any) -> bool | None:
    """``openWorldHint`` for a tool reach serves: true when a tag says it reaches outside,
    false for a read tool that does not (a client may then call it more freely), and
    unsaid for other tools (MCP's default, open world, is the safe reading of a write)."""
    if OUTWARD_TAGS.intersection(getattr(tool, "tags", ()) or ()):
        return True
    return False if getattr(tool, "risk", None) == "read" else None
