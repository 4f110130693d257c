"""The ``reach`` command: ``plugins``, ``tools`` (``lint``), ``call``, and what plugins add.

Start-up stays fast: ``reach --version`` imports no plugin, and plugin commands
are only collected when a name the core does not know is asked for (or for
``--help``). Listing plugins and collecting their commands imports the plugins'
entry-point modules but starts no ``Reach`` (see ``reach_core.plugins.inventory``):
no pydantic, no settings validation, no tool registration. ``reach plugins
--check`` (and ``--hook``) build the whole ``Reach``.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from . import __version__
from .plugins_cli import lines

__all__ = ["main", "reach_of", "serve_group"]

CORE_COMMANDS = ("plugins", "tools", "call", "config")
_WARNING = 30  # logging.WARNING, without importing logging at start-up


def serve_group(cli: click.Group) -> click.Group:
    """``reach serve``: the group several plugins add a subcommand to (``reach serve mcp``,
    ``reach serve http`` ...); created by whichever plugin's commands are added first."""
    serve = cli.commands.get("serve")
    if not isinstance(serve, click.Group):
        serve = click.Group("serve", help="Serve reach's tools to other programs (subcommands come from plugins).")
        cli.add_command(serve)
    return serve


def _configure_logging(verbose: int, level: str | None, log_json: bool) -> None:
    """The CLI is a host: it shows reach's logs on stderr (warnings by default); stdout stays
    for the command's own output (``reach run --json``, ``reach serve mcp --stdio``)."""
    from .logs import configure_stderr

    configure_stderr(level or max(_WARNING - 10 * verbose, 10), json_lines=log_json)


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters at a word boundary, with an ellipsis when cut."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut and not text[width - 1].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-") + "…"


def _echo_json(data: Any) -> None:
    import json

    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


class ReachGroup(click.Group):
    """Core commands are static; plugin commands are loaded on demand.

    Core commands kept in a module of their own (``LAZY``: ``reach config``) are added
    when asked for, and always before plugins add theirs (a plugin sees them in
    ``cli.commands``, as it would if they were imported with this module): ``reach
    plugins`` does not import them.
    """

    #: command name -> (module, attribute)
    LAZY = {"config": ("reach_core.config_cli", "config_group")}
    _plugins_loaded = False

    def _add_lazy(self, name: str) -> None:
        import importlib

        module, attr = self.LAZY[name]
        if name not in self.commands:
            self.add_command(getattr(importlib.import_module(module), attr), name)

    def _load_plugin_commands(self, ctx: click.Context) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for name in self.LAZY:
            self._add_lazy(name)
        found = _inventory(ctx, quiet=True)
        if found is None:
            return
        for impl in found.pm.hook.reach_register_commands.get_hookimpls():
            try:
                impl.function(cli=self)
            except Exception as exc:  # noqa: BLE001 - one plugin's CLI must not break the others
                click.echo(f"warning: plugin {impl.plugin_name} could not add commands: {exc}", err=True)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands(ctx)
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY:
            self._add_lazy(cmd_name)
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and cmd_name not in CORE_COMMANDS:
            self._load_plugin_commands(ctx)
            cmd = super().get_command(ctx, cmd_name)
        return cmd


def _root_obj(ctx: click.Context) -> dict[str, Any]:
    root = ctx.find_root()
    if not isinstance(root.obj, dict):
        # plugin commands are resolved before the root callback runs: read --config here
        root.obj = {"config": root.params.get("config"), "reach": None}
    return root.obj


def _inventory(ctx: click.Context, *, quiet: bool = False) -> Any:
    """The installed plugins, imported and registered but not started (fast: no ``Reach``)."""
    from .errors import ReachError
    from .plugins import inventory

    try:
        return inventory(_root_obj(ctx).get("config"))
    except ReachError as exc:
        if quiet:
            click.echo(f"warning: {exc}", err=True)
            return None
        raise click.ClickException(str(exc)) from None


def reach_of(ctx: click.Context, *, quiet: bool = False) -> Any:
    """The ``Reach`` of this ``reach`` invocation, built from ``--config`` on first use and shared
    by every command of it: what a plugin's command (``reach_register_commands``) works on.

    A configuration or plugin error becomes a ``click.ClickException`` (the message, no
    traceback); with ``quiet`` it is a warning on stderr and the result ``None``.
    """
    root = ctx.find_root()
    obj = _root_obj(ctx)
    if obj.get("reach") is None:
        from .errors import ReachError
        from .reach import Reach

        try:
            obj["reach"] = Reach(obj.get("config"))
        except ReachError as exc:
            if quiet:
                click.echo(f"warning: {exc}", err=True)
                return None
            raise click.ClickException(str(exc)) from None
        root.obj = obj
    return obj["reach"]


@click.group(cls=ReachGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="reach")
@click.option("--config", "config", type=click.Path(dir_okay=False), default=None,
              help="Config file (default: $REACH_CONFIG, ./reach.toml, [tool.reach] in ./pyproject.toml).")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-v info, -vv debug).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
              default=None, help="Level of reach's logs on stderr (default: warning; overrides -v).")
@click.option("--log-json", is_flag=True, help="Logs on stderr as JSON lines (for log collectors).")
@click.pass_context
def cli(ctx: click.Context, config: str | None, verbose: int, log_level: str | None, log_json: bool) -> None:
    """reach: checked, bounded, audited tool calls for LLM agents."""
    _configure_logging(verbose, log_level, log_json)
    if not isinstance(ctx.obj, dict) or ctx.obj.get("config") != config:
        ctx.obj = {"config": config, "reach": None}


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--hook", default=None, help="Print the effective order of one hook's implementations.")
@click.option("--check", is_flag=True,
              help="Also start the plugins (validate settings, register tools): report set-up failures "
                   "and tool name conflicts.")
@click.pass_context
def plugins_cmd(ctx: click.Context, as_json: bool, hook: str | None, check: bool) -> None:
    """List plugins: name, distribution, version, hooks, status (loaded/blocked/failed) and why.

    Config may name a plugin by its entry-point name (shown first) or its
    distribution name (shown when it differs; ``aliases`` in --json).

    Plugins are imported to find their hooks but not started; --check starts them as
    every other command does, so settings errors, tools that fail to register and
    tools two plugins provide are reported too.
    """
    if hook:
        reach = reach_of(ctx)
        order = reach.hook_order(hook)
        if as_json:
            _echo_json({"hook": hook, "order": order})
        else:
            click.echo(f"{hook}: " + (" -> ".join(order) if order else "(no implementations)"))
        return
    source = reach_of(ctx) if check else _inventory(ctx)
    for line in lines(source, _root_obj(ctx).get("config"), as_json=as_json, check=check):
        click.echo(line)


@cli.group("tools", invoke_without_command=True)
@click.option("--agent", default=None, help="List what this agent may use.")
@click.option("--query", default=None, help="Rank by relevance to this question (uses the selector).")
@click.option("--limit", type=int, default=None)
@click.option("--explain", is_flag=True, help="Show the selector's score per signal.")
@click.option("--strict", is_flag=True, help="OpenAI strict-mode declarations.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def tools_cmd(ctx: click.Context, agent: str | None, query: str | None, limit: int | None,
              explain: bool, strict: bool, as_json: bool) -> None:
    """List the tools a model would be offered."""
    if ctx.invoked_subcommand:
        return
    reach = reach_of(ctx)
    if explain and query:
        selector = reach.provider("selector")
        if selector is None or not hasattr(selector, "explain"):
            raise click.ClickException("no installed selector can explain (pip install reach-preselect)")
        from .context import CallContext

        sctx = CallContext(reach.runtime, None, agent=agent or "default", run_id=None, call_id="", trace_id="",
                           query=query)
        rows = selector.explain(query, reach.allowed_tools(agent), sctx, limit or 10)
        if as_json:
            _echo_json(rows)
        else:
            for row in rows:
                click.echo("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
        return
    selected = reach.select(agent=agent, query=query, limit=limit)
    if as_json:
        _echo_json([t.declaration(strict=strict) for t in selected])
        return
    if not selected:
        who = f"agent {agent!r}" if agent else "the default agent"
        total = len(reach.all_tools())
        click.echo(f"no tools for {who}: {total} registered" + (
            "; install a connector plugin (pip install reach-weather, for example)" if not total
            else f"; check [agents.{agent or 'default'}] allow / deny / max_tier in your config"))
        return
    for t in selected:
        note = f"  ({t.risk_note})" if t.risk_note else ""
        first = (t.description.splitlines() or [""])[0]
        click.echo(f"{t.name}  [{t.risk}{', idempotent' if t.idempotent else ''}]  {t.plugin}{note}")
        if first:
            click.echo(f"    {shorten(first, 110)}")


@tools_cmd.command("lint")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def tools_lint_cmd(ctx: click.Context, as_json: bool) -> None:
    """Check each tool against what makes models call tools well. Exit 1 if any problem."""
    from .lint import lint_tool

    reach = reach_of(ctx)
    report = {t.name: [p.to_dict() for p in lint_tool(t)] for t in reach.all_tools()}
    if as_json:
        _echo_json(report)
    else:
        for name, problems in report.items():
            click.echo(f"{name}: {'ok' if not problems else ''}")
            for p in problems:
                click.echo(f"    [{p['rule']}] {p['message']}")
    if any(report.values()):
        sys.exit(1)


@tools_cmd.command("pin")
@click.argument("names", nargs=-1)
@click.option("--check", is_flag=True, help="Only report tools whose definition changed since pinned (exit 1 if any).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def tools_pin_cmd(ctx: click.Context, names: tuple[str, ...], check: bool, as_json: bool) -> None:
    """Record a hash of each tool's name, description and schema, and its tier; changed tools (or a lower
    tier) are blocked until re-pinned."""
    reach = reach_of(ctx)
    if check:
        changed = {t.name: t.blocked for t in reach.all_tools() if t.blocked}
        if as_json:
            _echo_json(changed)
        else:
            for name, why in changed.items():
                click.echo(f"{name}: {why}")
            if not changed:
                click.echo("all pinned tools match their pins")
        sys.exit(1 if changed else 0)
    unknown = [n for n in names if n not in {t.name for t in reach.all_tools()}]
    if unknown:
        raise click.ClickException(f"no such tool: {', '.join(unknown)}")
    pins = reach.pin_tools(list(names) or None)
    chosen = {n: pins[n] for n in (names or pins)}
    if as_json:
        _echo_json({"pins": chosen, "file": str(reach.pins.path)})
    else:
        click.echo(f"pinned {len(chosen)} tool(s) in {reach.pins.path}")


@cli.command("call")
@click.argument("name")
@click.option("--args", "args", default="{}", help="Arguments as a JSON object.")
@click.option("--agent", default=None)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def call_cmd(ctx: click.Context, name: str, args: str, agent: str | None, as_json: bool) -> None:
    """Call one tool through the whole pipeline and print the result."""
    import asyncio
    import json

    reach = reach_of(ctx)

    async def go() -> Any:
        view = _ProgressView(sys.stderr)
        result = None
        try:
            async for event in reach.invoke_stream({"id": "cli", "name": name, "arguments": args}, agent=agent):
                if isinstance(event, dict):
                    view.show(event)
                else:
                    result = event
            return result
        finally:
            view.close()
            await reach.aclose()

    result = asyncio.run(go())
    if as_json:
        _echo_json(result.to_dict())
    elif result.ok:
        content = result.content
        click.echo(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, indent=2))
    else:
        assert result.error is not None
        click.echo(f"error [{result.error.code}]: {result.error.message}", err=True)
    if not result.ok:
        sys.exit(2)


class _ProgressView:
    """Progress of a long call on stderr: a bar redrawn in place on a terminal, lines otherwise."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.items = 0
        self.drawn = False

    def show(self, event: dict[str, Any]) -> None:
        if event.get("type") == "item":
            self.items += 1
            if not self.tty:
                return
            text = f"{self.items} item(s)"
        else:
            done, total, message = event.get("done"), event.get("total"), event.get("message")
            if total:
                frac = max(0.0, min(1.0, float(done or 0) / float(total)))
                bar = "#" * int(frac * 20)
                text = f"[{bar:<20}] {done:g}/{total:g}"
            else:
                text = f"{done:g}"
            if message:
                text += f" {message}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + text[:200])
            self.drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def main() -> None:
    cli(prog_name="reach")


if __name__ == "__main__":
    main()
