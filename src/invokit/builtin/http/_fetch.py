"""Fetch one URL: every hop guarded and pinned, redirects followed by hand, size and time capped."""

from __future__ import annotations

import functools
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NoReturn

import anyio
import httpx

from invokit.builtin.http._content import content_kind, render_body
from invokit.builtin.http._decoding import ACCEPT_ENCODING, BodyDecoder
from invokit.builtin.http._guard import UrlGuard
from invokit.builtin.http._result import FetchResult
from invokit.builtin.http._transport import PinnedBackend, PinnedTransport
from invokit.exceptions import AccessDenied, RetryWithFeedback, ToolFailed

__all__ = ["Fetcher"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Headers the transport owns; letting a model set them would smuggle requests or hosts.
_RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"}
)
# Credentials that must not follow a redirect to another origin.
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
_NO_BODY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
_DEFAULT_HEADERS = {"Accept": "*/*", "Accept-Encoding": ACCEPT_ENCODING}


@dataclass(frozen=True, kw_only=True, slots=True)
class Fetcher:
    """Fetches URLs through a :class:`UrlGuard`, one pinned connection pool per call."""

    guard: UrlGuard
    """Checks every URL, the first and each redirect target."""
    methods: tuple[str, ...] = ("GET",)
    """HTTP methods the model may use (upper case)."""
    max_bytes: int = 1_000_000
    """Most body bytes read (after content decoding); the rest is cut off while streaming."""
    timeout: float = 30.0
    """Seconds for the whole fetch, every hop and the body included."""
    max_redirects: int = 5
    """Most redirects followed before the fetch fails."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Headers sent with every request (a ``User-Agent``, an API key for an allowed host)."""
    verify: ssl.SSLContext | bool = True
    """TLS verification: ``True`` for the system/certifi roots, or a context of your own."""

    async def fetch(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
        raw: bool = False,
        permits: Callable[[str, str], bool] | None = None,
    ) -> FetchResult:
        """Fetch ``url`` and render its body.

        ``permits(url, method)`` is asked before each redirect is followed (the policy saw only
        the first URL); a hop it refuses fails the fetch.

        Raises:
            AccessDenied: the method or a URL on the way is refused.
            RetryWithFeedback: the call itself is malformed (a bad header, a body on GET).
            ToolFailed: the network, a timeout, too many redirects or a binary body.
        """
        start, method, sent = self.precheck(url, method=method, headers=headers, body=body)
        try:
            with anyio.fail_after(self.timeout):
                return await self._run(start, method, sent, body, raw, permits)
        except TimeoutError:
            raise ToolFailed(
                f"fetching {url} took longer than {self.timeout:g} s",
                data={"url": url, "reason": "timeout"},
            ) from None

    def precheck(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
    ) -> tuple[httpx.URL, str, dict[str, str]]:
        """Everything that refuses a fetch without DNS or a connection: the method, the body,
        the headers, the URL's scheme, credentials and host, and a literal address. The tool's
        preflight runs it so that no one is asked about a fetch that cannot happen; DNS-based
        checks stay at fetch time.

        Returns:
            The parsed URL, the method (upper case) and the headers to send.

        Raises:
            AccessDenied: the method or the URL is refused.
            RetryWithFeedback: the call is malformed (a bad URL or header, a body on GET).
        """
        method = method.upper()
        if method not in self.methods:
            raise AccessDenied(
                f"method {method} is not allowed; allowed: {', '.join(self.methods)}",
                data={"url": url, "reason": "method", "method": method},
            )
        if body is not None and method in _NO_BODY_METHODS:
            raise RetryWithFeedback(f"a {method} request has no body; leave 'body' out")
        sent = _merge_headers(self.headers, headers or {})
        try:
            start = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise RetryWithFeedback(f"invalid URL {url!r}: {exc}") from None
        self.guard.check_static(start)
        return start, method, sent

    async def _run(
        self,
        url: httpx.URL,
        method: str,
        headers: dict[str, str],
        body: str | None,
        raw: bool,
        permits: Callable[[str, str], bool] | None,
    ) -> FetchResult:
        backend = PinnedBackend()
        # The transport is used without httpx.AsyncClient: the client's body iterators are
        # generators that cannot be closed where they stand when the size cap stops reading.
        transport = PinnedTransport(backend, ssl_context=self._ssl_context())
        redirects: list[str] = []
        async with transport:
            while True:
                backend.pin(await self.guard.check(url))
                request = httpx.Request(
                    method,
                    url,
                    headers=_request_headers(headers),
                    content=None if body is None else body.encode(),
                )
                response = await _send(transport, request)
                try:
                    location = response.headers.get("location")
                    if response.status_code not in _REDIRECTS or not location:
                        return await self._finish(response, url, redirects, raw)
                finally:
                    await response.aclose()
                redirects.append(str(url))
                if len(redirects) > self.max_redirects:
                    raise ToolFailed(
                        f"more than {self.max_redirects} redirects",
                        data={"url": redirects[0], "reason": "redirects", "redirects": redirects},
                    )
                target = _join(url, location)
                if response.status_code == 303 or (
                    response.status_code in (301, 302) and method == "POST"
                ):
                    method, body = "GET", None
                if permits is not None and not permits(str(target), method):
                    raise AccessDenied(
                        f"{url} redirected to {target}, which the policy does not allow "
                        "without a person's approval; fetch that URL directly if it is needed",
                        data={"url": str(target), "reason": "policy", "redirects": redirects},
                    )
                if _origin(target) != _origin(url):
                    headers = {
                        k: v for k, v in headers.items() if k.lower() not in _CREDENTIAL_HEADERS
                    }
                url = target

    async def _finish(
        self, response: httpx.Response, url: httpx.URL, redirects: list[str], raw: bool
    ) -> FetchResult:
        content_type = response.headers.get("content-type", "")
        kind = content_kind(content_type)
        if kind == "binary" and not raw:
            _refuse_binary(str(url), content_type)
        data, truncated = await _read_capped(response, self.max_bytes)
        # Rendering (HTML to text, base64) is CPU work on up to max_bytes: a worker thread
        # does it, so that the event loop keeps serving other calls meanwhile.
        render = functools.partial(
            render_body,
            data,
            kind=kind,
            charset=response.charset_encoding,
            raw=raw,
            url=str(url),
            max_chars=self.max_bytes,
        )
        rendered = await anyio.to_thread.run_sync(render, abandon_on_cancel=True)
        if rendered is None:
            _refuse_binary(str(url), content_type or "unknown")
        return FetchResult(
            status=response.status_code,
            url=str(url),
            content_type=content_type,
            text=rendered.text,
            truncated=truncated or rendered.truncated,
            redirects=redirects,
            title=rendered.title,
            encoding=rendered.encoding,
        )

    def _ssl_context(self) -> ssl.SSLContext:
        if isinstance(self.verify, ssl.SSLContext):
            return self.verify
        return _default_context(self.verify)


@functools.cache
def _default_context(verify: bool) -> ssl.SSLContext:
    # Loading the CA bundle takes tens of milliseconds of CPU: once per process, not on the
    # event loop of every fetch. A context holds no per-connection state.
    return httpx.create_ssl_context(verify=verify, trust_env=False)


async def _send(transport: PinnedTransport, request: httpx.Request) -> httpx.Response:
    try:
        response = await transport.handle_async_request(request)
    except httpx.TransportError as exc:
        raise ToolFailed(
            f"cannot fetch {request.url}: {exc or type(exc).__name__}",
            data={"url": str(request.url), "reason": "network"},
        ) from None
    response.request = request
    return response


async def _read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    url = str(response.url)
    decoder = BodyDecoder(response.headers.get("content-encoding", ""), url=url)
    chunks: list[bytes] = []
    size = 0
    stream = response.stream
    assert isinstance(stream, httpx.AsyncByteStream)
    try:
        async for raw in stream:
            # One byte past the limit is enough to know the body was cut.
            chunk = decoder.decode(raw, limit + 1 - size)
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                # Stop here: the rest of the body is never read off the connection.
                return b"".join(chunks)[:limit], True
    except httpx.HTTPError as exc:
        raise ToolFailed(
            f"reading {url} failed: {exc or type(exc).__name__}",
            data={"url": url, "reason": "network"},
        ) from None
    finally:
        await response.aclose()
    return b"".join(chunks), False


def _request_headers(headers: Mapping[str, str]) -> httpx.Headers:
    merged = httpx.Headers(_DEFAULT_HEADERS)
    merged.update(headers)  # case-insensitive: a model's "accept" replaces "Accept"
    return merged


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _merge_headers(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    bad = sorted(
        name
        for name in extra
        if name.lower() in _RESERVED_HEADERS or name.lower().startswith("proxy-")
    )
    if bad:
        raise RetryWithFeedback(f"these headers are set by the tool and may not be given: {bad}")
    # HTTP refuses these on the wire (h11 raises): the model's mistake, said before sending.
    illegal = sorted(name for name in extra if not _TOKEN.fullmatch(name))
    if illegal:
        raise RetryWithFeedback(
            f"these are not header names (letters, digits and !#$%&'*+-.^_`|~ only): {illegal}"
        )
    broken = sorted(name for name, value in extra.items() if _CONTROL.search(value))
    if broken:
        raise RetryWithFeedback(f"these headers' values hold control characters: {broken}")
    merged = dict(base)
    merged.update(extra)
    return merged


def _join(url: httpx.URL, location: str) -> httpx.URL:
    try:
        return url.join(location)
    except httpx.InvalidURL as exc:
        raise ToolFailed(
            f"{url} redirected to an invalid URL {location!r}: {exc}",
            data={"url": str(url), "reason": "redirect_target"},
        ) from None


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def _refuse_binary(url: str, content_type: str) -> NoReturn:
    raise ToolFailed(
        f"{url} returned binary content ({content_type}); call again with raw=true "
        "to receive it base64-encoded",
        data={"url": url, "reason": "binary", "content_type": content_type},
    )
