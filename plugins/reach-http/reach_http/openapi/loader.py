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


def parse_document(text: str, source: str) -> dict[str, Any]:
    """JSON when it looks like JSON, else YAML; must be an OpenAPI 3.x object."""
    stripped = text.lstrip()
    try:
        if stripped.startswith("{"):
            data = json.loads(text)
        else:
            import yaml  # first use only: keeps `reach --version` fast

            data = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the same user error
        raise OpenAPIError(f"{source} is neither valid JSON nor YAML: {exc}") from None
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
        raise OpenAPIError(f"{url} is larger than {MAX_DOCUMENT_BYTES} bytes")
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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OpenAPIError(f"cannot read OpenAPI document {source}: {exc.strerror or exc}") from None
    return LoadedDocument(parse_document(text, source), str(path.resolve()), None)
