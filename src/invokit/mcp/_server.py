"""An invokit registry served as an MCP server, every call through the executor.

Built on the SDK's low-level ``Server``: ``tools/list`` comes from the registry (sorted, cached
and rebuilt only when the registry changes, with ``notifications/tools/list_changed`` sent to
every connected client); ``tools/call`` runs ``executor.execute`` and answers with the result,
errors included as ``isError`` results. Approvals are asked through elicitation when the client
can; otherwise the call answers with an error that names the approval id and only what can work
to approve it (which depends on the approval store). An approval is tied to its live caller: a
call cancelled while it waits for a person (``notifications/cancelled``, a timeout, a closed
connection, the server stopping) withdraws its pending requests, and while a person decides a
client that sent a progress token receives heartbeat progress notifications.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions

from invokit._calls import ToolCall, ToolResult
from invokit._spec import ToolSpec
from invokit.approvals import ApprovalRequest
from invokit.exceptions import ApprovalError
from invokit.execution import ApprovalRequired, Executor, Interrupted, Outcome
from invokit.execution._children import parent_of
from invokit.mcp._convert import OutputShape, error_dict, result_dict, tool_dict
from invokit.mcp._elicit import (
    REQUESTED_SCHEMA,
    approval_question,
    approval_reach,
    pending_message,
    read_answer,
)
from invokit.registry import Registry
from invokit.tools import Progress

logger = logging.getLogger("invokit.mcp")

_SESSION_STATE = "invokit.session_id"
Context = Any
"""The SDK's ``ServerRequestContext`` (its generic parameters add nothing here)."""


class _InvokitServer(Server[dict[str, Any]]):
    """The SDK server, announcing ``tools.listChanged`` on every transport."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


class ToolServer:
    """The handlers behind :func:`build_server`: listing, calling, approvals, change notices.

    Args:
        registry: the tools to list (their calls are looked up in ``executor.registry``).
        executor: runs every call; its policy, approvals and limits apply.
    """

    def __init__(self, registry: Registry, executor: Executor, *, heartbeat: float = 5.0) -> None:
        self.registry = registry
        self.executor = executor
        self.heartbeat = heartbeat
        """Seconds between progress heartbeats while a call waits for a person."""
        self._listed: list[ToolSpec] = []
        self._listing: dict[str, Any] | None = None
        self._shapes: dict[str, tuple[ToolSpec, OutputShape]] = {}
        self._connections: dict[int, Any] = {}
        self._changed: anyio.Event | None = None
        registry.subscribe(self._on_registry_change)

    # -- tools/list ---------------------------------------------------------------------

    def listing(self) -> dict[str, Any]:
        """The ``tools/list`` result in wire form, rebuilt only when a spec changed."""
        specs = self.registry.specs()
        cached = self._listing
        if (
            cached is not None
            and len(specs) == len(self._listed)
            and all(a is b for a, b in zip(specs, self._listed, strict=True))
        ):
            return cached
        tools = []
        for spec in specs:
            shape = self._shape(spec)
            tools.append(tool_dict(spec, shape))
        self._listed = specs
        self._listing = {"tools": tools}
        return self._listing

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams
    ) -> dict[str, Any]:
        return self.listing()

    def _shape(self, spec: ToolSpec) -> OutputShape:
        entry = self._shapes.get(spec.name)
        if entry is not None and entry[0] is spec:
            return entry[1]
        shape = OutputShape.of(spec)
        self._shapes[spec.name] = (spec, shape)
        return shape

    # -- tools/call ---------------------------------------------------------------------

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> dict[str, Any]:
        call = ToolCall(
            id=str(ctx.request_id),
            name=params.name,
            arguments=params.arguments if params.arguments is not None else {},
            session_id=self._session_id(ctx),
        )
        meta = ctx.meta
        reporter = None
        if meta and meta.get("progress_token") is not None:
            reporter = _ProgressReporter(ctx)
        try:
            if reporter is None:
                return await self._run(ctx, call, None)
            async with anyio.create_task_group() as group:
                group.start_soon(self._heartbeats, call, reporter)
                try:
                    answer = await self._run(ctx, call, reporter)
                finally:
                    group.cancel_scope.cancel()
            return answer
        except anyio.get_cancelled_exc_class():
            # The client cancelled the call, timed out or went away: its questions are
            # withdrawn, so no answer given later can run a call the client was told failed.
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self._withdraw(call)
            raise

    async def _run(
        self, ctx: Context, call: ToolCall, reporter: _ProgressReporter | None
    ) -> dict[str, Any]:
        with _trace_context(ctx.meta):
            outcome = await self.executor.execute(call, on_progress=reporter)
            if isinstance(outcome, Interrupted):
                return await self._interrupted(ctx, outcome, reporter)
        return self._answer(outcome.result)

    async def _pending_for(self, call: ToolCall) -> list[ApprovalRequest]:
        """The approvals still waiting for ``call``, or for a call it made (a compose
        script's child, which pauses the script)."""
        return [
            r
            for r in await self.executor.approvals.list_pending()
            if r.session_id == call.session_id
            and (r.call.id == call.id or (parent_of(r.call) or {}).get("id") == call.id)
        ]

    async def _withdraw(self, call: ToolCall) -> None:
        """Deny (``withdrawn``) every request of ``call`` that is still pending."""
        from invokit.approvals import ApprovalDecision
        from invokit.execution._approving import emit_resolved

        try:
            pending = await self._pending_for(call)
        except Exception as exc:
            logger.warning("cannot withdraw the approvals of call %s: %r", call.id, exc)
            return
        for request in pending:
            decision = ApprovalDecision.deny(
                "the caller went away (cancelled, timed out or disconnected); nothing ran",
                by="executor",
                channel="executor",
            )
            try:
                await self.executor.approvals.resolve(request.id, decision)
            except ApprovalError:
                continue  # decided meanwhile, elsewhere: that decision stands
            except Exception as exc:
                logger.warning("cannot withdraw approval %s: %r", request.id, exc)
                continue
            emit_resolved(self.executor, request.call, request, decision)

    async def _heartbeats(self, call: ToolCall, reporter: _ProgressReporter) -> None:
        """While a person decides, a progress notification every ``heartbeat`` seconds, so a
        client whose timeout resets on progress keeps waiting."""
        while True:
            await anyio.sleep(self.heartbeat)
            if reporter.idle() < self.heartbeat:
                continue  # the tool reports progress itself
            try:
                waiting = await self._pending_for(call)
            except Exception:  # a store hiccup: the next beat tries again
                continue
            if waiting:
                await reporter.beat(
                    f"waiting for a person to approve {waiting[0].tool} ({waiting[0].id})"
                )

    def _answer(self, result: ToolResult) -> dict[str, Any]:
        if result.is_error:
            return result_dict(result)
        found = self.executor.registry.get(result.name)
        spec = found.current_spec() if found is not None else None
        return result_dict(result, self._shape(spec) if spec is not None else None)

    async def _interrupted(
        self, ctx: Context, outcome: Interrupted, on_progress: Any
    ) -> dict[str, Any]:
        interrupt = outcome.interrupt
        if not isinstance(interrupt, ApprovalRequired):
            placeholder = outcome.result
            message = placeholder.error.message if placeholder.error else interrupt.message()
            return error_dict(f"{interrupt.kind}_required", message, {"interrupt_id": interrupt.id})
        request = interrupt.request
        answer = await self._elicit(ctx, interrupt)
        if answer is None or answer.verdict == "none":
            return self._pending(request)
        try:
            resumed: Outcome = await self.executor.resume(
                request.id,
                approve=answer.verdict == "approve",
                reason=answer.reason,
                by="elicitation",
                on_progress=on_progress,
            )
        except ApprovalError as exc:
            return error_dict("approval_unusable", f"The approval cannot be used: {exc}")
        if isinstance(resumed, Interrupted):
            if resumed.interrupt.id != request.id:  # a compose script paused on its next call
                return await self._interrupted(ctx, resumed, on_progress)
            return self._pending(request)
        return self._answer(resumed.result)

    def _pending(self, request: ApprovalRequest) -> dict[str, Any]:
        reach = approval_reach(self.executor.approvals)
        return error_dict(
            "approval_required", pending_message(request, reach), {"approval_id": request.id}
        )

    async def _elicit(self, ctx: Context, interrupt: ApprovalRequired) -> Any:
        """Ask through the client, if it can ask; ``None`` when it cannot (never an approval)."""
        session = ctx.session
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.elicitation is None or not session.can_send_request:
            return None
        question = approval_question(interrupt.request)
        try:
            with anyio.move_on_after(self.executor.limits.approval_ttl):
                reply = await session.elicit_form(
                    question, REQUESTED_SCHEMA, related_request_id=ctx.request_id
                )
                return read_answer(reply.action, reply.content)
        except Exception as exc:  # a client that fails to ask leaves the approval pending
            logger.warning("elicitation for approval %s failed: %r", interrupt.id, exc)
        return None

    # -- sessions and change notices ----------------------------------------------------

    def _session_id(self, ctx: Context) -> str | None:
        """A stable id for the client connection: approvals and session grants bind to it."""
        connection = _connection(ctx)
        if connection is None:
            return None
        state: dict[str, Any] = connection.state
        found = state.get(_SESSION_STATE)
        if found is None:
            found = state[_SESSION_STATE] = connection.session_id or "mcp_" + secrets.token_urlsafe(
                12
            )
        return str(found)

    async def initialized(self, ctx: Context, params: types.NotificationParams) -> None:
        """Remember a connection, so it hears about tool list changes until it closes."""
        connection = _connection(ctx)
        if connection is None:
            return
        key = id(connection)
        self._connections[key] = connection
        connection.exit_stack.callback(self._connections.pop, key, None)

    def _on_registry_change(self) -> None:
        self._listing = None
        if self._changed is not None:
            self._changed.set()

    async def _announce_changes(self) -> None:
        while True:
            self._changed = anyio.Event()
            await self._changed.wait()
            for connection in list(self._connections.values()):
                with anyio.move_on_after(5):
                    await connection.send_tool_list_changed()

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """Runs while the server runs: the task that sends ``tools/list_changed``."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._announce_changes)
            try:
                yield {}
            finally:
                group.cancel_scope.cancel()


def _connection(ctx: Context) -> Any:
    # The SDK 2.3 hands low-level handlers a per-request ServerSession whose Connection (the
    # per-client state and standalone channel) is not public yet.
    return getattr(ctx.session, "_connection", None)


class _ProgressReporter:
    """Sends each executor progress report, and each heartbeat, as an MCP progress
    notification. MCP requires the numbers to grow with every notification, and a value never
    exceeds its total.

    The numbers sent are the tool's own plus an offset: each heartbeat raises the offset by one
    (and the total with it), so a tool's ``1 of 10`` after three heartbeats is sent as ``4 of
    13``. A report that would not grow (the tool went back, or repeated a value) or would pass
    its total is not sent. A total, once known, stays known.
    """

    def __init__(self, ctx: Context) -> None:
        self._session = ctx.session
        self._offset = 0.0
        self._tool_last = 0.0
        self._total: float | None = None
        self._last: float | None = None
        self._sent = time.monotonic()

    def idle(self) -> float:
        """Seconds since the last notification."""
        return time.monotonic() - self._sent

    async def __call__(self, progress: Progress) -> None:
        if progress.total is not None:
            self._total = float(progress.total)
        # A streaming tool's plain yields carry data, not numbers: count them on.
        value = float(progress.progress) if progress.progress is not None else self._tool_last + 1
        if self._total is not None:
            value = min(value, self._total)
        if value <= self._tool_last and self._last is not None:
            return  # not growing: MCP would reject it, and a client would show it going back
        self._tool_last = value
        await self._send(value + self._offset, progress.message)

    async def beat(self, message: str) -> None:
        self._offset += 1
        await self._send(self._tool_last + self._offset, message)

    async def _send(self, value: float, message: str | None) -> None:
        total = self._total + self._offset if self._total is not None else None
        if self._last is not None and value <= self._last:  # pragma: no cover - kept by design
            return
        self._last = value
        self._sent = time.monotonic()
        await self._session.report_progress(_number(value), _number(total), message)


def _number(value: float | None) -> float | int | None:
    """Whole numbers as ``int`` on the wire (``4``, not ``4.0``)."""
    if value is not None and value.is_integer():
        return int(value)
    return value


def build_server(
    registry: Registry, executor: Executor, *, name: str = "invokit", heartbeat: float = 5.0
) -> Server[Any]:
    """The SDK low-level ``Server`` that serves ``registry`` through ``executor``.

    Run it with ``server.run(read_stream, write_stream, server.create_initialization_options())``
    or mount ``server.streamable_http_app()``; :func:`serve` does either.
    """
    from invokit import __version__

    handlers = ToolServer(registry, executor, heartbeat=heartbeat)
    server = _InvokitServer(name, version=__version__, lifespan=handlers.lifespan)
    server.add_request_handler("tools/list", types.PaginatedRequestParams, handlers.list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, handlers.call_tool)
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, handlers.initialized
    )
    return server


@contextlib.contextmanager
def _trace_context(meta: Mapping[str, Any] | None) -> Iterator[None]:
    """The client's trace context (``traceparent`` in the request's ``_meta``) as the current
    one while the call runs, so its span joins the client's trace (when OpenTelemetry is
    installed)."""
    if not meta or not isinstance(meta.get("traceparent"), str):
        yield
        return
    try:
        from opentelemetry import context, propagate, trace
    except ImportError:
        yield
        return
    carrier = {k: v for k, v in meta.items() if isinstance(v, str)}
    extracted = propagate.extract(carrier)
    remote = trace.get_current_span(extracted).get_span_context()
    if not remote.is_valid or trace.get_current_span().get_span_context().trace_id == (
        remote.trace_id
    ):
        # Nothing usable, or the SDK's server span already joined the client's trace: the
        # tool span nests under that one.
        yield
        return
    token = context.attach(extracted)
    try:
        yield
    finally:
        context.detach(token)
