"""OpenTelemetry spans for tool calls, by the GenAI semantic conventions.

One span per execution of a call, ``execute_tool {tool}`` (kind INTERNAL) with
``gen_ai.operation.name = "execute_tool"``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.tool.description`` and ``gen_ai.tool.type`` where the tool is known,
``gen_ai.conversation.id`` (the session) and ``error.type`` (the error kind) on failure; the
policy decision is its child span ``apply_guardrail invokit.policy``; invokit's own attributes
are under ``invokit.*``. Arguments and results (``gen_ai.tool.call.arguments`` /
``gen_ai.tool.call.result``) are recorded only with ``capture_content=True``.

The span is started on the caller's task when the call is received, so it is a child of the
caller's current span (an agent's ``invoke_agent``, an MCP server's request); everything else
(step events, the decision span, the end) is done by the sink's writer thread with the times
the steps happened. ``opentelemetry-api`` is imported when the sink is made, not when invokit
is: without it the sink raises :class:`MissingExtra`.

A call that waits for approval ends its span at ``interrupted`` (not an error: it is control
flow); the asking span's context is kept in the approval request (``ApprovalRequest.trace``),
and the span of the resumed call, in this process or another, links to it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from invokit.exceptions import MissingExtra
from invokit.execution._audit_buffer import BufferedSink
from invokit.execution._events import Event, text_field
from invokit.execution._otel_attributes import (
    ToolDescriptions,
    attributes_of,
    json_text,
    without_content,
)
from invokit.execution._otel_context import SINKS as _SINKS
from invokit.execution._otel_context import asking_context as asking_context
from invokit.execution._otel_context import current_span_of as current_span_of
from invokit.execution._otel_context import outgoing_meta as outgoing_meta
from invokit.execution._otel_context import start_resumed as start_resumed
from invokit.execution._recording import Record, record_event

if TYPE_CHECKING:
    from opentelemetry.trace import Link, Span, Tracer, TracerProvider

    from invokit._calls import ToolCall, ToolResult
    from invokit.registry import Registry

_ENDS = frozenset({"completed", "failed", "interrupted"})
_NS = 1_000_000_000


class _Started:
    """A span started on the caller's task, handed to the writer thread in event order."""

    __slots__ = ("later", "record", "span")

    def __init__(self, record: Record | Event, span: Span, later: Mapping[str, Any]) -> None:
        self.record = record
        self.span = span
        # Attributes the writer sets: only what sampling may read is given at the start.
        self.later = later


class _Abandoned:
    """A resumed call that raised before it reported its end (an approval used already)."""

    __slots__ = ("error", "record")

    def __init__(self, record: Record, error: str) -> None:
        self.record = record
        self.error = error


class _Results:
    """The ``after_call`` hook that keeps each call's result for ``gen_ai.tool.call.result``
    (only with ``capture_content``)."""

    def __init__(self, sink: OpenTelemetrySink) -> None:
        self._sink = weakref.ref(sink)

    async def after_call(self, call: ToolCall, result: ToolResult) -> None:
        sink = self._sink()
        if sink is not None and not sink._closed:
            value = result.structured if result.structured is not None else result.text
            sink._results[id(call)] = value if isinstance(value, str) else json_text(value)


class OpenTelemetrySink(BufferedSink):
    """Turns each call's events into an ``execute_tool {tool}`` span (see the module).

    Args:
        tracer_provider: where spans go; ``None`` uses the global provider.
        types: the event types to record; ``None`` records all (``received`` starts the span
            in the caller's context; without it spans start at the first step, with no parent).
        flush_interval: seconds between background batches.
        capture_content: also record the arguments (``gen_ai.tool.call.arguments``) and the
            result (``gen_ai.tool.call.result``); off by default, as the conventions ask
            (they may hold personal data). ``credentials`` are never recorded.

    Raises:
        MissingExtra: ``opentelemetry-api`` is not installed.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        types: Iterable[str] | None = None,
        flush_interval: float = 0.2,
        capture_content: bool = False,
    ) -> None:
        try:
            from opentelemetry import context, trace
        except ImportError:
            raise MissingExtra("OpenTelemetry spans", "otel") from None
        self._trace = trace
        self._context = context
        self._tracer: Tracer = trace.get_tracer("invokit", tracer_provider=tracer_provider)
        self.capture_content = capture_content
        # Keyed by execution, not call id: two sessions' calls may share an id.
        self._spans: dict[tuple[int, str | None, str], Span] = {}
        self._last: dict[tuple[int, str | None, str], int] = {}
        # The span of each call in flight, by call object, for lookups on the caller's task.
        self._live: dict[int, Span] = {}
        self._live_lock = threading.Lock()
        self._results: dict[int, str] = {}
        self._registry: Registry | None = None
        self._descriptions = ToolDescriptions()
        # Spans are tracing, not audit: a call's result never waits for their export.
        super().__init__(types=types, flush_interval=flush_interval, group_commit=False)
        _SINKS.add(self)

    # -- on the caller's task ---------------------------------------------------------------

    def attach(self, registry: Registry) -> tuple[object, ...]:
        """Called by an :class:`~invokit.execution.Executor` given this sink: the tools it
        traces (for their descriptions), and the hooks it needs (``capture_content``)."""
        self._registry = registry
        return (_Results(self),) if self.capture_content else ()

    def recorder(self, kind: str) -> Callable[[Record], None] | None:
        put = super().recorder(kind)
        if kind != "received" or put is None:
            return put
        registry = self._registry  # the executor asking now: its tools describe its spans

        def received(record: Record) -> None:
            if self._closed:
                return
            span, later = self._start(record[1], record[2], registry, ())
            self._buffer.append(_Started(record, span, later))  # type: ignore[arg-type]

        return received

    def emit(self, event: Event) -> None:
        """Buffer one event; ``received`` starts its span here, in the caller's context."""
        if event.type != "received" or self._closed:
            super().emit(event)
        elif self.types is None or "received" in self.types:
            span = self._begin(event.tool, event.call_id, event.time, ())
            later = self._later(event.tool, event.session_id, None)
            self._buffer.append(_Started(event, span, later))  # type: ignore[arg-type]

    def _start(
        self,
        call: ToolCall,
        when: float,
        registry: Registry | None,
        links: Sequence[Link],
        attributes: Mapping[str, Any] | None = None,
    ) -> tuple[Span, dict[str, Any]]:
        name, call_id, session = call.name, call.id, call.session_id
        if type(name) is not str or type(call_id) is not str:
            name, call_id = text_field(name) or "", text_field(call_id) or ""
        if session is not None and type(session) is not str:
            session = text_field(session)
        span = self._begin(name, call_id, when, links, attributes)
        with self._live_lock:
            self._live[id(call)] = span
        return span, self._later(name, session, registry)

    def _later(self, name: str, session: str | None, registry: Registry | None) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        if session is not None:
            attributes["gen_ai.conversation.id"] = session
            attributes["invokit.session_id"] = session
        if registry is not None:
            attributes.update(self._descriptions.describe(registry, name))
        return attributes

    def _begin(
        self,
        name: str,
        call_id: str,
        when: float,
        links: Sequence[Link],
        extra: Mapping[str, Any] | None = None,
    ) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
        }
        if extra:
            attributes.update(extra)
        return self._tracer.start_span(
            f"execute_tool {name}",
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            start_time=int(when * _NS),
        )

    def live_span(self, call: ToolCall) -> Span | None:
        """The span of ``call`` while it runs (started by this sink), else ``None``."""
        return self._live.get(id(call))

    def start_resumed(self, call: ToolCall, when: float, asked: Mapping[str, str] | None) -> None:
        """Start the span of a resumed call in the caller's context, linked to the span that
        asked (its W3C ``traceparent`` carrier, kept in the approval request)."""
        if self._closed:
            return
        links = []
        if asked:
            from opentelemetry.trace.propagation.tracecontext import (
                TraceContextTextMapPropagator,
            )

            found = self._trace.get_current_span(
                TraceContextTextMapPropagator().extract(dict(asked))
            ).get_span_context()
            if found.is_valid:
                links.append(self._trace.Link(found, {"invokit.link": "approval"}))
        span, later = self._start(call, when, self._registry, links, {"invokit.resumed": True})
        self._buffer.append(_Started(("received", call, when, {}), span, later))  # type: ignore[arg-type]

    def abandon(self, call: ToolCall, when: float, error: str) -> None:
        """End the span of a resumed call that raised instead of reporting its end."""
        if not self._closed:
            self._buffer.append(_Abandoned(("failed", call, when, {}), error))  # type: ignore[arg-type]

    # -- on the writer thread ---------------------------------------------------------------

    @staticmethod
    def _key(event: Event) -> tuple[int, str | None, str]:
        return (event.execution, event.session_id, event.call_id)

    def _span(self, event: Event) -> Span | None:
        key = self._key(event)
        span = self._spans.get(key)
        if span is None:
            if self.types is None or "received" in self.types:
                # Every execution started a span when it was received (or resumed): this is
                # no execution's step (a request withdrawn from outside a call), or its span
                # ended already.
                return None
            # ``received`` is not recorded: a span from the first step, without a parent.
            span = self._begin(event.tool, event.call_id, event.time, ())
            span.set_attributes(self._later(event.tool, event.session_id, None))
            self._spans[key] = span
        return span

    def _write(self, events: list[Event]) -> None:
        items: list[Any] = events  # events, and the markers this sink buffers itself
        for item in items:
            kind = type(item)
            if kind is _Started:
                started: _Started = item
                record = started.record
                event = record if isinstance(record, Event) else record_event(record)
                self._spans[self._key(event)] = started.span
                if started.later:
                    started.span.set_attributes(started.later)
                self._last[self._key(event)] = int(event.time * _NS)
                if self.capture_content and "arguments" in event.data:
                    self._arguments(started.span, event.data["arguments"])
                continue
            if kind is _Abandoned:
                abandoned: _Abandoned = item
                event = record_event(abandoned.record)
                event.data = {"kind": "raised", "message": abandoned.error, "is_error": True}
                span = self._span(event)
                if span is not None:
                    self._finish(span, event, int(event.time * _NS))
                continue
            self._step(item)

    def _step(self, event: Event) -> None:
        span = self._span(event)
        if span is None:
            return
        key = self._key(event)
        when = int(event.time * _NS)
        data = event.data
        if event.type == "decided":
            self._decision(span, event, self._last.get(key, when), when)
        elif event.type == "received":
            if self.capture_content and "arguments" in data:
                self._arguments(span, data["arguments"])
        else:
            shown = data if self.capture_content else without_content(data)
            span.add_event(f"invokit.{event.type}", attributes_of("invokit", shown), timestamp=when)
        if event.type == "validated" and self.capture_content:
            self._arguments(span, data.get("arguments"))
        elif event.type == "approval_requested" and isinstance(data.get("id"), str):
            span.set_attribute("invokit.approval_id", data["id"])
        self._last[key] = when
        if event.type in _ENDS:
            self._finish(span, event, when)

    def _arguments(self, span: Span, arguments: Any) -> None:
        if arguments is not None:
            span.set_attribute(
                "gen_ai.tool.call.arguments",
                arguments if isinstance(arguments, str) else json_text(arguments),
            )

    def _decision(self, span: Span, event: Event, began: int, when: int) -> None:
        """The policy's decision: attributes on the tool span, and its own child span."""
        data = event.data
        verdict, rule, reason = data.get("verdict"), data.get("rule"), data.get("reason")
        mine: dict[str, Any] = {}
        if isinstance(verdict, str):
            mine["invokit.decision"] = verdict
        if isinstance(rule, str):
            mine["invokit.rule"] = rule
        span.set_attributes(mine)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "apply_guardrail",
            "gen_ai.guardian.name": "invokit.policy",
            "gen_ai.security.target.type": "tool_call",
            "gen_ai.security.target.id": event.call_id,
            **mine,
        }
        if isinstance(verdict, str):
            attributes["gen_ai.security.decision.type"] = verdict
        if isinstance(rule, str):
            attributes["gen_ai.security.policy.id"] = rule
        if isinstance(reason, str):
            attributes["invokit.reason"] = reason
        child = self._tracer.start_span(
            "apply_guardrail invokit.policy",
            context=self._trace.set_span_in_context(span),
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            start_time=min(began, when),
        )
        child.end(end_time=when)

    def _finish(self, span: Span, event: Event, when: int) -> None:
        key = self._key(event)
        data = event.data
        span.set_attribute("invokit.outcome", event.type)
        if event.type == "interrupted":
            kind = data.get("kind")
            if isinstance(kind, str):
                span.set_attribute("invokit.interrupt", kind)
        failed = event.type == "failed" or data.get("is_error") is True
        if failed:
            kind = data.get("kind")
            span.set_attribute("error.type", kind if isinstance(kind, str) else "_OTHER")
            message = data.get("message")
            span.set_status(
                self._trace.Status(
                    self._trace.StatusCode.ERROR, message if isinstance(message, str) else None
                )
            )
        result = self._results.pop(event.execution, None)
        if self.capture_content:
            if event.type == "completed" and "arguments" in data:
                self._arguments(span, data["arguments"])
            if result is not None:
                span.set_attribute("gen_ai.tool.call.result", result)
        span.end(end_time=when)
        self._spans.pop(key, None)
        self._last.pop(key, None)
        with self._live_lock:
            if self._live.get(event.execution) is span:
                del self._live[event.execution]

    def _release(self) -> None:
        # Calls still open when the sink closes end now, so their spans are not lost.
        for span in self._spans.values():
            span.set_attribute("invokit.outcome", "unfinished")
            span.end()
        self._spans.clear()
        self._last.clear()
        self._results.clear()
        with self._live_lock:
            self._live.clear()
        _SINKS.discard(self)


# -- what the executor, the approval path and the MCP client ask ------------------------------


def attach(registry: Registry, events: Iterable[object]) -> tuple[object, ...]:
    """Tell the tracing sinks among ``events`` the executor's tools; the hooks they need."""
    hooks: list[object] = []
    for sink in events:
        if isinstance(sink, OpenTelemetrySink):
            hooks.extend(sink.attach(registry))
    return tuple(hooks)
