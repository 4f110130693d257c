"""``reach http import FILE_OR_URL --service NAME``: an OpenAPI document -> a settings entry.

Prints the ``[plugins.reach-http.services.NAME]`` entry (or appends it to a
config file with ``--write``) and lists the tools it will create, with their
risk, so a person sees what the model will be able to do before enabling it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from .openapi import OpenAPIError, build_operations, load_document, server_url
from .openapi.text import printable
from .settings import SERVICE_NAME

__all__ = ["http_group", "settings_entry"]


def _origin_of(url: str | None) -> tuple[str, str, int] | None:
    if not url:
        return None
    import httpx

    from .client import origin

    return origin(httpx.URL(url))


def _toml_string(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes.
    return json.dumps(value, ensure_ascii=False)


def settings_entry(service: str, values: dict[str, Any]) -> str:
    """The TOML table for one service (scalars and lists of strings only)."""
    lines = [f"[plugins.reach-http.services.{service}]"]
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = str(value)
        elif isinstance(value, list):
            text = "[" + ", ".join(_toml_string(str(v)) for v in value) + "]"
        else:
            text = _toml_string(str(value))
        lines.append(f"{key} = {text}")
    return "\n".join(lines) + "\n"


@click.group("http")
def http_group() -> None:
    """HTTP services and OpenAPI import (reach-http)."""


@http_group.command("import")
@click.argument("source")
@click.option("--service", required=True, help="Name of the service in reach.toml.")
@click.option("--base-url", default=None, help="Where requests go (default: the document's first server).")
@click.option("--allow-private", is_flag=True, help="Allow the service (and document URL) to be a private address.")
@click.option("--write", "write_to", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append the entry to this TOML file instead of printing it.")
@click.option("--json", "as_json", is_flag=True, help="Print the entry and the operations as JSON.")
def import_command(
    source: str, service: str, base_url: str | None, allow_private: bool, write_to: Path | None, as_json: bool
) -> None:
    """Turn each operation of an OpenAPI 3.0/3.1 document (JSON or YAML) into a tool."""
    if not SERVICE_NAME.match(service):
        raise click.BadParameter(f"must match {SERVICE_NAME.pattern}", param_hint="--service")
    try:
        loaded = load_document(source, allow_private=allow_private)
        specs, skipped = build_operations(loaded.document, taken={"http_get", "http_request"})
    except OpenAPIError as exc:
        raise click.ClickException(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - fetch errors (refused host, network) reported plainly
        raise click.ClickException(f"cannot load {source}: {exc}") from None
    location = loaded.url or loaded.source
    base = base_url or server_url(loaded.document, loaded.url)
    from_document = base is not None and not base_url
    if from_document and base is not None:
        from .build import check_document_server

        try:
            check_document_server(base)
        except OpenAPIError as exc:
            raise click.ClickException(f"{exc} (pass --base-url)") from None
    values: dict[str, Any] = {"openapi": location, "base_url": base}
    if allow_private:
        values["allow_private"] = True
    entry = settings_entry(service, values)
    operations: list[dict[str, Any]] = [
        {"name": s.name, "method": s.method, "path": s.path, "risk": s.risk, "idempotent": s.idempotent,
         "changes": s.changes}
        for s in specs
    ]
    if write_to is not None:
        existing = write_to.read_text(encoding="utf-8") if write_to.exists() else ""
        header = re.escape(f"[plugins.reach-http.services.{service}]")
        if re.search(rf"^\s*{header}\s*$", existing, re.MULTILINE):
            raise click.ClickException(f"{write_to} already has a service called {service!r}; pick another name")
        sep = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
        write_to.write_text(existing + sep + entry, encoding="utf-8")
    if as_json:
        click.echo(json.dumps({"service": service, "settings": {k: v for k, v in values.items() if v is not None},
                               "operations": operations,
                               "skipped": [s.__dict__ for s in skipped]}, ensure_ascii=False, indent=2))
        return
    if write_to is None:
        click.echo(entry, nl=False)
    else:
        click.echo(f"added [plugins.reach-http.services.{service}] to {write_to}", err=True)
    if not base:
        click.echo("# the document has no absolute server URL: set base_url before use", err=True)
    elif from_document and allow_private and _origin_of(base) != _origin_of(loaded.url):
        click.echo(f"# base_url {base} comes from the document, not from you, and allow_private will apply "
                   "to it: check that this host is the one you mean", err=True)
    click.echo(f"# {len(specs)} tools:", err=True)
    for op in operations:
        click.echo(f"#   {op['name']:<32} {op['risk']:<9} {op['method']} {printable(str(op['path']))}", err=True)
        for change in op["changes"]:
            click.echo(f"#       text for the model changed: {printable(change)}", err=True)
    for s in skipped:
        click.echo(f"#   skipped {s.method} {printable(s.path)}: {printable(s.reason)}", err=True)
