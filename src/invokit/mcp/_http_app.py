"""The streamable HTTP app: the SDK's transport, answering in JSON when nothing else travels.

The SDK's transport answers every request POST with an SSE stream (a task group, a stream
writer, a disconnect watcher and chunked encoding for one event) unless the whole transport is
switched to JSON responses, which takes away the request's back-channel: no elicitation, no
roots request, no progress. Here the choice is made per request, and late: the request is
dispatched, and the first message the server writes for it decides. The response itself goes
back as one JSON body; anything before it (progress, an elicitation, a roots request) opens the
SSE stream, starting with that message, exactly as the SDK would have answered. So the
back-channel is kept for every request that uses it, and the rest cost one plain response.

A client that disconnects before its answer went out ends the wait for it, on either path,
and the request's handler is told (:mod:`invokit.mcp._caller`): a call waiting for a person
withdraws its question; a call running a tool runs on (its answer has nowhere to go). One
request id is in flight at a time in a session: a second POST with it is refused (409), as the
SDK refuses a second GET stream.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http import HTTPStatus
from typing import Any, Literal, cast

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import (
    CONTENT_TYPE_JSON,
    CONTENT_TYPE_SSE,
    MCP_SESSION_ID_HEADER,
    REQUEST_STREAM_BUFFER_SIZE,
    EventMessage,
    StreamableHTTPServerTransport,
    check_accept_headers,
)
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from invokit.mcp._caller import Caller, calling

MCP_PATH = "/mcp"

UNWATCHED_WAIT = 1.0
"""Seconds a request waits for its first message before a watcher for the client's disconnect
joins the wait: most answers come sooner, and are spared the watcher's task (a task group and
a task, tens of microseconds a request)."""

Ended = Literal["ended"]
"""A request's session ended before anything was written for it."""
Waited = EventMessage | Ended | Literal["stopping", "disconnected"]
"""How the wait for a request's first message ended: the message, or why none came."""


class LazyJSONTransport(StreamableHTTPServerTransport):
    """A session's transport that answers a request with JSON unless its back-channel is used."""

    _waits: set[anyio.CancelScope]
    _stopping: bool

    @classmethod
    def adopt(cls, transport: StreamableHTTPServerTransport) -> LazyJSONTransport:
        """``transport``, built by the SDK, as one of these. The subclass adds only the
        per-request choice and its bookkeeping, so the built object takes the class rather
        than being built a second way here."""
        transport.__class__ = cls
        adopted = cast(LazyJSONTransport, transport)
        adopted._waits = set()
        adopted._stopping = False
        return adopted

    async def _handle_post_request(
        self, scope: Scope, request: Request, receive: Receive, send: Send
    ) -> None:
        message = await self._plain_request(request)
        if message is None:
            # Notifications, errors and anything unusual: the SDK's own handling.
            await super()._handle_post_request(scope, request, receive, send)
            return
        request_id = str(message.id)
        if request_id in self._request_streams:
            # Its answer could reach only one of the two POSTs: the second is refused, and the
            # request in flight keeps its stream.
            await self._in_flight_conflict(request_id)(scope, receive, send)
            return
        streams = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        self._request_streams[request_id] = streams
        upgraded = False
        caller = Caller()
        try:
            with calling(caller):  # the handler inherits this context, and so the caller
                await self._dispatch(message, request, request_id)
            first = await self._first_message(receive, streams[1])
            match first:
                case "disconnected":
                    # Its answer has nowhere to go: a question it waits on is withdrawn.
                    caller.go()
                    return
                case "ended":
                    await self._terminated_response()(scope, receive, send)
                    return
                case EventMessage(message=JSONRPCResponse() | JSONRPCError() as answer):
                    await self._create_json_response(answer)(scope, receive, send)
                    return
            # Something travels on the back-channel first, or the server is stopping (the
            # SDK's stream ends the answer then, as it ends every other).
            upgraded = True
            opening = first if isinstance(first, EventMessage) else None
            await self._stream(scope, receive, send, request_id, opening, caller)
        finally:
            if not upgraded:
                await self._clean_up_memory_streams(request_id)

    async def _dispatch(self, message: JSONRPCRequest, request: Request, request_id: str) -> None:
        """Hand ``message`` to the server, with the protocol version it is spoken in."""
        writer = self._read_stream_writer
        assert writer is not None  # connect() runs before any request is let in
        if message.method == "initialize" and message.params:
            version = str(message.params.get("protocolVersion", DEFAULT_NEGOTIATED_VERSION))
        else:
            version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        await writer.send(self._create_session_message(message, request, request_id, version))

    async def _first_message(
        self, receive: Receive, reader: MemoryObjectReceiveStream[EventMessage]
    ) -> Waited:
        """The first message the server writes for a request, or why none came: the server
        is stopping (:meth:`stop_waiting`), the client disconnected, or the session ended."""
        read: list[EventMessage | Ended] = []  # outside the scopes: a message read is kept
        with self._waiting():
            with anyio.move_on_after(UNWATCHED_WAIT):
                read.append(await _read(reader))
            if not read:
                async with anyio.create_task_group() as group:
                    group.start_soon(_read_into, reader, read, group.cancel_scope)
                    await _disconnected(receive)
                    group.cancel_scope.cancel()
                    return "disconnected"
        return read[0] if read else "stopping"

    def _terminated_response(self) -> Response:
        """The answer to a request still in flight when its session ended."""
        return self._create_error_response(
            "Session terminated before the request completed",
            HTTPStatus.INTERNAL_SERVER_ERROR,
            INTERNAL_ERROR,
        )

    def _in_flight_conflict(self, request_id: str) -> Response:
        """The refusal of a request whose id is already in flight in this session."""
        return self._create_error_response(
            f"Conflict: request id {request_id} is already in flight in this session",
            HTTPStatus.CONFLICT,
            INVALID_REQUEST,
        )

    @contextmanager
    def _waiting(self) -> Iterator[anyio.CancelScope]:
        """A scope around the wait for a request's first message, which :meth:`stop_waiting`
        cancels."""
        scope = anyio.CancelScope()
        if self._stopping:
            scope.cancel()
        self._waits.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._waits.discard(scope)

    def stop_waiting(self) -> None:
        """The server is stopping: requests still waiting to be answered in JSON get the SDK's
        SSE stream instead, which ends when the server stops."""
        self._stopping = True
        for scope in self._waits:
            scope.cancel()

    async def _stream(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: str,
        first: EventMessage | None,
        caller: Caller,
    ) -> None:
        """Answer with the SDK's SSE stream for the request, ``first`` as its first event;
        ``caller`` hears of a disconnect before the stream ended."""
        sse_writer, sse_reader = anyio.create_memory_object_stream[dict[str, Any]](0)
        self._sse_stream_writers[request_id] = sse_writer
        headers = {
            "Cache-Control": "no-cache, no-transform",
            "Connection": "keep-alive",
            "Content-Type": CONTENT_TYPE_SSE,
        }
        if self.mcp_session_id:
            headers[MCP_SESSION_ID_HEADER] = self.mcp_session_id
        response = EventSourceResponse(
            content=sse_reader,
            data_sender_callable=partial(
                self._run_sse_writer,
                request_id,
                sse_writer,
                self._request_streams[request_id][1],
                None if first is None else self._create_event_data(first),
            ),
            headers=headers,
            client_close_handler_callable=partial(_went, caller),
        )
        try:
            await response(scope, receive, send)
        finally:
            await sse_reader.aclose()

    async def _plain_request(self, request: Request) -> JSONRPCRequest | None:
        """The request this POST carries when the fast path can answer it: a well-formed
        JSON-RPC request, with the headers the SDK would accept, in a transport with no event
        store (whose streams start with a stored priming event). ``None`` otherwise."""
        if self.is_json_response_enabled or self._event_store is not None:
            return None
        has_json, has_sse = check_accept_headers(request)
        content_type = request.headers.get("content-type", "")
        if not (has_json and has_sse) or content_type.split(";")[0].strip() != CONTENT_TYPE_JSON:
            return None
        try:
            message = jsonrpc_message_adapter.validate_json(await request.body(), by_name=False)
        except ValueError:
            return None
        if not isinstance(message, JSONRPCRequest):
            return None
        given = request.headers.get(MCP_SESSION_ID_HEADER)
        if self.mcp_session_id and given != self.mcp_session_id:
            # Only an initialize that names no session may open this one.
            opening = message.method == "initialize" and given is None
            return message if opening else None
        return message


async def _read(reader: MemoryObjectReceiveStream[EventMessage]) -> EventMessage | Ended:
    """The next message for a request, or ``"ended"`` when its session has ended."""
    try:
        return await reader.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return "ended"


async def _read_into(
    reader: MemoryObjectReceiveStream[EventMessage],
    found: list[EventMessage | Ended],
    done: anyio.CancelScope,
) -> None:
    """:func:`_read` into ``found``, then cancel ``done`` (the wait for a disconnect)."""
    found.append(await _read(reader))
    done.cancel()


async def _went(caller: Caller, message: object) -> None:
    """The SSE stream's client disconnected before the stream ended."""
    caller.go()


async def _disconnected(receive: Receive) -> None:
    """Return once the client disconnects (the request's body is already read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class LazyJSONSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, its sessions served by :class:`LazyJSONTransport`."""

    def _admit_session(self, requestor: Any) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        return None if transport is None else LazyJSONTransport.adopt(transport)

    def stop_waiting(self) -> None:
        """The server is stopping: see :meth:`LazyJSONTransport.stop_waiting`."""
        for transport in list(self._server_instances.values()):
            if isinstance(transport, LazyJSONTransport):
                transport.stop_waiting()


def http_app(server: Server[Any], *, security: Any) -> tuple[Starlette, LazyJSONSessions]:
    """The ASGI app serving ``server`` at ``/mcp`` (security: the Host and Origin checks),
    and its sessions."""
    sessions = LazyJSONSessions(app=server, security_settings=security)
    app = Starlette(
        routes=[Route(MCP_PATH, endpoint=StreamableHTTPASGIApp(sessions))],
        lifespan=lambda app: sessions.run(),
    )
    return app, sessions
