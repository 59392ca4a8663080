"""Running the MCP server: over stdio, or streamable HTTP bound to loopback."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from typing import Any, Literal

import anyio

from invokit.approvals import DEFAULT_LEASE
from invokit.execution import Executor
from invokit.mcp._oauth_config import OAuthConfig
from invokit.mcp._server import DEFAULT_PAGE_SIZE, build_server
from invokit.registry import Registry

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


async def serve(
    registry: Registry,
    executor: Executor,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    name: str = "invokit",
    allowed_origins: Sequence[str] = (),
    ready: Callable[[str], None] | None = None,
    token: str | None = None,
    heartbeat: float = 5.0,
    page_size: int = DEFAULT_PAGE_SIZE,
    approval_wait: float = 0.0,
    auth: OAuthConfig | None = None,
    approval_lease: float = DEFAULT_LEASE,
    inbox: Callable[[Sequence[str], Sequence[str]], Any] | None = None,
) -> None:
    """Serve ``registry`` through ``executor`` as an MCP server until cancelled.

    Cancelling it (Ctrl-C in a CLI) shuts down cleanly: calls in flight are cancelled, the
    approvals they were waiting on are withdrawn, and other pending approvals stay valid in the
    executor's store.

    Args:
        registry: the tools to list.
        executor: runs every call (policy, approvals, limits, audit).
        transport: ``stdio`` (launched by a desktop client) or ``http`` (streamable HTTP).
        host: the address HTTP binds to; loopback by default. The ``Host`` and ``Origin``
            headers of every request are checked against it (DNS-rebinding protection).
        port: the HTTP port; ``0`` picks a free one (``ready`` receives the real URL).
        name: the server name clients see.
        allowed_origins: more browser origins allowed to call the HTTP server
            (``https://app.example``); the server's own origin is always allowed.
        ready: called once serving, with the URL (``http://127.0.0.1:8765/mcp``) or ``stdio``.
        token: over HTTP, a secret every request must carry (``Authorization: Bearer TOKEN``
            or ``?token=TOKEN``); other local users and processes are turned away with 401.
        heartbeat: seconds between progress notifications sent while a call waits for a
            person (to a client that sent a progress token), so its timeout does not expire.
        page_size: the most tools one ``tools/list`` page holds (clients follow ``nextCursor``).
        approval_wait: seconds a call that nobody here can ask about (no inline approver,
            no elicitation) waits for a decision made elsewhere (``invokit approvals``, any
            replica) before it answers "approval required"; ``0`` answers at once.
        auth: over HTTP, serve as an OAuth 2.1 resource server instead of with ``token``:
            every request needs an access token from ``auth.issuer`` for this server, and
            the caller's issuer and subject scope its approvals, grants and audit records.
        approval_lease: seconds of the lease a call waiting for a person holds on its
            question in the store, renewed every third of that while its client is
            connected: a question whose lease runs out (its client or this server went away)
            is withdrawn in every process that shares the store. ``0`` holds none.
        inbox: over HTTP, makes the ASGI app served under ``/inbox`` (the approval inbox,
            which signs its people in itself) from the ``Host`` values and origins the
            server answers to.
    """
    if auth is not None and token is not None:
        raise ValueError("give a token or auth, not both")
    server = build_server(
        registry,
        executor,
        name=name,
        heartbeat=heartbeat,
        page_size=page_size,
        approval_wait=approval_wait,
        approval_lease=approval_lease,
    )
    if transport == "stdio":
        from invokit.mcp._stdio import stdio_streams

        async with stdio_streams() as (read, write):
            if ready is not None:
                ready("stdio")
            await server.run(read, write, server.create_initialization_options())
        return
    if transport != "http":
        raise ValueError(f"transport must be 'stdio' or 'http', not {transport!r}")
    await _serve_http(server, host, port, tuple(allowed_origins), ready, token, auth, name, inbox)


def security_settings(host: str, port: int, allowed_origins: Sequence[str] = ()) -> Any:
    """Host and Origin checks for a server listening on ``host:port``."""
    from mcp.server.transport_security import TransportSecuritySettings

    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = [shown]
    if shown in _LOOPBACK_NAMES:
        names = list(_LOOPBACK_NAMES)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:{port}" for n in names],
        allowed_origins=[f"http://{n}:{port}" for n in names] + list(allowed_origins),
    )


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (``[::1]`` style IPv6 allowed), not yet listening.

    ``IPPROTO_TCP`` is said outright: asyncio turns Nagle off (``TCP_NODELAY``) only on sockets
    whose protocol reads as TCP, and accepted sockets inherit it. With protocol 0 an SSE event
    written after the response headers waited for the client's delayed ACK: 40 ms a call.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


async def _serve_http(
    server: Any,
    host: str,
    port: int,
    allowed_origins: tuple[str, ...],
    ready: Callable[[str], None] | None,
    token: str | None = None,
    auth: OAuthConfig | None = None,
    name: str = "invokit",
    inbox: Callable[[Sequence[str], Sequence[str]], Any] | None = None,
) -> None:
    import uvicorn

    from invokit.mcp._http_app import http_app

    sock = listening_socket(host, port)
    family = sock.family
    bound = sock.getsockname()[1]
    app: Any
    security = security_settings(host, bound, allowed_origins)
    app, sessions = http_app(server, security=security)
    shown = f"[{host}]" if family == socket.AF_INET6 and not host.startswith("[") else host
    url = f"http://{shown}:{bound}/mcp"
    if token is not None:
        from invokit.mcp._auth import TokenGate

        app = TokenGate(app, token)
    elif auth is not None:
        from invokit.mcp._resource_server import ResourceServerGate

        app = ResourceServerGate(app, auth, resource=auth.audience or url, name=name)
    if inbox is not None:
        from invokit.inbox import WithInbox

        # In front of the gate: the inbox signs people in with cookies, not bearer tokens.
        page = inbox(security.allowed_hosts, security.allowed_origins)
        if page is not None:
            app = WithInbox(app, page)
    # log_config=None: uvicorn's records go to the process's own logging (the command line
    # renders them inert), not to a handler of its own that writes them raw.
    config = uvicorn.Config(
        app,
        log_level="warning",
        log_config=None,
        lifespan="on",
        timeout_graceful_shutdown=3,
        access_log=False,
    )
    http = uvicorn.Server(config)
    done = anyio.Event()

    async def run() -> None:
        # Shielded: uvicorn shuts down when told to (should_exit), not by a cancelled await in
        # the middle of its loop, so sessions close and the socket is released.
        with anyio.CancelScope(shield=True):
            try:
                await http.serve(sockets=[sock])
            finally:
                done.set()

    async def stop_waiting() -> None:
        # uvicorn says it is stopping with a flag only. Answers still waiting to go back as
        # JSON become SSE streams then, which end on it, as the SDK's own streams do, before
        # the graceful timeout cancels them with a traceback.
        with anyio.CancelScope(shield=True):
            while not http.should_exit and not done.is_set():  # noqa: ASYNC110
                await anyio.sleep(0.1)
            sessions.stop_waiting()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            group.start_soon(stop_waiting)
            try:
                # uvicorn has no "started" event to wait on, only a flag.
                while not http.started and not done.is_set():  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                if http.started and ready is not None:
                    ready(url)
                await done.wait()
            finally:
                http.should_exit = True
    finally:
        sock.close()
