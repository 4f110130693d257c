"""``reach serve http``: the REST endpoint, one process of as many as you run.

``serve`` is a group shared with other plugins (``reach serve mcp`` ...): each
adds its subcommand to the existing group, or creates it when it is first.
"""

from __future__ import annotations

import asyncio
from typing import Any

import click

__all__ = ["add_commands", "serve_http"]


def add_commands(cli: click.Group) -> None:
    from reach_core.cli import serve_group

    serve_group(cli).add_command(serve_http)


@click.command("http")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--port", default=8780, show_default=True, type=int, help="TCP port (0 picks a free one).")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.pass_context
def serve_http(ctx: click.Context, host: str, port: int, log_level: str) -> None:
    """Serve /v1/invoke, /v1/tools, /v1/confirmations and /v1/audit over HTTP.

    Stateless: run as many processes as you like behind any load balancer, all
    on the same PostgreSQL store (and Redis for rate limits).
    """
    from reach_core.cli import reach_of

    reach = reach_of(ctx)
    asyncio.run(_serve(reach, host, port, log_level))


async def _serve(reach: Any, host: str, port: int, log_level: str) -> None:
    import uvicorn

    from reach_core.tokens import uvicorn_options

    from .app import build_app
    from .settings import ServeHttpSettings

    settings = reach.plugin_settings("reach-serve") or ServeHttpSettings()
    app = build_app(reach, settings)
    # bounded request heads (size and time), keep-alive and concurrency; no X-Forwarded-For from uvicorn
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on",
                            access_log=False, timeout_graceful_shutdown=10, **uvicorn_options(settings.read_timeout))
    server = uvicorn.Server(config)

    async def announce() -> None:
        while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
            await asyncio.sleep(0.02)
        for s in server.servers:
            for sock in s.sockets:
                h, p = sock.getsockname()[:2]
                click.echo(f"reach: serving http://{h}:{p}/v1/ (pid {__import__('os').getpid()})", err=True)

    waiter = asyncio.create_task(announce())
    try:
        await server.serve()
    finally:
        waiter.cancel()
