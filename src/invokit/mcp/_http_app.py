"""The streamable HTTP app: the SDK's transport, answering in JSON when nothing else travels.

The SDK's transport answers every request POST with an SSE stream (a task group, a stream
writer, a disconnect watcher and chunked encoding for one event) unless the whole transport is
switched to JSON responses, which takes away the request's back-channel: no elicitation, no
roots request, no progress. Here the choice is made per request, and late: the request is
dispatched, and the first message the server writes for it decides. The response itself goes
back as one JSON body; anything before it (progress, an elicitation, a roots request) opens the
SSE stream, starting with that message, exactly as the SDK would have answered. So the
back-channel is kept for every request that uses it, and the rest cost one plain response.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http import HTTPStatus
from typing import Any, cast

import anyio
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
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

MCP_PATH = "/mcp"


class LazyJSONTransport(StreamableHTTPServerTransport):
    """A session's transport that answers a request with JSON unless its back-channel is used."""

    _waits: dict[str, anyio.CancelScope]
    _stopping: bool

    @classmethod
    def adopt(cls, transport: StreamableHTTPServerTransport) -> LazyJSONTransport:
        """``transport``, built by the SDK, as one of these. The subclass adds only the
        per-request choice and its bookkeeping, so the built object takes the class rather
        than being built a second way here."""
        transport.__class__ = cls
        adopted = cast(LazyJSONTransport, transport)
        adopted._waits = {}
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
        writer = self._read_stream_writer
        assert writer is not None  # connect() runs before any request is let in
        request_id = str(message.id)
        streams = anyio.create_memory_object_stream[EventMessage](REQUEST_STREAM_BUFFER_SIZE)
        self._request_streams[request_id] = streams
        upgraded = False
        try:
            if message.method == "initialize" and message.params:
                version = str(message.params.get("protocolVersion", DEFAULT_NEGOTIATED_VERSION))
            else:
                version = request.headers.get(
                    MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION
                )
            await writer.send(self._create_session_message(message, request, request_id, version))
            try:
                with self._waiting(request_id) as waiting:
                    first = await streams[1].receive()
                if waiting.cancelled_caught:
                    # The server is stopping: the SDK's stream ends the answer, as it ends
                    # every other when the server stops.
                    upgraded = True
                    await self._stream(scope, receive, send, request_id, None)
                    return
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                # The session ended with the request in flight.
                response = self._create_error_response(
                    "Session terminated before the request completed",
                    HTTPStatus.INTERNAL_SERVER_ERROR,
                    INTERNAL_ERROR,
                )
                await response(scope, receive, send)
                return
            if isinstance(first.message, JSONRPCResponse | JSONRPCError):
                await self._create_json_response(first.message)(scope, receive, send)
                return
            upgraded = True
            await self._stream(scope, receive, send, request_id, first)
        finally:
            if not upgraded:
                await self._clean_up_memory_streams(request_id)

    @contextmanager
    def _waiting(self, request_id: str) -> Iterator[anyio.CancelScope]:
        """A scope around the wait for a request's first message, which :meth:`stop_waiting`
        cancels."""
        scope = anyio.CancelScope()
        if self._stopping:
            scope.cancel()
        self._waits[request_id] = scope
        try:
            with scope:
                yield scope
        finally:
            self._waits.pop(request_id, None)

    def stop_waiting(self) -> None:
        """The server is stopping: requests still waiting to be answered in JSON get the SDK's
        SSE stream instead, which ends when the server stops."""
        self._stopping = True
        for scope in self._waits.values():
            scope.cancel()

    async def _stream(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: str,
        first: EventMessage | None,
    ) -> None:
        """Answer with the SDK's SSE stream for the request, ``first`` as its first event."""
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
