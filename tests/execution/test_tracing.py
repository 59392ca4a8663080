"""Tool spans nest in the caller's trace: children of its current span, linked across an
approval, and joined over MCP; recorded by the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.memory import create_client_server_memory_streams
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from invokit import ToolCall, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.execution._otel import OpenTelemetrySink
from invokit.permissions import Policy

from .conftest import Recorder

pytestmark = pytest.mark.anyio

PROJECT = "/work/project"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def _spans(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _approval(outcome: object) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


async def test_tool_span_is_a_child_of_the_callers_span(
    registry: ToolRegistry, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A call made inside the caller's span gets an execute_tool span that is its child,
    named and attributed by the conventions, with the decision as a child span of its own."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor(registry, events=[sink], project=PROJECT)
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent helper") as agent:
        outcome = await executor.execute(
            ToolCall(id="call_1", name="echo", arguments={"text": "hi"}, session_id="s1")
        )
    assert isinstance(outcome, Completed)
    sink.flush()
    (span,) = _spans(exporter, "execute_tool echo")
    assert span.parent is not None
    assert span.parent.span_id == agent.get_span_context().span_id
    assert span.context.trace_id == agent.get_span_context().trace_id
    attributes = _attrs(span)
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["gen_ai.tool.call.id"] == "call_1"
    assert attributes["gen_ai.tool.description"] == "Repeat text."
    assert attributes["gen_ai.tool.type"] == "function"
    assert attributes["gen_ai.conversation.id"] == "s1"
    assert attributes["invokit.decision"] == "allow"
    assert "error.type" not in attributes
    assert "gen_ai.tool.call.arguments" not in attributes
    assert "gen_ai.tool.call.result" not in attributes
    (decision,) = _spans(exporter, "apply_guardrail invokit.policy")
    assert decision.parent is not None and decision.parent.span_id == span.context.span_id
    assert _attrs(decision)["gen_ai.security.decision.type"] == "allow"
    await executor.aclose()


async def test_without_a_caller_span_the_tool_span_is_a_root(
    registry: ToolRegistry, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Outside any span the tool span starts its own trace."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor(registry, events=[sink], project=PROJECT)
    await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "hi"}))
    sink.flush()
    (span,) = _spans(exporter, "execute_tool echo")
    assert span.parent is None
    await executor.aclose()


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        pytest.param("delete", {"path": "a"}, "denied", id="deny-rule"),
        pytest.param("nope", {}, "not_found", id="unknown"),
        pytest.param("echo", {"text": 1}, "invalid_arguments", id="invalid"),
    ],
)
async def test_refused_call_has_error_type(
    registry: ToolRegistry,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    name: str,
    arguments: dict[str, Any],
    kind: str,
) -> None:
    """A call that is refused ends its span with status ERROR and error.type its kind."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor(registry, events=[sink], project=PROJECT, policy=Policy(deny=["delete"]))
    outcome = await executor.execute(ToolCall(id="c1", name=name, arguments=arguments))
    assert isinstance(outcome, Failed)
    sink.flush()
    (span,) = _spans(exporter, f"execute_tool {name}")
    assert _attrs(span)["error.type"] == kind
    assert span.status.status_code is StatusCode.ERROR
    if kind == "denied":
        (decision,) = _spans(exporter, "apply_guardrail invokit.policy")
        assert _attrs(decision)["gen_ai.security.decision.type"] == "deny"
        assert _attrs(decision)["gen_ai.security.policy.id"] == "delete"
    await executor.aclose()


async def test_tool_error_has_error_type(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A tool that raises gets error.type from its error kind."""

    @tool(read_only=True)
    async def boom() -> str:
        """Fails."""
        raise RuntimeError("no")

    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor([boom], events=[sink], project=PROJECT)
    outcome = await executor.execute(ToolCall(id="c1", name="boom", arguments={}))
    assert isinstance(outcome, Completed) and outcome.result.is_error
    sink.flush()
    (span,) = _spans(exporter, "execute_tool boom")
    assert outcome.result.error is not None
    assert _attrs(span)["error.type"] == outcome.result.error.kind
    await executor.aclose()


async def test_content_is_recorded_only_when_asked(
    registry: ToolRegistry, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """With capture_content the arguments and the result are on the span."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60, capture_content=True)
    executor = Executor(registry, events=[sink], project=PROJECT)
    await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "ab", "times": 2}))
    sink.flush()
    (span,) = _spans(exporter, "execute_tool echo")
    attributes = _attrs(span)
    assert json.loads(attributes["gen_ai.tool.call.arguments"]) == {"text": "ab", "times": 2}
    assert attributes["gen_ai.tool.call.result"] == "abab"
    await executor.aclose()


async def test_resumed_call_links_to_the_asking_span(
    registry: ToolRegistry,
    recorder: Recorder,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    """The asking span ends at the interrupt without error; the resumed call's span is a
    child of the resumer's span and links to the asking span."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor(registry, events=[sink], project=PROJECT)
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent first") as first:
        asked = _approval(
            await executor.execute(ToolCall(id="c1", name="delete", arguments={"path": "a"}))
        )
    assert asked.request.trace is not None and "traceparent" in asked.request.trace
    with tracer.start_as_current_span("approval ui") as ui:
        resumed = await executor.resume(asked.id, approve=True)
    assert isinstance(resumed, Completed) and recorder.count("delete") == 1
    sink.flush()
    asking, running = _spans(exporter, "execute_tool delete")
    assert asking.parent is not None
    assert asking.parent.span_id == first.get_span_context().span_id
    assert _attrs(asking)["invokit.outcome"] == "interrupted"
    assert _attrs(asking)["invokit.approval_id"] == asked.id
    assert asking.status.status_code is StatusCode.UNSET
    assert running.parent is not None
    assert running.parent.span_id == ui.get_span_context().span_id
    assert _attrs(running)["invokit.resumed"] is True
    assert _attrs(running)["invokit.outcome"] == "completed"
    (link,) = running.links
    assert link.context.span_id == asking.context.span_id
    assert link.context.trace_id == asking.context.trace_id
    await executor.aclose()


async def test_resume_that_raises_ends_its_span(
    registry: ToolRegistry, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A second resume of a used approval raises, and its span still ends, as an error."""
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor(registry, events=[sink], project=PROJECT)
    asked = _approval(
        await executor.execute(ToolCall(id="c1", name="delete", arguments={"path": "a"}))
    )
    await executor.resume(asked.id, approve=True)
    with pytest.raises(Exception, match="used"):
        await executor.resume(asked.id, approve=True)
    sink.flush()
    spans = _spans(exporter, "execute_tool delete")
    assert len(spans) == 3
    assert _attrs(spans[2])["error.type"] == "raised"
    assert sink._live == {} and sink._spans == {}
    await executor.aclose()


ASKER = textwrap.dedent(
    """
    import json, sys
    import anyio
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from invokit import ToolCall, tool
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import Executor, OpenTelemetrySink

    @tool(destructive=True)
    def wipe(name: str) -> str:
        "Wipe."
        return "wiped " + name

    async def main() -> None:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        sink = OpenTelemetrySink(tracer_provider=provider)
        store = SqliteApprovalStore(sys.argv[1])
        executor = Executor([wipe], approvals=store, events=[sink], project="/work/project")
        call = ToolCall(id="c1", name="wipe", arguments={"name": "db"})
        outcome = await executor.execute(call)
        await executor.aclose()
        (span,) = [s for s in exporter.get_finished_spans() if s.name == "execute_tool wipe"]
        print(json.dumps({
            "id": outcome.interrupt.id,
            "trace_id": span.context.trace_id,
            "span_id": span.context.span_id,
        }))

    anyio.run(main)
    """
)


def _ask_in_another_process(tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "asker.py"
    script.write_text(ASKER)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "approvals.sqlite3")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    asked: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return asked


async def test_resume_in_another_process_links_to_the_asking_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """The asking span's context travels in the stored approval: a resume in another process
    links to it."""
    asked = _ask_in_another_process(tmp_path)

    @tool(destructive=True)
    def wipe(name: str) -> str:
        """Wipe."""
        return "wiped " + name

    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    store = SqliteApprovalStore(tmp_path / "approvals.sqlite3")
    executor = Executor([wipe], approvals=store, events=[sink], project=PROJECT)
    resumed = await executor.resume(asked["id"], approve=True)
    assert isinstance(resumed, Completed) and resumed.result.text == "wiped db"
    sink.flush()
    (span,) = _spans(exporter, "execute_tool wipe")
    (link,) = span.links
    assert (link.context.trace_id, link.context.span_id) == (asked["trace_id"], asked["span_id"])
    await executor.aclose()


async def test_mcp_server_span_joins_the_clients_trace(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """Over a real MCP session (invokit's client to invokit's server) the trace context travels
    in _meta: the server's tool span has the client's trace id, and the client's tool span
    as its parent."""
    from invokit.mcp import MCPToolset, PinStore, build_server

    @tool(read_only=True)
    async def shout(text: str) -> str:
        """Upper-case text."""
        return text.upper()

    server_sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    served = ToolRegistry([shout])
    server = build_server(served, Executor(served, events=[server_sink], project=PROJECT))

    @asynccontextmanager
    async def transport() -> AsyncIterator[tuple[Any, Any]]:
        async with (
            create_client_server_memory_streams() as (client_side, server_side),
            anyio.create_task_group() as group,
        ):
            group.start_soon(
                server.run, server_side[0], server_side[1], server.create_initialization_options()
            )
            yield client_side
            group.cancel_scope.cancel()

    client_sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    # Connected before any span is current: the server's tasks inherit no trace context.
    async with MCPToolset(
        transport, prefix="remote", pins=PinStore(tmp_path / "pins.json")
    ) as remote:
        executor = Executor(
            remote, events=[client_sink], project=PROJECT, policy=Policy(allow=["remote.*"])
        )
        tracer = provider.get_tracer("agent")
        with tracer.start_as_current_span("invoke_agent client") as agent:
            outcome = await executor.execute(
                ToolCall(id="c1", name="remote.shout", arguments={"text": "hi"})
            )
        assert isinstance(outcome, Completed) and outcome.result.text == "HI"
        client_sink.flush()
        server_sink.flush()
    (client_span,) = _spans(exporter, "execute_tool remote.shout")
    (server_span,) = _spans(exporter, "execute_tool shout")
    assert client_span.parent is not None
    assert client_span.parent.span_id == agent.get_span_context().span_id
    assert _attrs(client_span)["gen_ai.tool.type"] == "extension"
    assert server_span.context.trace_id == client_span.context.trace_id
    assert server_span.parent is not None
    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # The MCP SDK's own client and server spans do not record (no global provider): the
        # server's tool span has the client's tool span as its remote parent.
        assert server_span.parent.is_remote
        assert server_span.parent.span_id == client_span.context.span_id
    assert _attrs(server_span)["gen_ai.tool.type"] == "function"
    client_sink.close()
    server_sink.close()


async def test_untraced_mcp_call_sends_no_trace_context(tmp_path: Path) -> None:
    """Without a span, the client sends no traceparent and the server still answers."""
    from invokit.execution._otel import outgoing_meta

    assert outgoing_meta(ToolCall(id="c1", name="x")) is None


async def test_inline_approval_is_one_span(
    registry: ToolRegistry, provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """A call approved inline stays one span, from received to completed, with the approval
    steps as its events (the store hands back its own copy of the call: SQLite)."""

    async def approver(request: object) -> bool:
        return True

    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    store = SqliteApprovalStore(tmp_path / "approvals.sqlite3")
    executor = Executor(
        registry, approvals=store, approver=approver, events=[sink], project=PROJECT
    )
    outcome = await executor.execute(ToolCall(id="c1", name="delete", arguments={"path": "a"}))
    assert isinstance(outcome, Completed)
    sink.flush()
    (span,) = _spans(exporter, "execute_tool delete")
    names = [e.name for e in span.events]
    assert "invokit.approval_requested" in names and "invokit.approval_resolved" in names
    assert _attrs(span)["invokit.outcome"] == "completed"
    assert sink._live == {} and sink._spans == {}
    await executor.aclose()


async def test_resumed_external_call_has_its_own_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """A call the host runs (declaration-only tool) ends its span at the interrupt; the resume
    with the host's result is a span of its own that completes."""
    from invokit import ToolAnnotations, declare
    from invokit.execution import ExternalCall

    lookup = declare(
        "lookup",
        "Look a word up.",
        {"type": "object", "properties": {"word": {"type": "string"}}},
        annotations=ToolAnnotations(read_only=True),
    )
    sink = OpenTelemetrySink(tracer_provider=provider, flush_interval=60)
    executor = Executor([lookup], events=[sink], project=PROJECT)
    outcome = await executor.execute(ToolCall(id="c1", name="lookup", arguments={"word": "x"}))
    assert isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ExternalCall)
    resumed = await executor.resume(outcome.interrupt, result="found")
    assert isinstance(resumed, Completed)
    sink.flush()
    asking, running = _spans(exporter, "execute_tool lookup")
    assert _attrs(asking)["invokit.interrupt"] == "external"
    assert _attrs(running)["invokit.resumed"] is True
    assert _attrs(running)["invokit.outcome"] == "completed"
    assert sink._live == {} and sink._spans == {}
    await executor.aclose()


def test_server_takes_the_trace_context_from_meta() -> None:
    """Without an MCP SDK span in the way, a traceparent in _meta becomes the current span
    context while the call runs, and is gone after it; nothing changes without one."""
    from invokit.mcp._tracecontext import trace_context as _trace_context

    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with _trace_context({"traceparent": traceparent, "progress_token": 3}):
        inside = trace.get_current_span().get_span_context()
    assert format(inside.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    assert format(inside.span_id, "016x") == "b7ad6b7169203331"
    assert inside.is_remote
    assert not trace.get_current_span().get_span_context().is_valid
    with _trace_context({"traceparent": "garbage"}):
        assert not trace.get_current_span().get_span_context().is_valid
    with _trace_context(None):
        assert not trace.get_current_span().get_span_context().is_valid
