"""OpenTelemetry spans from events, recorded by a minimal in-process TracerProvider.

The dev environment has ``opentelemetry-api`` but not the SDK, so the provider below is a
small, complete implementation of the API's abstract tracer and span classes that keeps what
it is given.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import Attributes

from invokit.exceptions import MissingExtra
from invokit.execution._events import Event
from invokit.execution._otel import OpenTelemetrySink


class RecordedSpan(Span):
    """A span that keeps its name, times, attributes, events and status."""

    def __init__(self, name: str, attributes: Attributes, start_time: int | None) -> None:
        self.name = name
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.start_time = start_time
        self.end_time: int | None = None
        self.events: list[tuple[str, dict[str, Any], int | None]] = []
        self.status = Status(StatusCode.UNSET)

    def end(self, end_time: int | None = None) -> None:
        self.end_time = end_time if end_time is not None else -1

    def get_span_context(self) -> SpanContext:
        return trace.INVALID_SPAN_CONTEXT

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        self.events.append((name, dict(attributes or {}), timestamp))

    def update_name(self, name: str) -> None:
        self.name = name

    def is_recording(self) -> bool:
        return self.end_time is None

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        self.status = status if isinstance(status, Status) else Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        self.add_event("exception", {"message": str(exception)}, timestamp)


class RecordingTracer(trace.Tracer):
    """Starts :class:`RecordedSpan` objects and keeps them in order."""

    def __init__(self) -> None:
        self.spans: list[RecordedSpan] = []

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> RecordedSpan:
        span = RecordedSpan(name, attributes, start_time)
        self.spans.append(span)
        return span

    @contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: Any, **kwargs: Any
    ) -> Iterator[RecordedSpan]:
        yield self.start_span(name)


class RecordingProvider(trace.TracerProvider):
    """Hands out one shared :class:`RecordingTracer`."""

    def __init__(self) -> None:
        self.tracer = RecordingTracer()

    def get_tracer(self, *args: Any, **kwargs: Any) -> RecordingTracer:
        return self.tracer


def event(type_: str, call_id: str = "c1", at: float = 100.0, **data: object) -> Event:
    """An event of ``call_id`` at a fixed time."""
    return Event(
        type=type_,  # type: ignore[arg-type]
        call_id=call_id,
        tool="fs.write",
        time=at,
        session_id="s1",
        data=dict(data),
    )


def test_one_span_per_call_with_step_events() -> None:
    """A call becomes one span from `received` to `completed`, each step a span event."""
    provider = RecordingProvider()
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    sink.emit(event("received", at=100.0))
    sink.emit(event("decided", at=100.5, verdict="ask", rule="fs.*", reason="r"))
    sink.emit(event("approval_resolved", at=101.0, approved=True, by="ana", requests=[{"a": 1}]))
    sink.emit(event("completed", at=102.0, is_error=False, duration=0.5))
    sink.flush()
    (span,) = provider.tracer.spans
    assert span.name == "invokit.tool fs.write"
    assert span.start_time == 100_000_000_000
    assert span.end_time == 102_000_000_000
    assert span.attributes["invokit.call_id"] == "c1"
    assert span.attributes["invokit.session_id"] == "s1"
    assert span.attributes["invokit.policy.verdict"] == "ask"
    assert span.attributes["invokit.outcome"] == "completed"
    assert span.status.status_code is StatusCode.OK
    names = [name for name, _, _ in span.events]
    assert names == ["decided", "approval_resolved", "completed"]
    resolved = span.events[1][1]
    assert resolved["invokit.by"] == "ana"
    assert resolved["invokit.requests"] == '[{"a": 1}]'
    sink.close()


def test_failure_sets_error_status() -> None:
    """A failed call or an error result ends its span with status ERROR and the kind."""
    provider = RecordingProvider()
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    sink.emit(event("received", "c1"))
    sink.emit(event("failed", "c1", kind="timeout", message="too slow"))
    sink.emit(event("received", "c2"))
    sink.emit(event("completed", "c2", is_error=True, kind="denied", message="no"))
    sink.flush()
    first, second = provider.tracer.spans
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "too slow"
    assert first.attributes["invokit.error.kind"] == "timeout"
    assert second.status.status_code is StatusCode.ERROR
    assert second.attributes["invokit.error.kind"] == "denied"
    sink.close()


def test_interleaved_calls_and_unfinished_spans() -> None:
    """Interleaved calls get their own spans; spans still open end when the sink closes."""
    provider = RecordingProvider()
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    sink.emit(event("started", "a"))
    sink.emit(event("started", "b"))
    sink.emit(event("interrupted", "a", reason="approval"))
    sink.close()
    a, b = provider.tracer.spans
    assert a.attributes["invokit.outcome"] == "interrupted"
    assert a.status.status_code is StatusCode.UNSET
    assert b.attributes["invokit.outcome"] == "unfinished"
    assert b.end_time is not None


def test_global_provider_by_default() -> None:
    """Without a provider the global one is used (a no-op until the host configures one)."""
    sink = OpenTelemetrySink()
    sink.emit(event("received"))
    sink.emit(event("completed"))
    sink.close()


def test_missing_api_is_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without opentelemetry-api the sink says which extra to install."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(MissingExtra) as info:
        OpenTelemetrySink()
    assert info.value.extra == "otel"


@pytest.mark.anyio
async def test_same_call_id_in_two_sessions_gives_two_spans() -> None:
    """Two sessions' calls that share an id (MCP request ids are per connection), running at
    the same time through one executor, get a span each, each with its own events."""
    import anyio

    from invokit import ToolCall, tool
    from invokit.execution import Executor

    gate = anyio.Event()

    @tool(read_only=True)
    async def wait(label: str) -> str:
        """Waits for the gate."""
        await gate.wait()
        return label

    provider = RecordingProvider()
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor([wait], events=[sink])
    results: dict[str, object] = {}

    async def run(session: str) -> None:
        call = ToolCall(id="1", name="wait", arguments={"label": session}, session_id=session)
        results[session] = await executor.execute(call)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "alice")
        group.start_soon(run, "bob")
        await anyio.sleep(0.01)
        gate.set()
    sink.flush()
    spans = provider.tracer.spans
    assert len(spans) == 2
    assert sorted(s.attributes["invokit.session_id"] for s in spans) == ["alice", "bob"]
    for span in spans:
        names = [name for name, _, _ in span.events]
        assert names.count("validated") == names.count("started") == 1
        assert names.count("completed") == 1 and span.end_time is not None
    sink.close()


def test_same_call_id_different_executions_are_separate_spans() -> None:
    """Events of two executions with the same call id and session are kept apart by their
    execution identity."""
    provider = RecordingProvider()
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    for kind, execution in [
        ("received", 1),
        ("received", 2),
        ("started", 1),
        ("started", 2),
        ("completed", 2),
        ("completed", 1),
    ]:
        step = event(kind, at=100.0, is_error=False)
        step.execution = execution
        sink.emit(step)
    sink.flush()
    first, second = provider.tracer.spans
    assert [n for n, _, _ in first.events] == ["started", "completed"]
    assert [n for n, _, _ in second.events] == ["started", "completed"]
    assert first.end_time is not None and second.end_time is not None
    sink.close()
