"""The guarded pipeline: lookup, validation, policy and normalization."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from invokit import (
    ImagePart,
    JsonPart,
    RetryWithFeedback,
    TextPart,
    ToolCall,
    ToolContext,
    ToolFailed,
    ToolRegistry,
    ToolResult,
    tool,
)
from invokit.execution import Completed, Executor, Failed, Interrupted
from invokit.permissions import FileWrite, Policy

from .conftest import ListSink, Recorder

pytestmark = pytest.mark.anyio


async def test_read_only_call_runs_and_returns_text(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """A read-only tool is allowed by default and its string return becomes a text part."""
    outcome = await Executor(registry).execute(
        ToolCall(id="1", name="echo", arguments='{"text": "ab", "times": 2}')
    )
    assert isinstance(outcome, Completed)
    assert outcome.result.text == "abab"
    assert not outcome.result.is_error
    assert outcome.result.call_id == "1"
    assert outcome.result.duration > 0
    assert recorder.count("echo") == 1


async def test_unknown_tool_lists_available_and_closest(registry: ToolRegistry) -> None:
    """An unknown name fails with not_found, the available names and the closest match."""
    outcome = await Executor(registry).execute(ToolCall(id="1", name="ecko", arguments="{}"))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "not_found"
    assert "echo" in outcome.result.text and "delete" in outcome.result.text
    assert "Did you mean 'echo'?" in outcome.result.text


async def test_invalid_arguments_name_every_field_and_never_run(
    registry: ToolRegistry, recorder: Recorder
) -> None:
    """Invalid arguments fail before the tool with every bad field named by JSON pointer."""
    call = ToolCall(id="1", name="echo", arguments='{"text": 5, "times": "x", "extra": true}')
    outcome = await Executor(registry).execute(call)
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "invalid_arguments"
    paths = {issue["path"] for issue in outcome.result.structured["issues"]}
    assert {"/text", "/times", ""} <= paths
    assert recorder.count("echo") == 0


async def test_malformed_json_is_reported_with_position(registry: ToolRegistry) -> None:
    """Malformed JSON is never treated as {}: the error says where it broke."""
    outcome = await Executor(registry).execute(
        ToolCall(id="1", name="echo", arguments='{"text": "a",')
    )
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "invalid_arguments"
    assert "position" in outcome.result.text


async def test_denied_call_never_runs_the_body(registry: ToolRegistry, recorder: Recorder) -> None:
    """A call denied by policy returns a denied error result and the tool body never runs."""
    executor = Executor(registry, policy=Policy(deny=["delete"]))
    outcome = await executor.execute(ToolCall(id="1", name="delete", arguments={"path": "x"}))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "denied"
    assert recorder.count("delete") == 0


async def test_permission_request_rule_denies_by_target(recorder: Recorder) -> None:
    """A deny rule on a request target refuses the call that declares it."""

    @tool(permissions=lambda args: [FileWrite(path=args["path"])])
    async def write(path: str) -> str:
        """Write."""
        recorder.saw("write", path=path)
        return "ok"

    executor = Executor([write], policy=Policy(allow=["write"], deny=["write(path=**/.env)"]))
    denied = await executor.execute(ToolCall(id="1", name="write", arguments={"path": "app/.env"}))
    allowed = await executor.execute(
        ToolCall(id="2", name="write", arguments={"path": "app/main.py"})
    )
    assert isinstance(denied, Failed)
    assert isinstance(allowed, Completed)
    assert recorder.calls == [("write", {"path": "app/main.py"})]


async def test_not_read_only_asks_by_default(registry: ToolRegistry, recorder: Recorder) -> None:
    """Without a matching rule a tool that is not read-only is asked about, not run."""
    outcome = await Executor(registry).execute(
        ToolCall(id="1", name="delete", arguments={"path": "x"})
    )
    assert isinstance(outcome, Interrupted)
    assert recorder.count("delete") == 0


async def test_sync_tool_runs_off_the_event_loop() -> None:
    """A sync tool body runs in a worker thread, never on the event loop's thread."""
    main = threading.get_ident()
    seen: list[int] = []

    @tool(read_only=True)
    def where() -> str:
        """Report the thread."""
        seen.append(threading.get_ident())
        return "ok"

    outcome = await Executor([where]).execute(ToolCall(id="1", name="where"))
    assert isinstance(outcome, Completed)
    assert seen and seen[0] != main


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        pytest.param(ToolFailed("disk full"), "execution_failed", id="tool-failed"),
        pytest.param(ToolFailed("nope", kind="quota"), "quota", id="custom-kind"),
        pytest.param(RetryWithFeedback("use an absolute date"), "retry", id="retry"),
        pytest.param(ValueError("boom"), "execution_failed", id="any-exception"),
        pytest.param(KeyError("k"), "execution_failed", id="key-error"),
    ],
)
async def test_exceptions_become_error_results(raised: Exception, kind: str) -> None:
    """Every exception from a tool body becomes a completed error result with a kind."""

    @tool(read_only=True)
    async def broken() -> str:
        """Fail."""
        raise raised

    outcome = await Executor([broken]).execute(ToolCall(id="1", name="broken"))
    assert isinstance(outcome, Completed)
    assert outcome.result.is_error
    assert outcome.result.error is not None and outcome.result.error.kind == kind
    assert outcome.result.text


async def test_tool_failed_data_is_kept_as_structured() -> None:
    """ToolFailed data travels in the result's structured value."""

    @tool(read_only=True)
    async def failing() -> str:
        """Fail with data."""
        raise ToolFailed("exit 2", data={"exit_code": 2, "stderr": "bad"})

    outcome = await Executor([failing]).execute(ToolCall(id="1", name="failing"))
    assert isinstance(outcome, Completed)
    assert outcome.result.structured == {"exit_code": 2, "stderr": "bad"}


async def test_value_without_json_form_is_an_error_result() -> None:
    """A return value with no JSON form fails the call with a message naming the type."""

    @tool(read_only=True)
    async def odd() -> Any:
        """Return an object."""
        return {"x": object()}

    outcome = await Executor([odd]).execute(ToolCall(id="1", name="odd"))
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None and outcome.result.error.kind == "execution_failed"
    assert "/x" in outcome.result.text


async def test_structured_and_content_parts() -> None:
    """Dicts become JSON parts with a structured value; parts and ToolResults pass through."""

    @tool(read_only=True)
    async def data() -> dict[str, int]:
        """Data."""
        return {"a": 1}

    @tool(read_only=True)
    async def image() -> ImagePart:
        """An image."""
        return ImagePart(data="aGk=", mime_type="image/png")

    @tool(read_only=True)
    async def custom() -> ToolResult:
        """A prepared result."""
        return ToolResult(call_id="?", name="?", content=(TextPart(text="hi"),), metadata={"k": 1})

    executor = Executor([data, image, custom])
    first = await executor.execute(ToolCall(id="1", name="data"))
    second = await executor.execute(ToolCall(id="2", name="image"))
    third = await executor.execute(ToolCall(id="3", name="custom"))
    assert (
        isinstance(first, Completed)
        and isinstance(second, Completed)
        and isinstance(third, Completed)
    )
    assert first.result.structured == {"a": 1}
    assert isinstance(first.result.content[0], JsonPart)
    assert isinstance(second.result.content[0], ImagePart)
    assert (
        third.result.call_id == "3"
        and third.result.name == "custom"
        and third.result.metadata == {"k": 1}
    )


async def test_hidden_tool_is_not_found() -> None:
    """A tool whose current_spec() is None is neither listed nor callable."""

    @tool(read_only=True)
    async def secret() -> str:
        """Secret."""
        return "x"

    secret.current_spec = lambda: None  # type: ignore[method-assign]
    registry = ToolRegistry([secret])
    assert registry.specs() == []
    outcome = await Executor(registry).execute(ToolCall(id="1", name="secret"))
    assert isinstance(outcome, Failed)


async def test_events_cover_every_step(registry: ToolRegistry) -> None:
    """Sinks receive received, validated, decided, started and completed for an allowed call."""
    sink = ListSink()
    await Executor(registry, events=[sink]).execute(
        ToolCall(id="1", name="echo", arguments={"text": "a"})
    )
    assert [e.type for e in sink.events] == [
        "received",
        "validated",
        "decided",
        "started",
        "completed",
    ]
    completed = sink.of("completed")[0]
    assert completed.data["arguments"] == {"text": "a"}
    assert completed.data["verdict"] == "allow"


async def test_failing_sink_does_not_break_the_call(registry: ToolRegistry) -> None:
    """An event sink that raises produces a warning; the call still completes."""

    class Broken(ListSink):
        def emit(self, event: Any) -> None:
            raise OSError("disk gone")

    executor = Executor(registry, events=[Broken()])
    with pytest.warns(RuntimeWarning, match="disk gone"):
        outcome = await executor.execute(ToolCall(id="1", name="echo", arguments={"text": "a"}))
    assert isinstance(outcome, Completed)


@pytest.mark.parametrize("name", [None, 5, ["echo"]], ids=["none", "int", "list"])
async def test_a_name_that_is_not_text_is_not_found(registry: ToolRegistry, name: Any) -> None:
    """A call whose name is not a string fails with not_found instead of raising."""
    outcome = await Executor(registry).execute(ToolCall(id="1", name=name))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "not_found"


async def test_the_shortest_path_emits_every_step_like_the_full_path() -> None:
    """A plain async tool under a settled policy takes the executor's shortest path; its events
    and its result are those of a tool that takes the full path (one with a context)."""

    @tool(read_only=True)
    async def plain(text: str) -> str:
        """Echo."""
        return text

    @tool(read_only=True)
    async def contextual(text: str, ctx: ToolContext) -> str:
        """Echo, with a context."""
        return text

    for policy, final in ((Policy.allow_all(), "completed"), (Policy.deny_all(), "failed")):
        sink = ListSink()
        executor = Executor([plain, contextual], policy=policy, events=[sink])
        outcomes = []
        for name in ("plain", "contextual"):
            outcomes.append(
                await executor.execute(ToolCall(id=name, name=name, arguments={"text": "hi"}))
            )
        steps = {
            name: [e.type for e in sink.events if e.call_id == name]
            for name in ("plain", "contextual")
        }
        assert steps["plain"] == steps["contextual"]
        assert steps["plain"][-1] == final
        first, second = (o.result for o in outcomes)
        assert first.is_error == second.is_error
        assert first.text == second.text.replace("contextual", "plain")
        assert type(outcomes[0]) is type(outcomes[1])
        if final == "failed":
            assert first.error is not None and first.error.kind == "denied"
        completed_events = [e for e in sink.events if e.type == final]
        assert sorted(completed_events[0].data) == sorted(completed_events[1].data)


async def test_a_subclass_that_overrides_invoke_or_permissions_is_used(
    recorder: Recorder,
) -> None:
    """A FunctionTool subclass that overrides invoke() or permissions() never takes the
    shortcut that calls the function directly and skips preflight."""
    from invokit.tools import FunctionTool

    class Wrapped(FunctionTool):
        async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
            return "via invoke: " + str(await super().invoke(args, ctx))

    class Guarded(FunctionTool):
        def permissions(self, args: Any, ctx: Any) -> Any:
            return (FileWrite(path=args["path"]),)

    async def write(path: str) -> str:
        """Write."""
        recorder.saw("write", path=path)
        return "wrote " + path

    call = ToolCall(id="1", name="write", arguments={"path": "/etc/passwd"})
    wrapped = await Executor([Wrapped(write, read_only=True)], policy=Policy.allow_all()).execute(
        call
    )
    assert wrapped.result.text == "via invoke: wrote /etc/passwd"
    executor = Executor(
        [Guarded(write, read_only=True)],
        policy=Policy(allow=["write"], deny=["write(path=/etc/**)"]),
    )
    outcome = await executor.execute(call)
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert recorder.count("write") == 1


async def test_a_session_id_that_is_not_text_is_an_error_result() -> None:
    """A call parsed with an object for its session id fails as invalid_call; the object reaches
    neither the message nor any event as more than its type."""

    @tool(destructive=True)
    async def drop(table: str) -> str:
        """Drop."""
        return table

    sink = ListSink()
    call = ToolCall.from_json(
        '{"id": "c1", "name": "drop", "arguments": {"table": "t"}, "session_id": {"k": "s3cret"}}'
    )
    outcome = await Executor([drop], events=[sink]).execute(call)
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "invalid_call"
    assert "s3cret" not in outcome.result.text
    assert {e.session_id for e in sink.events} == {"<dict>"}
