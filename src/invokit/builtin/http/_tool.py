"""``http(...)``: the toolset holding one ``http.fetch`` tool over a guarded :class:`Fetcher`."""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from invokit.builtin.http._guard import Resolver, UrlGuard, system_resolver
from invokit.builtin.http._result import FetchResult
from invokit.exceptions import InvalidToolDefinition, MissingExtra
from invokit.permissions import NetworkAccess, PermissionRequest
from invokit.registry import ToolRegistry
from invokit.tools import ToolContext, tool

if TYPE_CHECKING:
    from invokit.builtin.http._fetch import Fetcher

__all__ = ["http"]

# The fetcher's own deadline fires first with a clear message; the executor's is a backstop.
_EXECUTOR_MARGIN = 5.0
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_IDEMPOTENT_METHODS = _SAFE_METHODS | {"PUT", "DELETE"}
_KNOWN_METHODS = _IDEMPOTENT_METHODS | {"POST", "PATCH"}
USER_AGENT = "invokit-http-fetch/0.1 (+https://github.com/invokit/invokit)"

# Size caps, in the schema so that the executor refuses an oversized call as invalid
# arguments before any parsing: the URL, the headers (count, name, value) and the body.
MAX_URL_CHARS = 16_384
MAX_HEADERS = 64
MAX_HEADER_NAME_CHARS = 256
MAX_HEADER_VALUE_CHARS = 8_192
MAX_BODY_CHARS = 1_000_000

UrlArg = Annotated[
    str, Field(max_length=MAX_URL_CHARS, description="The http:// or https:// URL to fetch.")
]
HeadersArg = Annotated[
    Annotated[
        dict[
            Annotated[str, Field(max_length=MAX_HEADER_NAME_CHARS)],
            Annotated[str, Field(max_length=MAX_HEADER_VALUE_CHARS)],
        ],
        Field(max_length=MAX_HEADERS),
    ]
    | None,
    Field(description="Extra request headers (not Host or Content-Length)."),
]
MethodArg = Annotated[
    str,
    Field(
        max_length=16, description="The HTTP method; the tool's description lists those allowed."
    ),
]
BodyArg = Annotated[
    Annotated[str, Field(max_length=MAX_BODY_CHARS)] | None,
    Field(description="Request body text, for methods that send one."),
]
RawArg = Annotated[
    bool,
    Field(
        description="Return the body as it came: HTML unconverted, binary content base64-encoded."
    ),
]


def http(
    *,
    allow_hosts: Iterable[str] | None = None,
    methods: Iterable[str] = ("GET",),
    max_bytes: int = 1_000_000,
    timeout: float = 30.0,
    max_redirects: int = 5,
    allow_private: bool = False,
    allow_networks: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    verify: ssl.SSLContext | bool = True,
    resolver: Resolver | None = None,
    name: str = "http.fetch",
) -> ToolRegistry:
    """A toolset with one tool that fetches http(s) URLs behind an SSRF guard.

    Every hop (the URL and each redirect) is checked: http or https only, no credentials in
    the URL, the host in ``allow_hosts``, and every address the name resolves to public;
    the connection then goes to the address that was checked, never to a second lookup.
    The executor's policy decides the first URL; each redirect target is asked of it again
    (``ToolContext.permits``), so a deny rule on a host holds through redirects.

    Args:
        allow_hosts: host name globs (``"*.example.com"``); other hosts are refused before
            any DNS lookup. ``None`` allows any public host.
        methods: HTTP methods the model may use; others are refused (``AccessDenied``).
        max_bytes: most body bytes read; the rest is cut off and the result says so.
        timeout: seconds for the whole fetch, redirects and body included.
        max_redirects: most redirects followed.
        allow_private: reach loopback, private and link-local addresses too. For tests and
            local tools only: it turns the SSRF guard off.
        allow_networks: non-public ranges (CIDR) to allow anyway, such as one intranet API.
        headers: headers sent with every request, e.g. an API key for an allowed host.
        verify: TLS verification: ``True`` (certifi roots), ``False``, or an SSL context.
        resolver: an async ``(host, port) -> addresses`` function used instead of the system
            resolver (a DNS-over-HTTPS client, or fixed answers in tests).
        name: the tool's name.

    Raises:
        InvalidToolDefinition: an unknown method or an unusable limit.
        MissingExtra: httpx is not installed (``pip install "invokit[http]"``).
    """
    try:
        import httpx  # noqa: F401 - only to fail early and clearly
    except ImportError:
        raise MissingExtra(name, "http") from None
    from invokit.builtin.http._fetch import Fetcher  # here: it imports httpx

    allowed = tuple(dict.fromkeys(method.upper() for method in methods))
    unknown = sorted(set(allowed) - _KNOWN_METHODS)
    if not allowed or unknown:
        raise InvalidToolDefinition(
            f"methods must be some of {sorted(_KNOWN_METHODS)}", unknown or allowed, tool=name
        )
    if max_bytes <= 0 or timeout <= 0 or max_redirects < 0:
        raise InvalidToolDefinition(
            "max_bytes and timeout must be positive, max_redirects not negative", tool=name
        )
    try:
        guard = UrlGuard(
            allow_hosts=None if allow_hosts is None else tuple(allow_hosts),
            allow_private=allow_private,
            allow_networks=tuple(allow_networks),
            resolver=resolver or system_resolver,
        )
    except ValueError as exc:
        raise InvalidToolDefinition(f"bad allow_networks entry: {exc}", tool=name) from None
    fetcher = Fetcher(
        guard=guard,
        methods=allowed,
        max_bytes=max_bytes,
        timeout=timeout,
        max_redirects=max_redirects,
        headers={"User-Agent": USER_AGENT, **(headers or {})},
        verify=verify,
    )
    read_only = set(allowed) <= _SAFE_METHODS

    def permissions(args: Mapping[str, Any]) -> Iterable[PermissionRequest]:
        # A fetch that would be refused is refused now, before anyone is asked about it.
        _, method, _ = fetcher.precheck(
            args["url"],
            method=args.get("method", "GET"),
            headers=args.get("headers"),
            body=args.get("body"),
        )
        return [NetworkAccess(url=args["url"], method=method)]

    @tool(
        name=name,
        description=_description(fetcher, guard),
        read_only=read_only,
        destructive=not read_only,
        idempotent=set(allowed) <= _IDEMPOTENT_METHODS,
        open_world=True,
        tags=("http", "network"),
        category="network",
        timeout=timeout + _EXECUTOR_MARGIN,
        permissions=permissions,
        metadata={
            "methods": list(allowed),
            "allow_hosts": None if guard.allow_hosts is None else list(guard.allow_hosts),
            "allow_private": allow_private,
            "max_bytes": max_bytes,
        },
    )
    async def fetch(
        url: UrlArg,
        method: MethodArg = "GET",
        headers: HeadersArg = None,
        body: BodyArg = None,
        raw: RawArg = False,
        *,
        ctx: ToolContext,
    ) -> FetchResult:
        def permits(target: str, verb: str) -> bool:
            # The person who approved this call saw its URL, not where it redirects to.
            return ctx.permits(NetworkAccess(url=target, method=verb), approval_covers=False)

        return await fetcher.fetch(
            url, method=method, headers=headers, body=body, raw=raw, permits=permits
        )

    return ToolRegistry([fetch])


def _description(fetcher: Fetcher, guard: UrlGuard) -> str:
    hosts = (
        f" Only these hosts may be fetched: {', '.join(guard.allow_hosts)}."
        if guard.allow_hosts is not None
        else ""
    )
    private = (
        " Local and private network addresses are reachable."
        if guard.allow_private
        else " Local, private and cloud-metadata addresses are refused."
    )
    return (
        f"Fetch an http(s) URL with {' or '.join(fetcher.methods)} and return its status, final "
        "URL and body as text: HTML is converted to readable text with links kept (pass "
        "raw=true for the markup; binary bodies need raw=true and come back base64-encoded). "
        f"Redirects are followed (at most {fetcher.max_redirects}); bodies are cut at "
        f"{fetcher.max_bytes} bytes and the result says when; the whole fetch times out after "
        f"{fetcher.timeout:g} s.{hosts}{private}"
    )
