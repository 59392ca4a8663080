"""An httpx transport that connects only to addresses the guard has checked.

The request keeps its URL, so the ``Host`` header and the TLS server name (SNI and
certificate check) stay those of the name in the URL; only the TCP connect is redirected to
the pinned address. A host without a pin is refused, never resolved: there is no code path
from this transport to a DNS lookup.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import contextmanager

import anyio
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
            content=_request_content(request),
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
    """The body of one response, closed where it stands when the reader stops early."""

    def __init__(self, response: httpcore.Response, request: httpx.Request) -> None:
        self._response = response
        self._chunks = _Chunks(response, request)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def aclose(self) -> None:
        # Shielded: it never waits on the peer, and a cancelled close would leave httpcore's
        # generators half-run.
        with anyio.CancelScope(shield=True):
            await self._chunks.abandon(self._response)
            await self._response.aclose()


class _Chunks:
    """An iterator over httpcore's body stream that can be abandoned part-way.

    httpcore reads a body through nested async generators. Leaving them half-run (the size
    cap stops reading early) hands them to the garbage collector, which trio reports; so an
    abandoned body has its connection closed and the generators run out on the read error.
    """

    def __init__(self, response: httpcore.Response, request: httpx.Request) -> None:
        self._response = response
        self._request = request
        self._parts: AsyncIterator[bytes] | None = None
        self._finished = False

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        if self._parts is None:
            stream = self._response.stream
            assert isinstance(stream, AsyncIterable)
            self._parts = aiter(stream)
        try:
            with _mapped_errors(self._request):
                return await anext(self._parts)
        except BaseException:
            self._finished = True
            raise

    async def abandon(self, response: httpcore.Response) -> None:
        """Stop reading: close the connection, then let the generators end on the error."""
        if self._parts is None or self._finished:
            return
        network = response.extensions.get("network_stream")
        if network is not None:
            await network.aclose()
        while not self._finished:
            # A read error (or the end) is expected: the connection was just closed.
            with contextlib.suppress(Exception):
                await self.__anext__()


def _request_content(request: httpx.Request) -> AsyncIterable[bytes]:
    stream = request.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    return stream


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
