"""Read an OpenAPI document from a file or a URL (JSON or YAML).

A URL is fetched through the same SSRF guard and pinned transport as every tool
call: a config line or a CLI argument must not be a way around it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ..client import exchange, origin
from ..guard import AddressGuard
from .schema import OpenAPIError

__all__ = ["LoadedDocument", "fetch_document", "load_document", "parse_document"]

MAX_DOCUMENT_BYTES = 20_000_000


@dataclass
class LoadedDocument:
    """A parsed document and where it came from (for relative server URLs)."""

    document: dict[str, Any]
    source: str
    url: str | None


MAX_NODES = 1_000_000
"""Values (objects, lists, scalars) a document may hold, YAML aliases counted as often as used.

A YAML alias is a reference: ten lines of ``&a [*b, *b, ...]`` ("billion laughs")
stand for billions of values once something walks them (building schemas, JSON
for the model). The real API descriptions reach knows of stay far below this.
"""


class _TooLarge(Exception):
    pass


def _yaml_count(loader: Any, limit: int) -> int:
    """Values the YAML stream of ``loader`` expands to, counted from its events before any node
    is composed (aliases counted at every use, as the size of what they name); stops past ``limit``.

    Composing first and counting after let a flat list of a million scalars cost half a
    minute before the refusal (libyaml builds every node, then each is walked); events
    cost about two microseconds each and the count stops at the cap. The size of an
    anchored value is the count when it closes minus the count when it opened, so nested
    anchors and aliases inside anchors are priced at what they expand to, not their text.
    """
    import yaml

    scalar, alias, end = yaml.ScalarEvent, yaml.AliasEvent, yaml.StreamEndEvent
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    sizes: dict[str, int] = {}
    open_: list[tuple[int, str | None]] = []  # (count before the collection, its anchor)
    total = 0
    get = loader.get_event
    while True:
        event = get()
        kind = type(event)
        if kind is scalar:
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif kind is alias:
            size = sizes.get(event.anchor)
            if size is None:
                if any(name == event.anchor for _, name in open_):
                    raise OpenAPIError("its YAML refers to itself through an alias (a recursive anchor)")
                size = 1  # undefined: composing fails with the parser's own message (as for a duplicate anchor)
            total += size
        elif kind in starts:
            open_.append((total, event.anchor))
            total += 1
        elif kind in ends:
            before, name = open_.pop()
            if name is not None:
                sizes[name] = total - before
        elif kind is end or event is None:
            return total
        if total > limit:
            raise _TooLarge


def _json_size(data: Any, limit: int) -> int:
    count = 0
    stack = [data]
    while stack:
        value = stack.pop()
        count += 1
        if count > limit:
            raise _TooLarge
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


def _load_yaml(text: str, max_nodes: int) -> Any:
    import yaml  # first use only: keeps `reach --version` fast

    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    counter = loader_class(text)
    try:
        _yaml_count(counter, max_nodes)
    finally:
        counter.dispose()
    loader = loader_class(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def parse_document(text: str, source: str, *, max_nodes: int = MAX_NODES) -> dict[str, Any]:
    """JSON when it looks like JSON, else YAML; must be an OpenAPI 3.x object of at most ``max_nodes`` values."""
    stripped = text.lstrip()
    try:
        if stripped.startswith("{"):
            data = json.loads(text)
            _json_size(data, max_nodes)
        else:
            data = _load_yaml(text, max_nodes)
    except _TooLarge:
        raise OpenAPIError(
            f"{source} is too large: it holds more than {max_nodes} values (YAML aliases counted at each use)"
        ) from None
    except OpenAPIError as exc:
        raise OpenAPIError(f"{source}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any parse failure is the same user error
        raise OpenAPIError(f"{source} is neither valid JSON nor YAML: {str(exc)[:300]}") from None
    if not isinstance(data, dict) or not str(data.get("openapi", "")).startswith("3."):
        raise OpenAPIError(f"{source} is not an OpenAPI 3.0/3.1 document (no 'openapi: 3.x' field)")
    if not isinstance(data.get("paths", {}), dict):
        raise OpenAPIError(f"{source}: 'paths' must be an object")
    return data


async def fetch_document(
    url: str, *, guard: AddressGuard, allow_private: bool = False, request_timeout: float = 10.0,
    verify: bool | str = True,
) -> LoadedDocument:
    """GET ``url`` through the guard and parse it."""
    target = httpx.URL(url)
    raw = await exchange(
        guard,
        method="GET",
        url=target,
        headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5", "User-Agent": "reach-http"},
        request_timeout=request_timeout,
        verify=verify,
        max_bytes=MAX_DOCUMENT_BYTES,
        private_origins=[origin(target)] if allow_private else (),
    )
    if raw.status >= 400:
        raise OpenAPIError(f"fetching {url} failed with HTTP {raw.status}")
    if raw.cut:
        raise OpenAPIError(f"{url} is too large (more than {MAX_DOCUMENT_BYTES} bytes)")
    text = raw.body.decode("utf-8", errors="replace")
    return LoadedDocument(parse_document(text, url), url, str(raw.url))


def _run_in_thread(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even inside a running loop."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="reach-http-openapi-fetch")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def load_document(
    source: str,
    *,
    guard: AddressGuard | None = None,
    allow_private: bool = False,
    timeout: float = 10.0,
    verify: bool | str = True,
) -> LoadedDocument:
    """Load from a path or an http(s) URL (synchronously: used at setup and by the CLI)."""
    if source.lower().startswith(("http://", "https://")):
        return _run_in_thread(
            fetch_document(
                source, guard=guard or AddressGuard(), allow_private=allow_private, request_timeout=timeout,
                verify=verify,
            )
        )
    path = Path(source).expanduser()
    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise OpenAPIError(f"OpenAPI document {source} is too large (more than {MAX_DOCUMENT_BYTES} bytes)")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OpenAPIError(f"cannot read OpenAPI document {source}: {exc.strerror or exc}") from None
    return LoadedDocument(parse_document(text, source), str(path.resolve()), None)
