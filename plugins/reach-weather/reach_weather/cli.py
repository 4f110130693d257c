"""``reach weather ...`` commands, added to the root ``reach`` group by the plugin."""

from __future__ import annotations

import signal
import sys
from typing import Any

import click


@click.group(name="weather")
def weather() -> None:
    """Weather tools (reach-weather)."""


@weather.command(name="serve-demo")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port (0 picks a free one).")
@click.option("--verbose", is_flag=True, help="Log every request.")
def serve_demo(host: str, port: int, verbose: bool) -> None:
    """Run the local demo weather service (Open-Meteo shaped, plus GET /weather/{city})."""
    from .demo_server import DemoServer

    server = DemoServer(host, port, verbose=verbose)
    click.echo(f"reach-weather demo service on {server.url}  (Ctrl-C stops it)")
    click.echo("Point reach at it with, in reach.toml:")
    click.echo("  [plugins.reach-weather]")
    click.echo(f'  geocoding_url = "{server.url}"')
    click.echo(f'  forecast_url = "{server.url}"')
    click.echo(f"The article's route: {server.url}/weather/北京")
    sys.stdout.flush()  # the banner must reach a pipe or log file before serving blocks
    signal.signal(signal.SIGTERM, _stop)  # `kill` stops it as cleanly as Ctrl-C
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")


def _stop(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
