"""An invokit registry served as an MCP server, every call through the executor.

Built on the SDK's low-level ``Server``: ``tools/list`` comes from the registry (sorted, cached
and rebuilt only when the registry changes, with ``notifications/tools/list_changed`` sent to
every connected client); ``tools/call`` runs ``executor.execute`` and answers with the result,
errors included as ``isError`` results. Approvals are asked through elicitation when the client
can; otherwise the call answers with an error that names the approval id and only what can work
to approve it (which depends on the approval store). An approval is tied to its live caller: a
call cancelled while it waits for a person (``notifications/cancelled``, a timeout, a closed
connection, the server stopping) withdraws its pending requests, and while a person decides a
client that sent a progress token receives heartbeat progress notifications. While it waits,
the call holds a lease on each of its questions in the store (:mod:`invokit.approvals._lease`),
renewed by this process: a client that goes without a word (killed, its connection dropped)
withdraws them at once, and a server that dies with them leaves leases that run out, so every
other process sees them withdrawn within one lease.
"""

from __future__ import annotations

import bisect
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from invokit._calls import TextPart, ToolCall, ToolResult
from invokit._canonical import canonical_hash
from invokit._spec import ToolSpec
from invokit.approvals import DEFAULT_LEASE, ApprovalRecord, ApprovalRequest
from invokit.approvals.internal import LeaseKeeper, leased, shown_time
from invokit.builtin.filesystem import CLIENT_ROOTS
from invokit.exceptions import ApprovalError
from invokit.execution import ApprovalRequired, Executor, Interrupted, Outcome
from invokit.execution.internal import (
    READER_NAME,
    apply_output_limit,
    denied_by,
    output_size,
    parent_of,
)
from invokit.mcp._caller import current_caller
from invokit.mcp._convert import OutputShape, error_dict, result_dict, tool_dict
from invokit.mcp._elicit import (
    APPROVAL_INPUT,
    REQUESTED_SCHEMA,
    Answer,
    approval_question,
    approval_reach,
    input_required,
    pending_message,
    read_answer,
    read_input_response,
    state_argument,
)
from invokit.mcp._identity import client_identity
from invokit.mcp._paging import cursor_after, name_in
from invokit.mcp._principal import PRINCIPAL, Principal, principal_of, principal_session
from invokit.mcp._progress import ProgressReporter
from invokit.mcp._roots import ROOTS_STATE, client_roots
from invokit.mcp._tracecontext import narrow_tracing, trace_context
from invokit.mcp._waiting import wait_for_decision
from invokit.registry import Registry

logger = logging.getLogger("invokit.mcp")

_SESSION_STATE = "invokit.session_id"
DEFAULT_PAGE_SIZE = 100
"""Tools per ``tools/list`` page unless ``build_server(page_size=...)`` says otherwise."""
Context = Any
"""The SDK's ``ServerRequestContext`` (its generic parameters add nothing here)."""

if TYPE_CHECKING:
    from invokit.permissions import Person


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

    def __init__(
        self,
        registry: Registry,
        executor: Executor,
        *,
        heartbeat: float = 5.0,
        page_size: int = DEFAULT_PAGE_SIZE,
        approval_wait: float = 0.0,
        approval_lease: float = DEFAULT_LEASE,
    ) -> None:
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, not {page_size!r}")
        self.registry = registry
        self.executor = executor
        self.heartbeat = heartbeat
        """Seconds between progress heartbeats while a call waits for a person."""
        self.page_size = page_size
        """The most tools one ``tools/list`` page holds."""
        self.approval_wait = approval_wait
        """Seconds a call nobody here can ask about waits for a decision made elsewhere."""
        self.leases = LeaseKeeper(executor.approvals, approval_lease, self._lapsed)
        """The leases of the calls waiting here (``approval_lease`` seconds each, ``0``: none)."""
        self._listed: list[ToolSpec] = []
        self._listing: dict[str, Any] | None = None
        self._names: list[str] = []
        self._shapes: dict[str, tuple[ToolSpec, OutputShape]] = {}
        self._connections: dict[int, Any] = {}
        self._changed: anyio.Event | None = None
        registry.subscribe(self._on_registry_change)

    # -- tools/list ---------------------------------------------------------------------

    def listing(self) -> dict[str, Any]:
        """Every tool in wire form (``{"tools": [...]}``, sorted by name), rebuilt only when a
        spec changed. ``tools/list`` serves it in pages of :attr:`page_size`."""
        specs = self._specs()
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
        self._names = [str(spec.name) for spec in specs]
        self._listing = {"tools": tools}
        return self._listing

    def _specs(self) -> list[ToolSpec]:
        """The registry's specs, and ``tool_result_read`` whenever the executor spills outputs
        (a spilled result tells the model to call it, so the client must see it)."""
        specs = self.registry.specs()
        if READER_NAME in self.registry:
            return specs
        reader = self.executor.registry.get(READER_NAME)
        spec = reader.current_spec() if reader is not None else None
        if spec is None:
            return specs
        specs = [*specs, spec]
        specs.sort(key=lambda spec: str(spec.name))
        return specs

    def page(self, cursor: str | None) -> dict[str, Any]:
        """One ``tools/list`` page: the tools after ``cursor``, and the next cursor if more.

        A cursor names the last tool of the page before it, so a client walking every page
        gets each tool once, in name order, even when the list changes between pages.
        """
        tools = self.listing()["tools"]
        start = 0
        if cursor is not None:
            start = bisect.bisect_right(self._names, name_in(cursor))
        end = start + self.page_size
        if start == 0 and end >= len(tools):
            return self.listing()
        page: dict[str, Any] = {"tools": tools[start:end]}
        if end < len(tools):
            page["nextCursor"] = cursor_after(self._names[end - 1])
        return page

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        return _complete(ctx, self.page(params.cursor if params is not None else None))

    def _shape(self, spec: ToolSpec) -> OutputShape:
        entry = self._shapes.get(spec.name)
        if entry is not None and entry[0] is spec:
            return entry[1]
        shape = OutputShape.of(spec)
        self._shapes[spec.name] = (spec, shape)
        return shape

    # -- tools/call ---------------------------------------------------------------------

    async def call_tool(self, ctx: Context, params: types.CallToolRequestParams) -> dict[str, Any]:
        roots = await self._client_roots(ctx)
        request = getattr(ctx, "request", None)
        principal = principal_of(request) if request is not None else None
        session_id, call_id = self._identify(ctx, principal, params)
        metadata: dict[str, Any] = {CLIENT_ROOTS: list(roots)} if roots is not None else {}
        if principal is not None:
            metadata[PRINCIPAL] = principal.to_dict()
        call = ToolCall(
            id=call_id,
            name=params.name,
            arguments=params.arguments if params.arguments is not None else {},
            session_id=session_id,
            metadata=metadata,
        )
        try:
            answer = await self._leased(ctx, call, params)
        except anyio.get_cancelled_exc_class():
            # The client cancelled the call, timed out or went away (over the stateless
            # protocol the SDK cancels the handler when the POST's connection closes): its
            # questions are withdrawn, so no answer given later can run a call the client was
            # told failed.
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self._withdraw(call, _retried(ctx, params))
            raise
        finally:
            await self._written()
        return _complete(ctx, answer)

    async def _leased(
        self, ctx: Context, call: ToolCall, params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        """The answer to ``call``, its questions leased while it waits for them. The wait ends
        when one is withdrawn meanwhile (its lease ran out: this process stalled, or another
        withdrew it) or the client's connection closed: its questions are withdrawn and the
        answer says so."""
        lost: list[ApprovalRecord | None] = []
        with anyio.CancelScope() as waiting:

            def end(record: ApprovalRecord | None) -> None:
                lost.append(record)
                waiting.cancel()

            with leased(self.leases, end) as lease:
                caller = current_caller()
                forget = caller.on_gone(lease.abandon) if caller is not None else None
                try:
                    answer = await self._reported(ctx, call, params)
                finally:
                    if forget is not None:
                        forget()
                if lease.held:  # it asked, and the call is over: nobody waits any more
                    await lease.release()
                return answer
        # Cancelled from outside as well (the client's cancel, the server stopping): that
        # cancellation goes on, as if the wait had not ended first.
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            await self._withdraw(call, _retried(ctx, params))
        record = lost[0] if lost else None
        if record is not None and record.decision is not None:
            return error_dict("approval_denied", denied_by(record.request, record.decision))
        return error_dict(
            "approval_denied",
            "The caller went away while this call waited for a person; its question was "
            "withdrawn and nothing ran.",
        )

    async def _reported(
        self, ctx: Context, call: ToolCall, params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        """The answer to ``call``, with progress and heartbeats for a client that asked."""
        meta = ctx.meta
        if not meta or meta.get("progress_token") is None:
            return await self._run(ctx, call, None, params)
        reporter = ProgressReporter(ctx)
        async with anyio.create_task_group() as group:
            group.start_soon(self._heartbeats, call, reporter)
            try:
                answer = await self._run(ctx, call, reporter, params)
            finally:
                group.cancel_scope.cancel()
        return answer

    async def _written(self) -> None:
        """Wait until the records of the calls so far are written, whatever cancels the wait.

        Every way a call ends goes through here before the client hears of it: its answer,
        and those the SDK builds once the handler is left ("Request cancelled", "Connection
        closed", the error a raised exception becomes). So a client is never told of a call
        a crash could lose, whether or not the executor waits for its records itself
        (``commit_on_return``).
        """
        with anyio.CancelScope(shield=True):
            await self.executor.commit()

    async def _run(
        self,
        ctx: Context,
        call: ToolCall,
        reporter: ProgressReporter | None,
        params: types.CallToolRequestParams,
    ) -> dict[str, Any]:
        retried = _retried(ctx, params)
        if retried is not None:
            answer = read_input_response(params.input_responses, APPROVAL_INPUT)
            return await self._decide(ctx, retried, answer, reporter)
        with trace_context(ctx.meta):
            outcome = await self.executor.execute(call, on_progress=reporter)
            if isinstance(outcome, Interrupted):
                return await self._interrupted(ctx, outcome, reporter)
        return self._answer(outcome.result)

    async def _pending_for(
        self, call: ToolCall, retried: str | None = None
    ) -> list[ApprovalRequest]:
        """The approvals still waiting for ``call``, or for a call it made (a compose
        script's child, which pauses the script), and ``retried`` (the approval a stateless
        retry waits on, asked by an earlier request)."""
        return [
            r
            for r in await self.executor.approvals.list_pending()
            if r.id == retried
            or (
                r.session_id == call.session_id
                and (r.call.id == call.id or (parent_of(r.call) or {}).get("id") == call.id)
            )
        ]

    async def _withdraw(self, call: ToolCall, retried: str | None = None) -> None:
        """Deny (``withdrawn``) every request of ``call`` that is still pending, and the
        approval ``retried`` that a stateless retry waits on."""
        from invokit.approvals import ApprovalDecision
        from invokit.execution.internal import emit_resolved

        try:
            pending = await self._pending_for(call, retried)
        except Exception as exc:
            logger.warning("cannot withdraw the approvals of call %s: %r", call.id, exc)
            return
        decision = ApprovalDecision.deny(
            f"its caller went away at {shown_time(time.time())} (cancelled, timed out or "
            "disconnected); nothing ran",
            by="executor",
            channel="executor",
        )
        for request in pending:
            try:
                await self.executor.approvals.resolve(request.id, decision)
            except ApprovalError:
                continue  # decided meanwhile, elsewhere: that decision stands
            except Exception as exc:
                logger.warning("cannot withdraw approval %s: %r", request.id, exc)
                continue
            emit_resolved(self.executor, request.call, request, decision)

    def _lapsed(self, record: ApprovalRecord) -> None:
        """A question whose lease ran out (its caller went, here or on a replica that died),
        recorded as withdrawn by this process: the audit log and the live log say so."""
        from invokit.execution.internal import emit_resolved

        emit_resolved(self.executor, record.request.call, record.request, record.decision)

    async def _heartbeats(self, call: ToolCall, reporter: ProgressReporter) -> None:
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
        if result.structured is not None and not result.truncated:
            result = self._limit_structured(result, spec)
        return result_dict(result, self._shape(spec) if spec is not None else None)

    def _limit_structured(self, result: ToolResult, spec: ToolSpec | None) -> ToolResult:
        """The output limit applied to ``structuredContent`` as to text: a structured value
        larger than the limit is cut or spilled the same way, and never sent whole.

        The executor limited the content; a structured value that is the content's own value
        (a JSON or text result) was limited with it, so only a different one is measured.
        """
        structured = result.structured
        if len(result.content) == 1:
            part = result.content[0]
            if getattr(part, "value", None) is structured or getattr(part, "text", None) is (
                structured
            ):
                return result
        limit = (spec.output_limit if spec is not None else None) or self.executor.limits.output
        text = json.dumps(structured, ensure_ascii=False, default=str)
        if len(text) <= limit.max_chars and output_size(result) <= limit.max_chars:
            return result
        whole = replace(result, content=(TextPart(text=text),))
        return apply_output_limit(whole, limit, self.executor.artifacts)

    async def _interrupted(
        self, ctx: Context, outcome: Interrupted, on_progress: Any
    ) -> dict[str, Any]:
        interrupt = outcome.interrupt
        if not isinstance(interrupt, ApprovalRequired):
            placeholder = outcome.result
            message = placeholder.error.message if placeholder.error else interrupt.message()
            return error_dict(f"{interrupt.kind}_required", message, {"interrupt_id": interrupt.id})
        request = interrupt.request
        if _stateless(ctx):
            if _can_elicit(ctx):
                # The stateless protocol has no mid-call requests: the question goes back in
                # the result, and the client calls again with the person's answer.
                return input_required(request, APPROVAL_INPUT)
            return self._pending(request, stateless=True)
        answer = await self._elicit(ctx, interrupt)
        return await self._decide(ctx, request.id, answer, on_progress)

    async def _decide(
        self, ctx: Context, approval_id: str, answer: Answer | None, on_progress: Any
    ) -> dict[str, Any]:
        """Resume ``approval_id`` with the person's answer. With none, nobody here can be
        asked: wait (bounded by ``approval_wait``) for a decision from any process or replica,
        then resume with it; still undecided, the call is reported pending."""
        if answer is None or answer.verdict == "none":
            if not await self._decided_elsewhere(approval_id):
                return await self._still_pending(approval_id)
            answer = None
        try:
            if answer is None:  # decided elsewhere: the store holds the decision
                resumed: Outcome = await self.executor.resume(approval_id, on_progress=on_progress)
            else:
                resumed = await self.executor.resume(
                    approval_id,
                    approve=answer.verdict == "approve",
                    reason=answer.reason,
                    by="elicitation",
                    on_progress=on_progress,
                    person=await self._asker(ctx, approval_id),
                )
        except ApprovalError as exc:
            return error_dict("approval_unusable", f"The approval cannot be used: {exc}")
        if isinstance(resumed, Interrupted):
            if resumed.interrupt.id != approval_id:  # a compose script paused on its next call
                return await self._interrupted(ctx, resumed, on_progress)
            return await self._still_pending(approval_id)
        return self._answer(resumed.result)

    async def _asker(self, ctx: Context, approval_id: str) -> Person | None:
        """Who answers an elicitation: the person behind this client, the verified principal
        of this request, with the groups its token names (``None`` without auth). Policy
        approvers are matched against them, and four eyes refuses them."""
        from invokit.permissions import Person

        request = getattr(ctx, "request", None)
        principal = principal_of(request) if request is not None else None
        if principal is not None:
            return principal.person()
        record = await self.executor.approvals.get(approval_id)
        who = record.request.call.metadata.get("invokit.principal")
        if isinstance(who, Mapping) and isinstance(who.get("sub"), str):
            iss = who.get("iss")
            return Person(sub=who["sub"], iss=iss if isinstance(iss, str) else None)
        return None

    async def _decided_elsewhere(self, approval_id: str) -> bool:
        """Whether a decision on ``approval_id`` arrived within ``approval_wait``."""
        if self.approval_wait <= 0:
            return False
        try:
            record = await self.executor.approvals.get(approval_id)
        except ApprovalError:
            return False
        return await wait_for_decision(self.executor.approvals, record.request, self.approval_wait)

    async def _still_pending(self, approval_id: str) -> dict[str, Any]:
        try:
            record = await self.executor.approvals.get(approval_id)
        except ApprovalError:
            record = None
        if record is None or record.status != "pending":
            return error_dict(
                "approval_unusable",
                f"The approval {approval_id} is no longer pending (decided, expired or "
                "withdrawn). Call the tool again to ask anew.",
            )
        return self._pending(record.request, stateless=record.request.session_id is None)

    def _pending(self, request: ApprovalRequest, *, stateless: bool = False) -> dict[str, Any]:
        store = self.executor.approvals
        reach = approval_reach(store)
        return error_dict(
            "approval_required",
            pending_message(request, reach, stateless=stateless, state=state_argument(store)),
            {"approval_id": request.id},
        )

    async def _elicit(self, ctx: Context, interrupt: ApprovalRequired) -> Any:
        """Ask through the client, if it can ask; ``None`` when it cannot (never an approval)."""
        session = ctx.session
        if not _can_elicit(ctx) or not session.can_send_request:
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

    # -- client roots -------------------------------------------------------------------

    async def _client_roots(self, ctx: Context) -> tuple[str, ...] | None:
        """The local directories the client shares (MCP roots), asked once per connection
        and again after ``notifications/roots/list_changed``; ``None`` when the client has
        none to say (no roots capability, the stateless protocol, or it failed to answer)."""
        capabilities = ctx.session.client_capabilities
        if capabilities is None or capabilities.roots is None or _stateless(ctx):
            return None
        connection = _connection(ctx)
        return await client_roots(ctx, connection.state if connection is not None else {})

    async def roots_changed(self, ctx: Context, params: types.NotificationParams | None) -> None:
        """The client's roots changed: ask again on the next call."""
        connection = _connection(ctx)
        if connection is not None:
            connection.state.pop(ROOTS_STATE, None)

    # -- sessions and change notices ----------------------------------------------------

    def _identify(
        self, ctx: Context, principal: Principal | None, params: types.CallToolRequestParams
    ) -> tuple[str | None, str]:
        """The session id and the call id of a ``tools/call``. Over HTTP a client that names
        itself (:mod:`invokit.mcp._identity`) keeps its session id through any connection and
        replica; its request ids are only unique per connection, so its call ids carry the
        connection's id too (a cancelled call never withdraws another connection's question).
        Otherwise the connection is the session (the SDK binds it to the principal that opened
        it, with auth on) and the request id is the call id; with no connection either (the
        stateless protocol), an authenticated caller's session is its principal's."""
        request_id = str(ctx.request_id)
        connection = self._session_id(ctx)
        if connection is None:
            # The stateless protocol: a request id is unique only within one client's
            # requests, and one person's agents (or parallel calls through a load balancer)
            # share a session, so two different calls could share a call id and one
            # supersede the other's question. The call itself is part of its id: a retry of
            # the same call keeps it (and meets the "no" it was given), another call does not.
            request_id = f"{request_id}@{canonical_hash([params.name, params.arguments])[:16]}"
        identity = client_identity(getattr(ctx, "request", None))
        if identity is None:
            session = connection
            if session is None and principal is not None:
                session = principal_session(principal)
            return session, request_id
        return identity, f"{connection or 'http'}/{request_id}"

    def _session_id(self, ctx: Context) -> str | None:
        """A stable id for the client connection."""
        connection = _connection(ctx)
        if connection is None:
            return None
        if _stateless(ctx) and connection.session_id is None:
            # The stateless protocol has no connection to bind to: every request stands alone.
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
        """Runs while the server runs: the task that sends ``tools/list_changed``, and the one
        that renews the leases of waiting calls and records the questions whose lease ran
        out."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._announce_changes)
            group.start_soon(self.leases.run)
            try:
                yield {}
            finally:
                group.cancel_scope.cancel()


def _retried(ctx: Context, params: types.CallToolRequestParams) -> str | None:
    """The approval a stateless retry answers (a call this server answered with
    ``input_required``): the state is the approval id, sealed and bound to this tool and these
    arguments by the SDK. ``None`` for any other call."""
    if params.request_state is not None and _stateless(ctx):
        return params.request_state
    return None


def _stateless(ctx: Context) -> bool:
    """The request speaks the stateless protocol (2026-07-28 on): no mid-call requests."""
    return str(ctx.protocol_version) in MODERN_PROTOCOL_VERSIONS


def _complete(ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as the stateless protocol needs it: a final result says it is complete."""
    if "resultType" in result or not _stateless(ctx):
        return result
    return {**result, "resultType": "complete"}


def _can_elicit(ctx: Context) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def _connection(ctx: Context) -> Any:
    # The SDK 2.3 hands low-level handlers a per-request ServerSession whose Connection (the
    # per-client state and standalone channel) is not public yet.
    return getattr(ctx.session, "_connection", None)


def build_server(
    registry: Registry,
    executor: Executor,
    *,
    name: str = "invokit",
    heartbeat: float = 5.0,
    page_size: int = DEFAULT_PAGE_SIZE,
    approval_wait: float = 0.0,
    approval_lease: float = DEFAULT_LEASE,
) -> Server[Any]:
    """The SDK low-level ``Server`` that serves ``registry`` through ``executor``.

    Run it with ``server.run(read_stream, write_stream, server.create_initialization_options())``
    or mount ``server.streamable_http_app()``; :func:`serve` does either. ``tools/list``
    answers in pages of ``page_size`` tools. A call waiting for a person holds a lease of
    ``approval_lease`` seconds on its question (renewed every third of that; ``0``: none).
    """
    from invokit import __version__

    handlers = ToolServer(
        registry,
        executor,
        heartbeat=heartbeat,
        page_size=page_size,
        approval_wait=approval_wait,
        approval_lease=approval_lease,
    )
    server = _InvokitServer(
        name,
        version=__version__,
        lifespan=handlers.lifespan,
        # The list changes with the registry (and clients are told): never served stale.
        cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private")},
    )
    # The stateless protocol carries an approval id back and forth in ``requestState``: the
    # SDK's boundary seals it under a key of this process, bound to the call and its time.
    security = RequestStateSecurity.ephemeral(ttl=executor.limits.approval_ttl)
    server.middleware.append(RequestStateBoundary(security, default_audience=name))
    # The SDK's request span reads the trace context of _meta, never its baggage.
    server.middleware = narrow_tracing(server.middleware)
    server.add_request_handler("tools/list", types.PaginatedRequestParams, handlers.list_tools)
    server.add_request_handler("tools/call", types.CallToolRequestParams, handlers.call_tool)
    server.add_notification_handler(
        "notifications/initialized", types.NotificationParams, handlers.initialized
    )
    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, handlers.roots_changed
    )
    return server
