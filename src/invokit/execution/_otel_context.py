"""A traced call's span seen from outside the tracing sink: the trace context kept in an
approval request, the span a resumed call starts (linked to the asking one), and the span an
outgoing MCP request nests under.

The tracing sinks (``_otel.OpenTelemetrySink``) register here while open; this module never
imports them, so what the approval path and the MCP client ask costs nothing (and loads no
OpenTelemetry) when nothing traces.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from invokit._calls import ToolCall


class Tracing(Protocol):
    """What is asked of an open tracing sink here."""

    _closed: bool

    def live_span(self, call: ToolCall) -> Span | None: ...

    def start_resumed(
        self, call: ToolCall, when: float, asked: Mapping[str, str] | None
    ) -> None: ...

    def abandon(self, call: ToolCall, when: float, error: str) -> None: ...


SINKS: weakref.WeakSet[Tracing] = weakref.WeakSet()
"""Open sinks, so the MCP client and the approval path find the span of a call in flight."""


def _tracing(sinks: Iterable[object]) -> list[Tracing]:
    """The open tracing sinks among ``sinks`` (compared by identity: a sink need not hash)."""
    tracing = [sink for sink in list(SINKS) if not sink._closed]
    return [sink for given in sinks for sink in tracing if sink is given]


def asking_context(sinks: Iterable[object], call: ToolCall) -> dict[str, str] | None:
    """The W3C trace context (``traceparent``, ``tracestate``) of ``call``'s span, to keep
    in its approval request; ``None`` when no sink traces it."""
    for sink in _tracing(sinks):
        span = sink.live_span(call)
        if span is None:
            continue
        from opentelemetry.trace import set_span_in_context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, context=set_span_in_context(span))
        return carrier or None
    return None


def start_resumed(
    sinks: Iterable[object], call: ToolCall, when: float, asked: Mapping[str, str] | None
) -> list[Tracing]:
    """Start the resumed call's span in each tracing sink; the sinks that started one."""
    started = _tracing(sinks)
    for sink in started:
        sink.start_resumed(call, when, asked)
    return started


def _live_span(call: ToolCall | None) -> Span | None:
    if call is None or "opentelemetry.trace" not in sys.modules:
        return None
    for sink in list(SINKS):
        span = sink.live_span(call)
        if span is not None:
            return span
    return None


@contextlib.contextmanager
def current_span_of(call: ToolCall | None) -> Iterator[None]:
    """``call``'s span as the current span (when a sink traces it), so what the tool does
    meanwhile (an MCP request, with the SDK's own client span) nests under it."""
    span = _live_span(call)
    if span is None:
        yield
        return
    from opentelemetry import context, trace

    token = context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        context.detach(token)


def outgoing_meta(call: ToolCall | None) -> dict[str, str] | None:
    """The trace context to send with a remote call (MCP ``_meta``): the span of ``call`` if
    a sink traces it, else the caller's current span; ``None`` when OpenTelemetry is not in
    use (never imported) or there is no span."""
    if "opentelemetry.trace" not in sys.modules:
        return None
    from opentelemetry import propagate, trace

    span = _live_span(call)
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span) if span is not None else None)
    return carrier or None
