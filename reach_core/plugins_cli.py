"""``reach plugins``: the listing's text, and the command answered before click loads.

Why without click: importing click (and the command tree) was the largest part of
``reach plugins``' start-up after the plugins themselves, and its target is
≤ 150 ms. ``reach plugins`` and ``reach plugins --json`` (exactly those arguments:
the command a user or a script types to see what is installed) are answered by
:func:`run` from ``reach_core.__main__``, as ``reach --version`` is; every other
command line, ``--check``, ``--hook`` and ``--config`` included, goes through click.

Both paths print the same thing: :func:`lines` writes the listing for either, and
:func:`echo` is ``click.echo`` for what it does with plain text (write a line to the
stream, flush): text with an escape character, or a stream click would rewrap
(no encoding, ASCII, not a text file), goes to ``click.echo`` itself. An error
(a config or plugin error, a closed pipe, Ctrl-C) is reported by click too
(:func:`_exit_as_click`), so messages and exit codes are click's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, NoReturn

__all__ = ["echo", "hooks_disabled", "lines", "run"]

_WARNING = 30  # logging.WARNING, without importing logging


def hooks_disabled(data: Any, *names: str | None) -> set[str]:
    """The hooks ``[plugins.NAME] hooks_disabled`` switches off (under either of the plugin's
    names), read from the raw config data."""
    plugins = data.get("plugins") if isinstance(data, dict) else None
    off: set[str] = set()
    for name in filter(None, names):
        table = plugins.get(name) if isinstance(plugins, dict) else None
        if isinstance(table, dict) and isinstance(table.get("hooks_disabled"), list):
            off.update(str(h) for h in table["hooks_disabled"])
    return off


def lines(source: Any, config: Any, *, as_json: bool, check: bool) -> Iterator[str]:
    """What ``reach plugins`` prints, one ``echo`` per item: ``source`` is an ``Inventory``
    (plugins imported, not started) or, with ``check``, a started ``Reach``; ``config`` is
    the ``--config`` argument (``None``: the default file)."""
    rows = [p.to_dict() for p in source.plugin_info]
    if as_json:
        import json

        yield json.dumps(rows, ensure_ascii=False, indent=2, default=str)
        return
    if not rows:
        yield "no plugins installed (pip install reach-weather, for example)"
    data = getattr(source, "config_data", None)  # an Inventory's; a Reach's config is read here
    if data is None:
        from .configfile import read_config

        data = read_config(config)[0]
    for p in rows:
        version = f" {p['version']}" if p["version"] else ""
        dist = p["distribution"]
        also = f" (distribution {dist})" if dist and dist != p["name"] else ""  # config accepts either name
        line = f"{p['name']}{also}{version}  [{p['status']}]"
        if p["reason"]:
            line += f"  {p['reason']}"
        yield line
        if p["hooks"]:
            off = hooks_disabled(data, p["name"], dist)
            yield "    hooks: " + ", ".join(f"{h} (off: hooks_disabled)" if h in off else h for h in p["hooks"])
    from .builtin import AFTER, BEFORE
    from .plugins import _selection

    selection = _selection(data)  # [plugins] disable, read as inventory() reads it
    disabled = selection[0] if selection is not None else set()
    yield ("built in: " + ", ".join(f"{name} [{'disabled' if name in disabled else 'on'}]"
                                    for name, _ in (*BEFORE, *AFTER))
           + '  (switch one off with [plugins] disable = ["NAME"])')
    conflicts = getattr(source, "conflicts", {})
    for name, plugins in conflicts.items():
        yield (f"conflict: tool {name!r} is provided by {', '.join(plugins)}; "
               f'choose with [connectors.{name}] provider = "..."')
    failed = sum(1 for p in rows if p["status"] == "failed")
    if check:
        tools = len(source.all_tools())
        yield (f"checked: {len(rows)} plugin(s) started (settings validated, tools registered): "
               f"{tools} tool(s), {failed} failed, {len(conflicts)} conflict(s)")
    else:
        yield (f"{len(rows)} plugin(s) imported to find their hooks, not started; "
               "--check also validates their settings and registers their tools")


def _plain(stream: Any) -> bool:
    """Whether ``click.echo`` writes to ``stream`` as it is: a text file with an encoding
    other than ASCII and an error handler, outside Windows (whose console click rewraps)."""
    import codecs
    import io

    if sys.platform.startswith("win") or not isinstance(stream, io.TextIOWrapper):
        return False
    encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
    if not encoding or errors is None:
        return False
    try:
        return codecs.lookup(encoding).name != "ascii"
    except LookupError:
        return False


def echo(text: str, *, err: bool = False) -> None:
    """``click.echo(text, err=err)``: the line and a newline written and flushed; text with an
    escape character (click strips ANSI codes off a terminal) or a stream click would wrap goes
    to ``click.echo``."""
    stream = sys.stderr if err else sys.stdout
    if "\x1b" in text or not _plain(stream):
        import click

        click.echo(text, err=err)
        return
    stream.write(text + "\n")
    stream.flush()


def _exit_as_click(exc: BaseException) -> NoReturn:
    """End the process as click ends a command that raised ``exc`` (a ``ReachError`` as the
    ``ClickException`` ``reach_core.cli`` makes of it: ``Error: ...`` on stderr, exit 1; Ctrl-C
    ``Aborted!``; a closed stdout silent), by raising it inside a click command."""
    import click

    from .errors import ReachError

    if isinstance(exc, ReachError):
        exc = click.ClickException(str(exc))

    def fail() -> None:
        raise exc

    click.Command("reach", callback=fail).main([], prog_name="reach")


def run(*, as_json: bool) -> None:
    """``reach plugins [--json]`` without click: what ``reach_core.cli.plugins_cmd`` does for
    these arguments (logs configured as the ``reach`` group does with no option), then exit."""
    from .errors import ReachError
    from .logs import configure_stderr_on_import
    from .plugins import inventory

    configure_stderr_on_import(_WARNING)
    try:
        try:
            source = inventory(None)
        except ReachError as exc:  # as reach_core.cli._inventory: the message, no traceback
            _exit_as_click(exc)
        for line in lines(source, None, as_json=as_json, check=False):
            echo(line)
    except (EOFError, KeyboardInterrupt, OSError) as exc:  # click decides: Aborted!, a closed pipe...
        _exit_as_click(exc)
    sys.exit(0)
