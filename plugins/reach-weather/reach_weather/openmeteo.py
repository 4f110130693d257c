"""The HTTP side: one lazily created ``httpx.AsyncClient`` and error mapping.

httpx is imported on first use, not at plugin discovery, so ``reach --version``
stays fast with this plugin installed. Failures are translated into the
exceptions the core understands: transport trouble and 429/5xx become
``RetryableError`` (the core retries read tools inside the call deadline),
anything the server refuses on purpose becomes ``BusinessError``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import unicodedata
from typing import TYPE_CHECKING, Any

from reach_core import BusinessError, RetryableError

from .settings import WeatherSettings

if TYPE_CHECKING:
    import ssl

    import httpx

_RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
# The largest answer read from the service: a forecast for 16 days is a few KiB; a
# hostile or broken server must not fill memory or the model's context.
MAX_ANSWER_BYTES = 1024 * 1024
# Most places taken from one geocoding answer (the requests ask for at most 20).
_MAX_RESULTS = 20


SERVICE_TEXT_CHARS = 100


def service_text(value: Any, limit: int = SERVICE_TEXT_CHARS) -> str | None:
    """A short, single-line string from what the service sent (``None`` for a non-string).

    Control and line/paragraph separators become spaces and the text is cut to ``limit``
    characters, so a hostile or broken service cannot flood the model's context or lay
    out text that looks like a new message."""
    if not isinstance(value, str):
        return None
    text = " ".join("".join(" " if (unicodedata.category(c)[0] in "CZ" and c != " ") else c
                            for c in value[: limit * 4]).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class OpenMeteo:
    """A small Open-Meteo client bound to one connector instance.

    The client is created on the first request and remembers the event loop it
    was made on: an ``httpx.AsyncClient`` cannot be shared across loops (a sync
    wrapper may run each call in a fresh loop), so a new loop gets a new client.
    """

    def __init__(self, settings: WeatherSettings) -> None:
        self.settings = settings
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _get_client(self) -> httpx.AsyncClient:
        import httpx

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop or self._client.is_closed:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.settings.request_timeout),
                # Plain-http base URLs (the local demo service) never use TLS, as
                # redirects are off: skip loading the CA bundle for them.
                verify=_tls_context() if self._uses_tls() else False,
                headers={"User-Agent": "reach-weather/0.1 (+https://github.com/reach)"},
                follow_redirects=False,
            )
            self._loop = loop
        return self._client

    def _uses_tls(self) -> bool:
        urls = (self.settings.geocoding_url, self.settings.forecast_url)
        return any(url.startswith("https://") for url in urls)

    async def aclose(self) -> None:
        """Close the HTTP client if this loop owns it."""
        client, self._client = self._client, None
        if client is not None and not client.is_closed:
            try:
                await client.aclose()
            except RuntimeError:  # made on a loop that is gone; nothing left to release
                pass

    async def search(self, name: str, *, count: int, language: str) -> list[dict[str, Any]]:
        """Geocode ``name``: the list of matching places, best first (maybe empty)."""
        data = await self._get(
            f"{self.settings.geocoding_url}/v1/search",
            {"name": name, "count": count, "language": language, "format": "json"},
            service="geocoding",
        )
        results = data.get("results")
        if not isinstance(results, list):
            return []
        return [
            {**r, "name": service_text(r.get("name")) or "", "country": service_text(r.get("country"))}
            for r in results[: min(count, _MAX_RESULTS)]
            if isinstance(r, dict) and "latitude" in r and "longitude" in r
        ]

    async def forecast(self, params: dict[str, Any]) -> dict[str, Any]:
        """Call the forecast API with ``params`` (timezone=auto is always added)."""
        return await self._get(
            f"{self.settings.forecast_url}/v1/forecast",
            {**params, "timezone": "auto"},
            service="forecast",
        )

    async def _get(self, url: str, params: dict[str, Any], *, service: str) -> dict[str, Any]:
        import httpx

        client = self._get_client()
        try:
            async with client.stream("GET", url, params=params) as response:
                body = b"" if response.status_code in _RETRYABLE_STATUS else await _read_capped(response, service)
        except httpx.TimeoutException as exc:
            raise RetryableError(
                f"the weather {service} service did not answer within "
                f"{self.settings.request_timeout:g} s"
            ) from exc
        except httpx.TransportError as exc:
            raise RetryableError(f"the weather {service} service cannot be reached") from exc

        if response.status_code in _RETRYABLE_STATUS:
            raise RetryableError(
                f"the weather {service} service is busy (HTTP {response.status_code})",
                retry_after=_retry_after(response),
            )
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
            if response.is_success:
                raise RetryableError(
                    f"the weather {service} service sent an unreadable answer"
                ) from exc
            data = {}
        if not response.is_success:
            reason = service_text(data.get("reason"), 200) if isinstance(data, dict) else None
            raise BusinessError(
                f"the weather {service} service refused the request (HTTP {response.status_code})"
                + (f": {reason}" if reason else "")
            )
        if not isinstance(data, dict):
            raise RetryableError(f"the weather {service} service sent an unexpected answer")
        return data


async def _read_capped(response: httpx.Response, service: str) -> bytes:
    """The body, refused once it passes ``MAX_ANSWER_BYTES`` (declared or streamed)."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
        raise _too_large(service)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise _too_large(service)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(service: str) -> BusinessError:
    return BusinessError(
        f"the weather {service} service sent an answer larger than {MAX_ANSWER_BYTES // 1024} KiB, "
        "which was not read; tell the user the weather service is misbehaving."
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verified TLS context per process: building one (loading the CA bundle)
    costs a tenth of a second, too much to pay for every new client."""
    import ssl

    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds from a numeric Retry-After header, else None."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
