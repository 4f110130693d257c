"""An httpx transport that connects only to addresses the guard has checked.

The URL keeps its host name, so the ``Host`` header, TLS SNI and certificate
verification all use the name; only the TCP connect is redirected to the
pinned IP. A host with no pin is refused at connect time (fail closed), so a
code path that forgets to ask the guard cannot reach the network.
"""

from __future__ import annotations

import functools
import ssl
import typing
from collections.abc import AsyncIterator

import httpcore
import httpx

__all__ = ["PinnedTransport", "make_ssl_context"]


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Replaces the host of every TCP connect by its pinned address."""

    def __init__(self, pins: dict[str, str]) -> None:
        self._pins = pins
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's backend interface
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        address = self._pins.get(host.lower())
        if address is None:
            raise httpcore.ConnectError(f"refusing to connect to {host}: its address was not checked")
        return await self._inner.connect_tcp(
            address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(self, *args: typing.Any, **kwargs: typing.Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable through reach-http")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _Stream(httpx.AsyncByteStream):
    def __init__(self, inner: typing.AsyncIterable[bytes]) -> None:
        self._inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpcore.TimeoutException as exc:
            raise httpx.ReadTimeout(str(exc)) from exc
        except httpcore.NetworkError as exc:
            raise httpx.ReadError(str(exc)) from exc
        except httpcore.ProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc

    async def aclose(self) -> None:
        closer = getattr(self._inner, "aclose", None)
        if closer is not None:
            await closer()


@functools.lru_cache(maxsize=16)
def make_ssl_context(verify: bool | str) -> ssl.SSLContext:
    """TLS context: the system/certifi roots, a CA bundle path, or (explicitly) none.

    Cached: loading the CA roots takes ~0.2 s, far more than a local request.
    """
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    if verify is False:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return httpx.create_ssl_context()


class PinnedTransport(httpx.AsyncBaseTransport):
    """httpx transport over an httpcore pool whose network backend honours ``pins``.

    ``pins`` maps a lower-case host (as in the URL) to the IP text to connect to;
    the owner adds a pin after the guard approves a hop, before sending it.
    """

    def __init__(self, pins: dict[str, str], *, verify: bool | str = True) -> None:
        self.pins = pins
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=make_ssl_context(verify),
            network_backend=_PinnedBackend(pins),
            max_connections=10,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            response = await self._pool.handle_async_request(core_request)
        except httpcore.ConnectTimeout as exc:
            raise httpx.ConnectTimeout(str(exc), request=request) from exc
        except httpcore.ConnectError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except httpcore.TimeoutException as exc:
            raise httpx.ReadTimeout(str(exc), request=request) from exc
        except httpcore.NetworkError as exc:
            raise httpx.ReadError(str(exc), request=request) from exc
        except httpcore.ProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        except httpcore.UnsupportedProtocol as exc:
            raise httpx.UnsupportedProtocol(str(exc), request=request) from exc
        assert isinstance(response.stream, typing.AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Stream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
