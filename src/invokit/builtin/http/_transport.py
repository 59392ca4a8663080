"""An httpx transport that connects only to addresses the guard has checked.

The request keeps its URL, so the ``Host`` header and the TLS server name (SNI and
certificate check) stay those of the name in the URL; only the TCP connect is redirected to
the pinned address. A host without a pin is refused, never resolved: there is no code path
from this transport to a DNS lookup.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager

import httpcore
import httpx

from invokit.builtin.http._addresses import IPAddress
from invokit.builtin.http._guard import CheckedTarget

__all__ = ["PinnedBackend", "PinnedTransport"]


class PinnedBackend(httpcore.AsyncNetworkBackend):
    """A network backend that swaps each host for its pinned addresses when connecting."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.AnyIOBackend()
        self._pins: dict[tuple[str, int], tuple[IPAddress, ...]] = {}
        # Every connection made, as (host, port, address): what an audit or a test can check.
        self.connections: list[tuple[str, int, str]] = []

    def pin(self, target: CheckedTarget) -> None:
        """Let ``target.host:target.port`` be reached at ``target.addresses`` (in order)."""
        self._pins[(target.host, target.port)] = target.addresses

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = self._pins.get((host.lower(), port))
        if not addresses:
            raise httpcore.ConnectError(f"{host}:{port} was not checked; refusing to connect")
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            self.connections.append((host.lower(), port, str(address)))
            return stream
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's interface
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are never used by the fetch tool")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class PinnedTransport(httpx.AsyncBaseTransport):
    """Sends httpx requests through a connection pool built on a :class:`PinnedBackend`.

    No proxy is ever used (a proxy would do its own, unchecked, resolution).
    """

    def __init__(self, backend: PinnedBackend, *, ssl_context: ssl.SSLContext) -> None:
        self.backend = backend
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, network_backend=backend, retries=0
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=_request_body(request),
            extensions=request.extensions,
        )
        with _mapped_errors(request):
            response = await self._pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, response: httpcore.Response, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped_errors(self._request):
            async for chunk in self._response.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


async def _request_body(request: httpx.Request) -> AsyncIterator[bytes]:
    assert isinstance(request.stream, httpx.AsyncByteStream)
    async for chunk in request.stream:
        yield chunk


# httpcore's exceptions, as the httpx ones callers catch.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
)


@contextmanager
def _mapped_errors(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core_type, httpx_type in _ERRORS:
            if isinstance(exc, core_type):
                raise httpx_type(str(exc), request=request) from exc
        raise
