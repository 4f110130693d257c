"""Hook implementations of reach-mcp.

reach-mcp's state in a ``Reach`` (its server links) is one :class:`McpPlugin`, built by
``reach_plugin_instance``; ``links_of(reach)`` asks the Reach for it.
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from reach_core import hookimpl

if TYPE_CHECKING:
    from .settings import McpSettings, ServerConfig

# Only reach_core.hookimpl is imported with this module (``reach plugins`` imports it);
# the MCP SDK, structlog and the pydantic settings load when a Reach starts the plugin.

# The name config and logs use when this module is registered directly (tests, embedding).
REACH_PLUGIN_NAME = "reach-mcp"

#: The most tools reach registers from one server (after ``tools``/``exclude``). Every
#: registered tool is offered to a model; reach read at most 100 pages of a listing but
#: not how much a page held, so a server listing 20,000 tools had them all registered.
MAX_TOOLS_PER_SERVER = 1000


def links_of(reach: Any) -> list[Any]:
    """The MCP server links of one ``Reach`` (empty when none is configured or reach-mcp is not loaded)."""
    from reach_core import plugin_instance

    plugin = plugin_instance(reach, REACH_PLUGIN_NAME)
    return plugin.links if plugin is not None else []


class McpPlugin:
    """reach-mcp in one ``Reach``: the links to its configured MCP servers."""

    def __init__(self) -> None:
        self.links: list[Any] = []

    @hookimpl
    def reach_register_tools(self, register: Any, settings: McpSettings | None, reach: Any) -> None:
        self.links = _register_tools(register, settings, reach)

    @hookimpl
    async def reach_shutdown(self, reach: Any) -> None:
        for link in self.links:
            await link.aclose()


@hookimpl
def reach_plugin_instance() -> McpPlugin:
    return McpPlugin()


def _selected(remote: str, cfg: ServerConfig) -> bool:
    if cfg.tools is not None and not any(fnmatch.fnmatchcase(remote, p) for p in cfg.tools):
        return False
    return not any(fnmatch.fnmatchcase(remote, p) for p in cfg.exclude)


@hookimpl
def reach_plugin_settings() -> type[McpSettings]:
    from .settings import McpSettings

    return McpSettings


def _owner(name: str, links: list[Any]) -> Any:
    """The server a reach tool name belongs to: the one with the longest prefix ``P`` that the
    name starts with as ``P__`` (an unprefixed server owns what no prefix claims).

    Why: a server chooses its tools' names. An unprefixed server listing ``demo__echo``, or
    server ``acme`` listing ``internal__echo`` next to server ``acme__internal``, spelled a
    tool of the other server; whichever was listed first took the name, so allow-lists,
    ``[connectors.NAME]`` tiers and pins written for one server applied to the other. A
    server that is down at start keeps its prefix: no other server takes its names then.
    """
    best, size = None, -1
    for link in links:
        prefix = link.prefix
        if (not prefix or name.startswith(f"{prefix}__")) and len(prefix) > size:
            best, size = link, len(prefix)
    return best


def _register_tools(register: Any, settings: McpSettings | None, reach: Any) -> list[Any]:
    """Connect to the configured servers and register their tools; returns the links."""
    if settings is None or not settings.servers:
        return []
    from reach_core import ConnectorError
    from reach_core.logs import plugin_logger

    from .connector import McpTool
    from .link import ServerLink, describe_error, discover

    _log = plugin_logger("mcp", getattr(reach, "redactor", None))
    links = [ServerLink(name, cfg, reach) for name, cfg in settings.servers.items() if cfg.enabled]
    results = discover(links)
    for link in links:
        listed = results[link.name]
        if isinstance(listed, BaseException):
            target = link.config.command or link.config.url
            _log.warning(
                "reach.mcp_server_unavailable", server=link.name, transport=link.config.transport, target=target,
                error=describe_error(listed),
                fix=f"check [plugins.reach-mcp.servers.{link.name}]; its tools are missing until the next start",
            )
            continue
        selected = [d for d in listed if _selected(d.name, link.config)]
        if len(selected) > MAX_TOOLS_PER_SERVER:
            _log.warning(
                "reach.mcp_too_many_tools", server=link.name, listed=len(selected), registered=MAX_TOOLS_PER_SERVER,
                fix=f"pick the tools you use: [plugins.reach-mcp.servers.{link.name}] tools = [\"name\", \"glob*\"]",
            )
        for definition in selected[:MAX_TOOLS_PER_SERVER]:
            conn = McpTool(link, definition)
            owner = _owner(conn.name, links)
            if owner.prefix != link.prefix:  # servers sharing a prefix share its names, as configured
                _log.warning("reach.mcp_tool_skipped", server=link.name, tool=conn.name,
                             error=f"the name is spelled with the prefix of another server, {owner.name!r}; "
                                   "a server's tools cannot take names under another server's prefix")
                continue
            try:
                register(conn)
            except ConnectorError as exc:
                _log.warning("reach.mcp_tool_skipped", server=link.name, tool=definition.name, error=str(exc))
                continue
            link.connectors[definition.name] = conn
    return links


@hookimpl
def reach_register_commands(cli: Any) -> None:
    from .commands import add_commands

    add_commands(cli)


@hookimpl
async def reach_tool_progress(event: Any, ctx: Any) -> None:
    """Forward a tool's progress to the MCP client whose request it runs for.

    A no-op outside ``reach serve mcp`` and when the client asked for no progress
    (the SDK drops progress without a progress token).
    """
    from .server import PROGRESS_TARGET

    target = PROGRESS_TARGET.get()
    if target is None or event.get("call_id") != target[0]:
        return  # not an MCP request, or a nested call's progress
    await target[1].session.report_progress(float(event.get("done") or 0), event.get("total"), event.get("message"))
