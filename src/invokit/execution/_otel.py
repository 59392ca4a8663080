"""OpenTelemetry spans from executor events: one span per call, one span event per step.

``opentelemetry-api`` is imported when the sink is made, not when invokit is: without it the
sink raises :class:`MissingExtra`. Spans carry the event times, so they are built off the hot
path, in the sink's writer thread, and still show when each step happened.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from invokit.exceptions import MissingExtra
from invokit.execution._audit_buffer import BufferedSink, jsonable
from invokit.execution._events import Event

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

_ENDS = frozenset({"completed", "failed", "interrupted"})
_NS = 1_000_000_000


def _attributes(prefix: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values: scalars, lists of scalars, else JSON text."""
    out: dict[str, Any] = {}
    for key, value in jsonable(dict(data)).items():
        name = f"{prefix}.{key}"
        scalar = isinstance(value, str | bool | int | float)
        if scalar or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            out[name] = value
        elif value is not None:
            out[name] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return out


class OpenTelemetrySink(BufferedSink):
    """Turns each call's events into an OpenTelemetry span named ``invokit.tool <name>``.

    The span starts at ``received``, gets a span event for each step (``decided``,
    ``approval_requested`` …) and ends at ``completed``, ``failed`` or ``interrupted``
    (status ERROR for ``failed`` or an error result).

    Args:
        tracer_provider: where spans go; ``None`` uses the global provider.
        types: the event types to record; ``None`` records all.
        flush_interval: seconds between background batches.

    Raises:
        MissingExtra: ``opentelemetry-api`` is not installed.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        types: Iterable[str] | None = None,
        flush_interval: float = 0.2,
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise MissingExtra("OpenTelemetry spans", "otel") from None
        self._trace = trace
        self._tracer: Tracer = trace.get_tracer("invokit", tracer_provider=tracer_provider)
        # Keyed by execution, not call id: two sessions' calls may share an id.
        self._spans: dict[tuple[int, str | None, str], Span] = {}
        # Spans are tracing, not audit: a call's result never waits for their export.
        super().__init__(types=types, flush_interval=flush_interval, group_commit=False)

    @staticmethod
    def _key(event: Event) -> tuple[int, str | None, str]:
        return (event.execution, event.session_id, event.call_id)

    def _span(self, event: Event) -> Span:
        span = self._spans.get(self._key(event))
        if span is None:
            attributes: dict[str, Any] = {
                "invokit.call_id": event.call_id,
                "invokit.tool": event.tool,
            }
            if event.session_id is not None:
                attributes["invokit.session_id"] = event.session_id
            span = self._tracer.start_span(
                f"invokit.tool {event.tool}",
                kind=self._trace.SpanKind.INTERNAL,
                attributes=attributes,
                start_time=int(event.time * _NS),
            )
            self._spans[self._key(event)] = span
        return span

    def _write(self, events: list[Event]) -> None:
        for event in events:
            span = self._span(event)
            when = int(event.time * _NS)
            if event.type != "received":
                span.add_event(event.type, _attributes("invokit", event.data), timestamp=when)
            if event.type == "decided":
                span.set_attributes(_attributes("invokit.policy", event.data))
            if event.type in _ENDS:
                self._end(span, event, when)
                del self._spans[self._key(event)]

    def _end(self, span: Span, event: Event, when: int) -> None:
        span.set_attribute("invokit.outcome", event.type)
        failed = event.type == "failed" or event.data.get("is_error") is True
        if failed:
            kind = event.data.get("kind")
            if isinstance(kind, str):
                span.set_attribute("invokit.error.kind", kind)
            message = event.data.get("message")
            span.set_status(
                self._trace.Status(
                    self._trace.StatusCode.ERROR, message if isinstance(message, str) else None
                )
            )
        elif event.type == "completed":
            span.set_status(self._trace.Status(self._trace.StatusCode.OK))
        span.end(end_time=when)

    def _release(self) -> None:
        # Calls still open when the sink closes end now, so their spans are not lost.
        for span in self._spans.values():
            span.set_attribute("invokit.outcome", "unfinished")
            span.end()
        self._spans.clear()
