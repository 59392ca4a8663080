"""The OpenTelemetry sink on its own: events become spans named and attributed by the GenAI
conventions, recorded by the SDK's in-memory exporter."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from invokit.exceptions import MissingExtra
from invokit.execution._events import Event
from invokit.execution._otel import OpenTelemetrySink


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


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


def _named(exporter: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


def test_one_span_per_call_with_a_decision_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A call becomes one execute_tool span from received to completed, its steps span events
    and its policy decision a child apply_guardrail span."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    sink.emit(event("received", at=100.0))
    sink.emit(event("validated", at=100.25, arguments={"path": "a"}))
    sink.emit(event("decided", at=100.5, verdict="ask", rule="fs.*", reason="r"))
    sink.emit(event("approval_resolved", at=101.0, approved=True, by="ana", requests=[{"a": 1}]))
    sink.emit(event("completed", at=102.0, is_error=False, duration=0.5))
    sink.flush()
    (span,) = _named(exporter, "execute_tool")
    assert span.name == "execute_tool fs.write"
    assert span.start_time == 100_000_000_000
    assert span.end_time == 102_000_000_000
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "fs.write"
    assert attributes["gen_ai.tool.call.id"] == "c1"
    assert attributes["gen_ai.conversation.id"] == "s1"
    assert attributes["invokit.decision"] == "ask"
    assert attributes["invokit.rule"] == "fs.*"
    assert attributes["invokit.outcome"] == "completed"
    assert "gen_ai.tool.call.arguments" not in attributes  # content is opt-in
    assert span.status.status_code is StatusCode.UNSET
    names = [e.name for e in span.events]
    assert names == ["invokit.validated", "invokit.approval_resolved", "invokit.completed"]
    resolved = dict(span.events[1].attributes or {})
    assert resolved["invokit.by"] == "ana"
    assert resolved["invokit.requests"] == '[{"a": 1}]'
    (decision,) = _named(exporter, "apply_guardrail")
    assert decision.name == "apply_guardrail invokit.policy"
    assert decision.parent is not None and decision.parent.span_id == span.context.span_id
    assert decision.context.trace_id == span.context.trace_id
    assert (decision.start_time, decision.end_time) == (100_250_000_000, 100_500_000_000)
    decided = dict(decision.attributes or {})
    assert decided["gen_ai.security.decision.type"] == "ask"
    assert decided["gen_ai.security.policy.id"] == "fs.*"
    assert decided["gen_ai.security.target.id"] == "c1"
    sink.close()


def test_failure_sets_error_type(provider: TracerProvider, exporter: InMemorySpanExporter) -> None:
    """A failed call or an error result ends its span with status ERROR and error.type."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    sink.emit(event("received", "c1"))
    sink.emit(event("failed", "c1", kind="timeout", message="too slow"))
    sink.emit(event("received", "c2"))
    sink.emit(event("completed", "c2", is_error=True, kind="denied", message="no"))
    sink.flush()
    first, second = _named(exporter, "execute_tool")
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "too slow"
    assert (first.attributes or {})["error.type"] == "timeout"
    assert second.status.status_code is StatusCode.ERROR
    assert (second.attributes or {})["error.type"] == "denied"
    sink.close()


def test_interrupted_is_no_error_and_open_spans_end_on_close(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """An interrupted call ends without error; spans still open end when the sink closes."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    sink.emit(event("received", "a"))
    sink.emit(event("received", "b"))
    sink.emit(event("started", "a"))
    sink.emit(event("interrupted", "a", kind="approval", id="apr_1"))
    sink.emit(event("approval_resolved", "z", approved=False))  # no execution: no span
    sink.close()
    a, b = _named(exporter, "execute_tool")
    assert (a.attributes or {})["invokit.outcome"] == "interrupted"
    assert (a.attributes or {})["invokit.interrupt"] == "approval"
    assert a.status.status_code is StatusCode.UNSET
    assert (b.attributes or {})["invokit.outcome"] == "unfinished"


def test_without_received_spans_start_at_the_first_step(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A sink that does not record received starts a span at a call's first step."""
    sink = OpenTelemetrySink(
        tracer_provider=provider, flush_interval=60, types=["started", "completed"]
    )
    sink.emit(event("started", "a"))
    sink.emit(event("completed", "a", is_error=False))
    sink.flush()
    (span,) = _named(exporter, "execute_tool")
    assert [e.name for e in span.events] == ["invokit.started", "invokit.completed"]
    sink.close()


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
async def test_same_call_id_in_two_sessions_gives_two_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
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

    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor([wait], events=[sink])

    async def run(session: str) -> None:
        call = ToolCall(id="1", name="wait", arguments={"label": session}, session_id=session)
        await executor.execute(call)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "alice")
        group.start_soon(run, "bob")
        await anyio.sleep(0.01)
        gate.set()
    sink.flush()
    spans = _named(exporter, "execute_tool")
    assert len(spans) == 2
    assert sorted(str((s.attributes or {})["gen_ai.conversation.id"]) for s in spans) == [
        "alice",
        "bob",
    ]
    for span in spans:
        names = [e.name for e in span.events]
        assert names.count("invokit.validated") == names.count("invokit.started") == 1
        assert names.count("invokit.completed") == 1
    sink.close()


def test_same_call_id_different_executions_are_separate_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Events of two executions with the same call id and session are kept apart by their
    execution identity."""
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
    first, second = _named(exporter, "execute_tool")
    assert [e.name for e in first.events] == ["invokit.started", "invokit.completed"]
    assert [e.name for e in second.events] == ["invokit.started", "invokit.completed"]
    assert first.context.span_id != second.context.span_id
    sink.close()
