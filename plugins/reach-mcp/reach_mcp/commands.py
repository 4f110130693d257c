"""``reach serve mcp``: reach's tools for any MCP host.

``serve`` is a group other plugins can extend (``reach serve http`` ...): each
adds its subcommand to the existing group, or creates it when it is first.
"""

from __future__ import annotations

import asyncio
from typing import Any

import click

__all__ = ["add_commands", "serve_mcp"]


def add_commands(cli: click.Group) -> None:
    from reach_core.cli import serve_group

    serve_group(cli).add_command(serve_mcp)


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter("use HOST:PORT, for example 127.0.0.1:8765", param_hint="--http")
    return (host or "127.0.0.1").strip("[]"), int(port)


@click.command("mcp")
@click.option("--http", "http", metavar="HOST:PORT", default=None,
              help="Stateless streamable HTTP on HOST:PORT (endpoint path from settings, default /mcp).")
@click.option("--stdio", "stdio", is_flag=True, help="Speak MCP on stdin/stdout (the default).")
@click.option("--agent", default=None, help="stdio only: the reach agent the client acts as.")
@click.pass_context
def serve_mcp(ctx: click.Context, http: str | None, stdio: bool, agent: str | None) -> None:
    """Expose the registered tools over MCP, filtered and checked per agent."""
    from reach_core.cli import reach_of

    from .settings import McpSettings

    if http and stdio:
        raise click.UsageError("choose one of --http or --stdio")
    reach = reach_of(ctx)
    settings = reach.plugin_settings("reach-mcp") or McpSettings()
    serve = settings.server
    if http:
        host, port = _host_port(http)
        if agent:
            raise click.UsageError("--agent applies to --stdio; over HTTP the bearer token names the agent")
        asyncio.run(_serve_http(reach, serve, host, port))
    else:
        asyncio.run(_serve_stdio(reach, serve, agent or serve.stdio_agent))


async def _serve_http(reach: Any, settings: Any, host: str, port: int) -> None:
    import uvicorn

    from reach_core.tokens import uvicorn_options

    from .server import http_app

    await reach.start()
    try:
        app = http_app(reach, settings, host=host)
        # bounded request heads (size and time), keep-alive and concurrency; no X-Forwarded-For from uvicorn
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                                **uvicorn_options(settings.read_timeout))
        click.echo(f"reach: MCP on http://{host}:{port}{settings.path} (stateless streamable HTTP)", err=True)
        if not settings.token_agents():
            who = settings.anonymous_agent or "default"
            click.echo(f"reach: warning: no tokens in [plugins.reach-mcp.server]; every client acts as agent "
                       f"{who!r}. Keep this on loopback.", err=True)
        await uvicorn.Server(config).serve()
    finally:
        await reach.aclose()


async def _serve_stdio(reach: Any, settings: Any, agent: str | None) -> None:
    from mcp.server.stdio import stdio_server

    from .server import build_server

    await reach.start()
    try:
        server = build_server(reach, settings, agent=agent)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await reach.aclose()
