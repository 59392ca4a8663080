"""A remote MCP server's tools as an invokit registry: ``MCPToolset``.

Each remote tool is listed as ``prefix.name`` and every call goes through the local executor
with an ``McpInvoke(server, tool)`` permission request, so local policy and approvals apply to
remote tools. A server's tools are pinned when it is first listed (:class:`PinStore`); a tool the
server changed since, or added since, is hidden until trusted. Connecting and each call have time limits, and a toolset
reconnects after its server restarts.

A server that asks for OAuth (the MCP authorization spec) is signed in to with ``oauth=``: until
a person signs in, the toolset connects without its tools (:attr:`MCPToolset.authorization`
names the sign-in) and its calls end as ``AuthRequired``; resuming with the redirect's code
finishes the sign-in and runs the call; tokens are kept in the state store and refreshed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError

from invokit._calls import ToolResult
from invokit._spec import ToolName
from invokit.exceptions import AuthRequired, InvalidToolDefinition, ToolFailed
from invokit.execution.internal import current_span_of, outgoing_meta
from invokit.mcp._convert import error_kind_of, parts_from_mcp, spec_from_mcp
from invokit.mcp._errors import MCPConnectionError
from invokit.mcp._listing import list_tools_page
from invokit.mcp._pins import PinStorage, PinStore, remote_fingerprint
from invokit.mcp._remote import RemoteTool
from invokit.mcp._signin import MCPOAuth, SignIn
from invokit.mcp._stdio_client import MAX_MESSAGE_BYTES, bounded_stdio_client
from invokit.registry import Registry
from invokit.registry.internal import Listener
from invokit.tools import ToolContext

logger = logging.getLogger("invokit.mcp")

Transport = Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]
"""Opens a connection: an async context manager giving the SDK's (read, write) streams."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChangedTool:
    """A remote tool hidden until trusted: it differs from the version that was trusted, or
    the server added it after its tools were first trusted (``pinned`` is ``None``)."""

    server: str
    tool: str
    """Its name on the server."""
    name: str
    """Its name in this toolset (``prefix.tool``)."""
    pinned: str | None
    """The trusted fingerprint; ``None`` for a tool added since the server was trusted."""
    current: str
    """The fingerprint the server lists now; trust it with ``toolset.trust(name)``."""


@dataclass(kw_only=True, slots=True)
class _Listing:
    """What one listing of the server's tools became, built off the event loop."""

    tools: dict[str, RemoteTool] = field(default_factory=dict)
    by_remote: dict[str, RemoteTool] = field(default_factory=dict)
    changed: dict[str, ChangedTool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class MCPToolset(Registry):
    """The tools of one MCP server, namespaced ``prefix.name``.

    Use :meth:`stdio` or :meth:`http` to make one, then ``async with toolset:`` (or
    :meth:`connect` and :meth:`aclose`). Until connected it lists nothing.

    Args:
        transport: opens the connection (see :meth:`stdio` and :meth:`http`).
        prefix: the namespace of the tools here.
        server: the server's name for pins and ``McpInvoke`` requests (default ``prefix``).
        pins: where trusted fingerprints live; default ``mcp-pins.json`` in the state dir.
        connect_timeout: seconds to start the server, initialize and list its tools.
        call_timeout: seconds one call may take.
        max_schema_chars: a tool whose input or output schema is larger (as JSON) is left out.
        max_description_chars: longer descriptions are cut.
        sign_in: the OAuth client of a server that asks for sign-in (see :meth:`http`).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        prefix: str,
        server: str | None = None,
        pins: PinStorage | None = None,
        connect_timeout: float = 10.0,
        call_timeout: float = 60.0,
        max_schema_chars: int = 32_000,
        max_description_chars: int = 4_000,
        sign_in: SignIn | None = None,
    ) -> None:
        self.prefix = str(ToolName(prefix))
        self.server = server or self.prefix
        self.pins: PinStorage = pins if pins is not None else PinStore()
        self.connect_timeout = connect_timeout
        self.call_timeout = call_timeout
        self.max_schema_chars = max_schema_chars
        self.max_description_chars = max_description_chars
        self._transport = transport
        self._sign_in = sign_in
        self._tools: dict[str, RemoteTool] = {}
        self._by_remote: dict[str, RemoteTool] = {}
        self._names: tuple[str, ...] = ()
        self._changed: dict[str, ChangedTool] = {}
        self.problems: list[str] = []
        """Tools left out, and why (a bad name, an oversized schema)."""
        self._listeners: list[Listener] = []
        self._group: anyio.abc.TaskGroup | None = None
        self._session: ClientSession | None = None
        self._stop: anyio.Event | None = None
        self._lock: anyio.Lock | None = None
        self._refresh_wanted: anyio.Event | None = None

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        prefix: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        server: str | None = None,
        pins: PinStorage | None = None,
        connect_timeout: float = 10.0,
        call_timeout: float = 60.0,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> MCPToolset:
        """A server started as a subprocess (``command args``) speaking MCP on stdio.

        A message from the server longer than ``max_message_bytes`` (64 MiB by default) ends
        the connection and the server process: the call in flight fails as ``unavailable``
        and the next call starts the server again.
        """
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env is not None else None, cwd=cwd
        )
        return cls(
            lambda: bounded_stdio_client(params, max_message_bytes=max_message_bytes),
            prefix=prefix,
            server=server,
            pins=pins,
            connect_timeout=connect_timeout,
            call_timeout=call_timeout,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        prefix: str,
        headers: Mapping[str, str] | None = None,
        bearer_token: str | None = None,
        oauth: MCPOAuth | None = None,
        server: str | None = None,
        pins: PinStorage | None = None,
        connect_timeout: float = 10.0,
        call_timeout: float = 60.0,
    ) -> MCPToolset:
        """A server at ``url`` speaking streamable HTTP (optional headers or bearer token).

        With ``oauth``, a server that answers 401 is signed in to as the MCP authorization
        spec says (PKCE, tokens in the state store, refreshed when they expire); a person's
        part ends calls as ``AuthRequired`` (see :attr:`authorization`).
        """
        if oauth is not None and bearer_token is not None:
            raise ValueError("give a bearer_token or oauth, not both")
        sign_in = SignIn(url, oauth) if oauth is not None else None
        sent = dict(headers or {})
        if bearer_token is not None:
            sent["Authorization"] = f"Bearer {bearer_token}"

        @asynccontextmanager
        async def connect() -> AsyncIterator[tuple[Any, Any]]:
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with (
                create_mcp_http_client(headers=sent, auth=sign_in) as client,
                streamable_http_client(url, http_client=client) as streams,
            ):
                yield streams

        return cls(
            connect,
            prefix=prefix,
            server=server or prefix,
            pins=pins,
            connect_timeout=connect_timeout,
            call_timeout=call_timeout,
            sign_in=sign_in,
        )

    # -- the registry ---------------------------------------------------------------------

    def names(self) -> tuple[str, ...]:
        return self._names

    def get(self, name: str) -> RemoteTool | None:
        found = self._tools.get(name)
        if found is None or found.remote_name in self._changed:
            return None
        return found

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def describe(self) -> str:
        return f"MCP server {self.server!r}"

    def is_hidden(self, remote_name: str) -> bool:
        """Whether this tool waits to be trusted (changed or added since the server was)."""
        return remote_name in self._changed

    def changed(self) -> list[ChangedTool]:
        """The tools hidden until trusted: changed since they were trusted, or added by the
        server since its tools were first trusted."""
        return [self._changed[k] for k in sorted(self._changed)]

    def trust(self, name: str) -> None:
        """Trust the tool's current version (local or remote name) and show it again."""
        remote = name[len(self.prefix) + 1 :] if name.startswith(self.prefix + ".") else name
        found = self._by_remote.get(remote)
        if found is None:
            raise KeyError(f"MCP server {self.server!r} lists no tool {remote!r}")
        self.pins.trust(self.server, remote, found.fingerprint)
        if self._changed.pop(remote, None) is not None:
            self._show_trusted()

    def _show_trusted(self) -> None:
        changed = self._changed
        self._names = tuple(
            sorted(n for n, t in self._tools.items() if t.remote_name not in changed)
        )
        self._notify()

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    # -- connection -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def connect(self) -> None:
        """Start or reach the server, initialize, and list its tools.

        A server waiting for a person to sign in is not a failure: the toolset lists nothing
        yet, :attr:`authorization` names the sign-in, and :meth:`sign_in` finishes it.

        Raises:
            MCPConnectionError: it did not start, failed, or did not answer within
                ``connect_timeout`` seconds.
        """
        if self._group is None:
            self._lock = anyio.Lock()
            self._refresh_wanted = anyio.Event()
            group = anyio.create_task_group()
            await group.__aenter__()
            self._group = group
            group.start_soon(self._refresher)
        try:
            await self._reconnect()
        except MCPConnectionError:
            if self.authorization is None:
                await self.aclose()
                raise
        except BaseException:
            await self.aclose()
            raise

    @property
    def authorization(self) -> AuthRequired | None:
        """The sign-in the server waits for (its ``challenge`` has the ``authorization_url``
        for the person), or ``None``."""
        if self._sign_in is None or self._sign_in.needed is None:
            return None
        return self._sign_in.required(self.server)

    async def sign_in(self, credentials: Mapping[str, Any]) -> None:
        """Finish a sign-in with the person's answer and list the server's tools.

        Args:
            credentials: ``{"callback_url": <the URL the issuer sent the person to>}``, or
                its ``code`` and ``state``.

        Raises:
            ToolFailed: the answer is not for a sign-in this host started.
            AuthRequired: the server still wants a sign-in.
            MCPConnectionError: the server could not be reached.
        """
        if self._sign_in is None:
            raise ValueError(f"MCP server {self.server!r} has no OAuth sign-in (oauth=...)")
        await self._sign_in.answer(credentials)
        if self._group is None:
            await self.connect()
        else:
            await self._reconnect()
        if (needed := self.authorization) is not None:
            raise needed

    async def aclose(self) -> None:
        """Close the connection (a stdio server process is stopped)."""
        group, self._group = self._group, None
        self._session = None
        if group is None:
            return
        group.cancel_scope.cancel()
        # Shield the group's own scope (a new scope around it would break the nesting order)
        # so an outer cancellation cannot interrupt the teardown of the connection.
        group.cancel_scope.shield = True
        await group.__aexit__(None, None, None)

    async def _reconnect(self) -> ClientSession:
        assert self._group is not None and self._lock is not None
        async with self._lock:
            if self._session is not None:
                return self._session
            if self._stop is not None:
                self._stop.set()
            stop = self._stop = anyio.Event()
            ready = anyio.Event()
            failure: list[BaseException] = []
            scope = anyio.CancelScope()
            self._group.start_soon(self._connection, scope, stop, ready, failure)
            with anyio.move_on_after(self.connect_timeout) as waited:
                await ready.wait()
            if waited.cancelled_caught:
                scope.cancel()
                raise MCPConnectionError(
                    self.server, f"no answer within {self.connect_timeout:g} s of connecting"
                )
            session = self._session
            if session is None:
                cause = failure[0] if failure else None
                raise MCPConnectionError(
                    self.server, f"could not connect: {_describe(cause)}"
                ) from cause
            with anyio.move_on_after(self.connect_timeout) as listing:
                await self._list(session)
            if listing.cancelled_caught:
                scope.cancel()
                self._session = None
                raise MCPConnectionError(
                    self.server, f"tools/list got no answer within {self.connect_timeout:g} s"
                )
            return session

    async def _connection(
        self,
        scope: anyio.CancelScope,
        stop: anyio.Event,
        ready: anyio.Event,
        failure: list[BaseException],
    ) -> None:
        """Owns one connection: opens it, holds it until told to stop, records what broke it."""
        session: ClientSession | None = None
        with scope:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport())
                    session = await stack.enter_async_context(
                        ClientSession(read, write, message_handler=self._on_message)
                    )
                    await session.initialize()
                    self._session = session
                    ready.set()
                    await stop.wait()
            except Exception as exc:  # a broken connection is reported, never crashes the host
                failure.append(exc)
                logger.debug("MCP connection to %s ended: %r", self.server, exc)
            finally:
                if self._session is session:
                    self._session = None
                ready.set()

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self._refresh_wanted:
            self._refresh_wanted.set()

    async def _refresher(self) -> None:
        """Re-lists the tools when the server says its list changed."""
        while True:
            assert self._refresh_wanted is not None
            await self._refresh_wanted.wait()
            self._refresh_wanted = anyio.Event()
            session = self._session
            if session is None:
                continue
            try:
                with anyio.fail_after(self.connect_timeout):
                    await self._list(session)
            except Exception as exc:  # the old list stays until the next change or reconnect
                logger.warning("re-listing the tools of %s failed: %r", self.server, exc)

    async def refresh(self) -> None:
        """List the server's tools again (pins are checked again)."""
        session = self._session or await self._reconnect()
        await self._list(session)

    async def _list(self, session: ClientSession) -> None:
        listed: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await list_tools_page(session, params)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        await self._adopt(listed)

    async def _adopt(self, listed: list[types.Tool]) -> None:
        # Converting, fingerprinting, compiling validators and writing the pins file is work
        # linear in the listing, done in a worker thread so the event loop keeps serving.
        plan = await anyio.to_thread.run_sync(self._plan, listed)
        self._tools, self._by_remote, self._changed = plan.tools, plan.by_remote, plan.changed
        self.problems = plan.problems
        self._show_trusted()

    def _plan(self, listed: list[types.Tool]) -> _Listing:
        plan = _Listing()
        pinned = self.pins.snapshot(self.server)
        # The first listing of a server is its first trust: every tool is pinned. After
        # that, a tool the server adds is as unknown as a changed one, and waits the same way.
        first_trust = not pinned
        new_pins: dict[str, str] = {}
        for remote in listed:
            tool = self._convert(remote, plan.problems)
            if tool is None:
                continue
            known = pinned.get(remote.name)
            if known is None and first_trust:
                new_pins[remote.name] = tool.fingerprint
            elif known is None:
                plan.changed[remote.name] = ChangedTool(
                    server=self.server,
                    tool=remote.name,
                    name=tool.name,
                    pinned=None,
                    current=tool.fingerprint,
                )
                logger.warning(
                    "MCP server %s added tool %r after it was trusted; hidden until trusted "
                    "(invokit mcp trust)",
                    self.server,
                    remote.name,
                )
            elif known != tool.fingerprint:
                plan.changed[remote.name] = ChangedTool(
                    server=self.server,
                    tool=remote.name,
                    name=tool.name,
                    pinned=known,
                    current=tool.fingerprint,
                )
                logger.warning(
                    "MCP server %s changed tool %r since it was trusted; hidden until trusted "
                    "again (invokit mcp trust)",
                    self.server,
                    remote.name,
                )
            plan.tools[tool.name] = tool
            plan.by_remote[remote.name] = tool
        if new_pins:
            self.pins.trust_many(self.server, new_pins)  # one atomic write for the listing
        return plan

    def _convert(self, remote: types.Tool, problems: list[str]) -> RemoteTool | None:
        """``remote`` as a local tool, or ``None`` (and a problem noted) if it is left out."""
        wire = remote.model_dump(by_alias=True, mode="json", exclude_none=True)
        fingerprint = remote_fingerprint(wire)
        local = f"{self.prefix}.{remote.name}"
        too_big = max(
            len(json.dumps(wire.get("inputSchema"))), len(json.dumps(wire.get("outputSchema")))
        )
        if too_big > self.max_schema_chars:
            problems.append(
                f"{remote.name}: schema of {too_big} characters is over the cap of "
                f"{self.max_schema_chars}; left out"
            )
            return None
        try:
            spec = spec_from_mcp(remote, name=local)
        except InvalidToolDefinition as exc:
            problems.append(f"{remote.name}: {exc}; left out")
            return None
        if len(spec.description) > self.max_description_chars:
            spec = spec.with_description(
                spec.description[: self.max_description_chars] + " [description cut]"
            )
        # Set here, after conversion: the server's own _meta never reaches these keys.
        # Policy reads mcp_server to treat the hints as claims, and standing rules bind to
        # mcp_fingerprint (the pinned version).
        spec = spec.with_timeout(self.call_timeout).with_metadata(
            mcp_server=self.server, mcp_tool=remote.name, mcp_fingerprint=fingerprint
        )
        tool = RemoteTool(self, spec, remote.name, fingerprint)
        try:
            # Compiled now: a schema that cannot be (a remote or dangling $ref) leaves the tool
            # out here instead of failing its first call.
            tool.validator  # noqa: B018
        except InvalidToolDefinition as exc:
            logger.warning("MCP server %s: tool %r left out: %s", self.server, remote.name, exc)
            problems.append(f"{remote.name}: {exc}; left out")
            return None
        return tool

    # -- calls ----------------------------------------------------------------------------

    async def call(self, remote_name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Call ``remote_name`` with validated ``args``; errors become ``ToolFailed``."""
        tool = self._by_remote.get(remote_name)
        retry_safe = tool is not None and bool(
            tool.spec.annotations.read_only or tool.spec.annotations.idempotent
        )

        async def forward(progress: float, total: float | None, message: str | None) -> None:
            await ctx.report_progress(progress, total, message)

        if ctx.credentials and self._sign_in is not None:
            # A call resumed after the person signed in: its next request finishes the flow.
            await self._sign_in.answer(ctx.credentials)
        for attempt in (1, 2):
            try:
                session = self._session or await self._reconnect()
            except MCPConnectionError as exc:
                if (needed := self.authorization) is not None:
                    raise needed from exc
                raise ToolFailed(str(exc), kind="unavailable") from exc
            try:
                # The call's span is current while the request goes out: the SDK's client
                # span nests under it, and the server's span joins this trace (``_meta``).
                with current_span_of(ctx.call):
                    result = await session.call_tool(
                        remote_name,
                        args,
                        read_timeout_seconds=self.call_timeout,
                        progress_callback=forward,
                        meta=_trace_meta(ctx),
                    )
            except MCPError as exc:
                if exc.code == types.REQUEST_TIMEOUT:
                    raise ToolFailed(
                        f"MCP server {self.server!r} did not answer {remote_name!r} within "
                        f"{self.call_timeout:g} s",
                        kind="timeout",
                    ) from exc
                if exc.code != types.CONNECTION_CLOSED:
                    raise ToolFailed(
                        f"MCP server {self.server!r} refused the call: {exc.message}",
                        kind="remote_error",
                    ) from exc
                self._drop(session)
                if (needed := self.authorization) is not None:
                    raise needed from exc  # the token ran out and could not be refreshed
                if attempt == 1 and retry_safe:
                    continue  # a read-only or idempotent call may simply run again
                raise ToolFailed(
                    f"The connection to MCP server {self.server!r} was lost during the call; it "
                    "may or may not have run. The next call reconnects.",
                    kind="unavailable",
                ) from exc
            except RuntimeError as exc:  # the SDK's check of structured output against the schema
                raise ToolFailed(str(exc), kind="remote_error") from exc
            return _to_result(remote_name, result)
        raise AssertionError("unreachable")  # pragma: no cover

    def _drop(self, session: ClientSession) -> None:
        if self._session is session:
            self._session = None
        if self._stop is not None:
            self._stop.set()


def _trace_meta(ctx: ToolContext) -> types.RequestParamsMeta | None:
    """The trace context (``traceparent``, ``tracestate``) for the request's ``_meta``: the
    span of this call, so the server's span joins the caller's trace; ``None`` untraced."""
    carrier = outgoing_meta(ctx.call)
    return None if carrier is None else types.RequestParamsMeta(**carrier)  # type: ignore[typeddict-item]


def _to_result(name: str, result: types.CallToolResult) -> ToolResult:
    parts = parts_from_mcp(result.content)
    if result.is_error:
        message = (
            "\n".join(p.text for p in parts if hasattr(p, "text")) or "The remote tool failed."
        )
        raise ToolFailed(message, kind=error_kind_of(result))
    return ToolResult(
        call_id="",
        name=name,
        content=parts,
        structured=result.structured_content,
    )


def _describe(exc: BaseException | None) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if exc is None:
        return "the connection closed"
    return f"{type(exc).__name__}: {exc}"
