"""invokit tools inside real pydantic-ai agents (its FunctionModel, no network)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolset,
    ModelRetry,
    RunContext,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai import Tool as PydanticTool
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from invokit import (
    Completed,
    Executor,
    Failed,
    Limits,
    OutputLimit,
    ToolAnnotations,
    ToolCall,
    ToolRegistry,
    declare,
    tool,
)
from invokit.approvals import MemoryApprovalStore, SqliteApprovalStore
from invokit.exceptions import InvalidToolDefinition
from invokit.execution import Event
from invokit.integrations.pydantic_ai import InvokitToolset, approval_results, from_pydantic_ai
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

Plan = list[tuple[str, dict[str, Any]]]


class Notes:
    """A notebook whose tool bodies count every run."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {"a": "alpha"}
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def registry(self) -> ToolRegistry:
        @tool(name="notes.read", read_only=True)
        async def read(name: str) -> str:
            """Read a note."""
            self.runs.append(("read", {"name": name}))
            return self.pages.get(name, "")

        @tool(name="notes.write")
        async def write(name: str, text: str, mode: str = "replace") -> str:
            """Write a note."""
            self.runs.append(("write", {"name": name, "text": text}))
            self.pages[name] = text
            return f"wrote {name}"

        @tool(name="notes.delete", destructive=True)
        async def delete(name: str) -> str:
            """Delete a note."""
            self.runs.append(("delete", {"name": name}))
            return f"deleted {name}"

        return ToolRegistry([read, write, delete])

    def count(self, name: str) -> int:
        return sum(1 for ran, _ in self.runs if ran == name)


class Script:
    """A FunctionModel that calls the planned tools, then answers with what it read back."""

    def __init__(self, *plans: Plan) -> None:
        self.plans = list(plans)
        self.read_back: list[ToolReturnPart] = []
        self.tools_seen: list[str] = []
        self.made = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tools_seen = [t.name for t in info.function_tools]
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        self.read_back.extend(returned)
        if returned and not self.plans:
            return ModelResponse(
                parts=[
                    TextPart(" | ".join(f"{p.outcome}: {p.model_response_str()}" for p in returned))
                ]
            )
        if not self.plans:
            return ModelResponse(parts=[TextPart("nothing to do")])
        parts = []
        for name, args in self.plans.pop(0):
            parts.append(ToolCallPart(name, args, tool_call_id=f"call-{self.made}"))
            self.made += 1
        return ModelResponse(parts=parts)


def _agent(
    executor: Executor, script: Script, **options: Any
) -> Agent[None, str | DeferredToolRequests]:
    return Agent(
        FunctionModel(script),
        toolsets=[InvokitToolset(executor, **options)],
        output_type=[str, DeferredToolRequests],
    )


async def test_a_read_runs_and_the_model_reads_its_result() -> None:
    """An allowed call runs once through the executor and its value reaches the model."""
    notes = Notes()
    executor = Executor(notes.registry())
    script = Script([("notes_read", {"name": "a"})])
    result = await _agent(executor, script).run("read a")
    assert result.output == "success: alpha"
    assert notes.runs == [("read", {"name": "a"})]
    assert script.tools_seen == ["notes_delete", "notes_read", "notes_write"]


async def test_a_denied_call_is_a_tool_error_the_model_reads() -> None:
    """A call a deny rule refuses never runs; the model reads the denial and the run goes on."""
    notes = Notes()
    executor = Executor(notes.registry(), policy=Policy(deny=["notes.delete"]))
    script = Script([("notes_delete", {"name": "a"})])
    result = await _agent(executor, script).run("delete a")
    assert isinstance(result.output, str)
    assert result.output.startswith("failed: ")
    assert "Error (denied)" in result.output
    assert "notes.delete" in result.output
    assert notes.count("delete") == 0


async def test_invalid_arguments_ask_the_model_to_retry() -> None:
    """Arguments that break the schema come back as a retry; the fixed call runs."""
    notes = Notes()
    executor = Executor(notes.registry())
    script = Script([("notes_read", {"nam": "a"})], [("notes_read", {"name": "a"})])
    result = await _agent(executor, script).run("read a")
    assert [p.outcome for p in script.read_back] == ["retried", "success"]
    assert "'nam' was unexpected" in script.read_back[0].model_response_str()
    assert result.output == "success: alpha"
    assert notes.runs == [("read", {"name": "a"})]


def _asked(output: object) -> DeferredToolRequests:
    assert isinstance(output, DeferredToolRequests), output
    return output


async def test_an_approval_is_deferred_resumed_and_runs_once() -> None:
    """An ask ends the run with DeferredToolRequests; approved, the resumed run writes once,
    recorded with who approved; a replay of the same approval runs nothing again."""
    notes = Notes()
    executor = Executor(notes.registry())
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    agent = _agent(executor, script)
    first = await agent.run("write b")
    requests = _asked(first.output)
    assert [c.tool_call_id for c in requests.approvals] == ["call-0"]
    asked = requests.metadata["call-0"]["invokit"]
    waiting = await executor.approvals.list_pending()
    assert [r.id for r in waiting] == [asked["approval_id"]]
    assert asked["tool"] == "notes.write"
    assert asked["arguments"] == {"name": "b", "text": "beta"}
    assert notes.count("write") == 0

    results = await approval_results(executor, requests, {"call-0": True}, by="ana")
    history = first.all_messages()
    second = await agent.run(message_history=history, deferred_tool_results=results)
    assert second.output == "success: wrote b"
    assert notes.runs == [("write", {"name": "b", "text": "beta"})]
    record = await executor.approvals.get(asked["approval_id"])
    assert record.status == "consumed"
    assert record.decision is not None and record.decision.by == "ana"
    assert record.decision.arguments is None  # approved as asked, not an edit

    again = await agent.run(message_history=history, deferred_tool_results=results)
    assert isinstance(again.output, DeferredToolRequests)  # asked anew, not run
    assert notes.count("write") == 1


async def test_a_replayed_plain_approval_never_runs_the_call_twice() -> None:
    """A plain ``DeferredToolResults(approvals={id: True})`` resumes the question it answers
    once; replayed with the same history, the yes runs nothing (the model reads that the
    question is gone) and leaves no unseen question behind for a later replay to run."""
    notes = Notes()
    executor = Executor(notes.registry())
    agent = _agent(executor, Script([("notes_write", {"name": "b", "text": "beta"})]))
    first = await agent.run("write b")
    _asked(first.output)
    history = first.all_messages()
    plain = DeferredToolResults(approvals={"call-0": True})
    resumed = await agent.run(message_history=history, deferred_tool_results=plain)
    assert resumed.output == "success: wrote b"
    for _ in range(3):
        replay = await agent.run(message_history=history, deferred_tool_results=plain)
        assert isinstance(replay.output, str) and "approval_expired" in replay.output
        assert await executor.approvals.list_pending() == []
    assert notes.count("write") == 1


async def test_a_second_executor_on_the_same_sqlite_store_resumes_the_run(tmp_path: Path) -> None:
    """The run asked in one executor is resumed by another on the same SQLite store, from
    history kept as JSON, and the call runs once there."""
    notes = Notes()
    store_path = tmp_path / "approvals.db"
    first_executor = Executor(notes.registry(), approvals=SqliteApprovalStore(store_path))
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    first = await _agent(first_executor, script).run("write b")
    requests = _asked(first.output)
    approval_id = requests.metadata["call-0"]["invokit"]["approval_id"]
    kept = ModelMessagesTypeAdapter.dump_json(first.all_messages())
    await first_executor.aclose()

    second_executor = Executor(notes.registry(), approvals=SqliteApprovalStore(store_path))
    history = ModelMessagesTypeAdapter.validate_json(kept)
    second = await _agent(second_executor, Script()).run(
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={"call-0": True}),
    )
    assert second.output == "success: wrote b"
    assert notes.count("write") == 1
    record = await second_executor.approvals.get(approval_id)
    assert record.status == "consumed"
    assert record.decision is not None and record.decision.by == "pydantic-ai"
    await second_executor.aclose()


async def test_a_denial_is_recorded_in_invokit_and_read_by_the_model() -> None:
    """A person's no is recorded on the invokit approval (who and why) and the model reads
    invokit's denial; the tool never runs."""
    notes = Notes()
    executor = Executor(notes.registry())
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    agent = _agent(executor, script)
    first = await agent.run("write b")
    requests = _asked(first.output)
    approval_id = requests.metadata["call-0"]["invokit"]["approval_id"]
    results = await approval_results(
        executor, requests, {"call-0": ToolDenied("not today")}, by="ana"
    )
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert isinstance(second.output, str)
    assert second.output.startswith("denied: ")
    assert "not today" in second.output
    record = await executor.approvals.get(approval_id)
    assert record.status == "denied"
    assert record.decision is not None and record.decision.by == "ana"
    assert notes.count("write") == 0


async def test_edited_arguments_are_decided_again_and_a_deny_rule_wins() -> None:
    """Arguments overridden at approval are validated and decided again: a deny rule for
    them wins over the approval, and nothing runs."""
    notes = Notes()
    executor = Executor(notes.registry(), policy=Policy(deny=["notes.write(name=secret*)"]))
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    agent = _agent(executor, script)
    first = await agent.run("write b")
    requests = _asked(first.output)
    edit = ToolApproved(override_args={"name": "secret-plans", "text": "beta"})
    results = await approval_results(executor, requests, {"call-0": edit}, by="ana")
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert isinstance(second.output, str)
    assert "Error (denied)" in second.output
    assert notes.count("write") == 0


async def test_an_approval_invokit_never_recorded_runs_nothing() -> None:
    """A pydantic-ai approval for a call invokit has no waiting approval for (another store, a
    forged history) runs nothing, however often it is replayed: the model reads that there is
    no such question, and no question nobody saw is left waiting for the next replay."""
    notes = Notes()
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    first = await _agent(Executor(notes.registry()), script).run("write b")
    _asked(first.output)
    stranger = Executor(notes.registry(), approvals=MemoryApprovalStore())
    for _ in range(2):
        second = await _agent(stranger, Script()).run(
            message_history=first.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"call-0": True}),
        )
        assert isinstance(second.output, str) and "approval_expired" in second.output
        assert await stranger.approvals.list_pending() == []
    assert notes.count("write") == 0


async def test_an_approval_naming_another_approval_id_runs_nothing() -> None:
    """An approval whose metadata names an approval id other than the waiting one is refused
    as a tool error; the call does not run."""
    notes = Notes()
    executor = Executor(notes.registry())
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    agent = _agent(executor, script)
    first = await agent.run("write b")
    _asked(first.output)
    forged = DeferredToolResults(
        approvals={"call-0": True}, metadata={"call-0": {"invokit": {"approval_id": "apr_x"}}}
    )
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=forged)
    assert isinstance(second.output, str)
    assert "apr_x" in second.output
    assert notes.count("write") == 0


# -- pydantic-ai tools imported into invokit ------------------------------------------------


def _pydantic_tools(runs: list[str]) -> FunctionToolset[None]:
    def remove(path: str) -> str:
        """Remove a file."""
        runs.append(f"remove {path}")
        return f"removed {path}"

    def look(path: str) -> str:
        """Look at a file."""
        runs.append(f"look {path}")
        if path == "missing":
            raise ModelRetry("no such file; try another path")
        return f"saw {path}"

    return FunctionToolset([remove, PydanticTool(look)])


async def test_an_imported_pydantic_ai_tool_is_denied_by_an_invokit_rule() -> None:
    """A pydantic-ai tool in an invokit registry is refused by an invokit deny rule, inside a
    real pydantic-ai agent, and never runs; an allowed one runs."""
    runs: list[str] = []
    registry = from_pydantic_ai(_pydantic_tools(runs))
    executor = Executor(registry, policy=Policy(allow=["look"], deny=["remove"]))
    script = Script([("remove", {"path": "x"}), ("look", {"path": "y"})])
    result = await _agent(executor, script).run("clean up")
    assert isinstance(result.output, str)
    assert "Error (denied)" in result.output
    assert "success: saw y" in result.output
    assert runs == ["look y"]


async def test_an_imported_tool_runs_through_the_executor() -> None:
    """An imported tool runs with invokit-validated arguments; its ModelRetry is a retry
    result; bad arguments never reach it."""
    runs: list[str] = []
    executor = Executor(from_pydantic_ai(_pydantic_tools(runs)), policy=Policy(allow=["*"]))
    ok = await executor.execute(ToolCall(id="1", name="look", arguments={"path": "y"}))
    assert isinstance(ok, Completed) and ok.result.text == "saw y"
    retry = await executor.execute(ToolCall(id="2", name="look", arguments={"path": "missing"}))
    assert isinstance(retry, Completed) and retry.result.error is not None
    assert retry.result.error.kind == "retry"
    bad = await executor.execute(ToolCall(id="3", name="look", arguments={"path": 3}))
    assert isinstance(bad, Failed) and bad.result.error is not None
    assert bad.result.error.kind == "invalid_arguments"
    assert runs == ["look y", "look missing"]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(lambda: [PydanticTool(_takes_context)], id="run-context"),
        pytest.param(lambda: ["not a tool"], id="not-a-tool"),
    ],
)
def test_what_cannot_be_imported_is_refused_at_import(source: Callable[[], Any]) -> None:
    """A tool that needs a pydantic-ai run, or something that is no tool, is refused."""
    with pytest.raises(InvalidToolDefinition):
        from_pydantic_ai(source())


def _takes_context(ctx: RunContext[None], path: str) -> str:
    """Uses the run."""
    return path


async def test_edited_arguments_that_the_policy_allows_run_once_as_edited() -> None:
    """Arguments overridden at approval run instead of the model's, once."""
    notes = Notes()
    executor = Executor(notes.registry())
    agent = _agent(executor, Script([("notes_write", {"name": "b", "text": "beta"})]))
    first = await agent.run("write b")
    requests = _asked(first.output)
    edit = ToolApproved(override_args={"name": "c", "text": "gamma"})
    results = await approval_results(executor, requests, {"call-0": edit}, by="ana")
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert second.output == "success: wrote c"
    assert notes.runs == [("write", {"name": "c", "text": "gamma"})]


async def test_a_session_approval_covers_later_calls_of_the_conversation() -> None:
    """Approved for the session, a later write in the same conversation runs without asking."""
    notes = Notes()
    executor = Executor(notes.registry())
    script = Script(
        [("notes_write", {"name": "b", "text": "beta"})],
        [("notes_write", {"name": "c", "text": "gamma"})],
    )
    agent = _agent(executor, script)
    first = await agent.run("write b, then c")
    requests = _asked(first.output)
    results = await approval_results(executor, requests, {"call-0": True}, scope="session")
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert second.output == "success: wrote c"
    assert [args["name"] for _, args in notes.runs] == ["b", "c"]
    assert await executor.approvals.list_pending() == []


async def test_an_inline_approver_decides_inside_the_run() -> None:
    """With an inline approver on the executor, pydantic-ai does not pause: the approver is
    asked and the approved call runs once."""
    notes = Notes()
    asked: list[str] = []

    async def approver(request: Any) -> bool:
        asked.append(request.tool)
        return True

    executor = Executor(notes.registry(), approver=approver)
    script = Script([("notes_write", {"name": "b", "text": "beta"})])
    result = await _agent(executor, script).run("write b")
    assert result.output == "success: wrote b"
    assert asked == ["notes.write"]
    assert notes.count("write") == 1


async def test_a_host_run_tool_is_deferred_and_its_result_reaches_the_model() -> None:
    """A declaration-only tool's call is deferred to the host with invokit's interrupt id;
    the host resumes it in invokit and the model reads the result."""
    deploy = declare(
        "deploy",
        "Deploy a service.",
        {"type": "object", "properties": {"service": {"type": "string"}}},
        annotations=ToolAnnotations(read_only=True),
    )
    executor = Executor(ToolRegistry([deploy]))
    agent = _agent(executor, Script([("deploy", {"service": "web"})]))
    first = await agent.run("deploy web")
    requests = _asked(first.output)
    assert [c.tool_call_id for c in requests.calls] == ["call-0"]
    waiting = requests.metadata["call-0"]["invokit"]
    assert waiting["kind"] == "external"
    done = await executor.resume(waiting["interrupt_id"], result="deployed web")
    assert isinstance(done, Completed)
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(calls={"call-0": done.result.text}),
    )
    assert second.output == "success: deployed web"


class Events:
    """An event sink that keeps every event."""

    types = None

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]


async def test_the_audit_log_has_the_question_and_who_answered_through_which_channel() -> None:
    """The question is audited when the run defers, the answer with who gave it and through
    which channel when the run resumes, and the call once when it runs."""
    notes = Notes()
    sink = Events()
    executor = Executor(notes.registry(), events=[sink])
    agent = _agent(executor, Script([("notes_write", {"name": "b", "text": "beta"})]))
    first = await agent.run("write b")
    requests = _asked(first.output)
    assert [e.call_id for e in sink.of("approval_requested")] == ["call-0"]
    results = await approval_results(executor, requests, {"call-0": True}, by="ana")
    await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    [resolved] = sink.of("approval_resolved")
    assert (resolved.data["by"], resolved.data["channel"], resolved.data["verdict"]) == (
        "ana",
        "api",
        "approve",
    )
    assert [e.call_id for e in sink.of("completed")] == ["call-0"]


async def test_a_yes_given_after_the_question_expired_asks_again() -> None:
    """An approval of a question that expired meanwhile runs nothing. Naming the question
    (``approval_results``), the run defers again with a new question; a plain yes names none,
    so the model reads that the question is gone and no unseen question is left waiting."""
    notes = Notes()
    executor = Executor(notes.registry(), limits=Limits(approval_ttl=0.5))
    agent = _agent(executor, Script([("notes_write", {"name": "b", "text": "beta"})]))
    first = await agent.run("write b")
    requests = _asked(first.output)
    old = requests.metadata["call-0"]["invokit"]["approval_id"]
    named = await approval_results(executor, requests, {"call-0": True})
    await anyio.sleep(0.7)
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=named)
    new = _asked(second.output).metadata["call-0"]["invokit"]["approval_id"]
    assert new != old
    await anyio.sleep(0.7)  # the new question expires unanswered too
    plain = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"call-0": True}),
    )
    assert isinstance(plain.output, str) and "approval_expired" in plain.output
    assert await executor.approvals.list_pending() == []
    assert notes.count("write") == 0


async def test_output_limits_apply_before_the_model_reads_a_result() -> None:
    """A long result reaches the model cut to the executor's output limit, and says so in
    the return's metadata."""

    @tool(read_only=True)
    async def dump() -> dict[str, str]:
        """Dump everything."""
        return {"data": "x" * 5000}

    executor = Executor([dump], limits=Limits(output=OutputLimit(max_chars=200)))
    script = Script([("dump", {})])
    await _agent(executor, script).run("dump")
    [returned] = script.read_back
    assert isinstance(returned.content, str) and len(returned.content) <= 200
    assert returned.metadata["invokit"]["truncated"] is True


async def _no_root(ctx: RunContext[None], path: str) -> None:
    if path.startswith("/"):
        raise ModelRetry("absolute paths are refused")


async def _admins_only(ctx: RunContext[None], definition: Any) -> Any:
    return None  # hidden from every run


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"args_validator": _no_root}, id="args-validator"),
        pytest.param({"prepare": _admins_only}, id="prepare"),
    ],
)
def test_a_tool_s_own_run_time_gate_is_not_skipped(options: dict[str, Any]) -> None:
    """A pydantic-ai tool's args_validator (refuses a call) or prepare (hides the tool) run
    only inside a pydantic-ai run; imported into invokit, the tool would run past them: it is
    refused at import."""
    runs: list[str] = []

    def wipe(path: str) -> str:
        """Wipe a path."""
        runs.append(path)
        return f"wiped {path}"

    with pytest.raises(InvalidToolDefinition, match="inside a pydantic-ai run"):
        from_pydantic_ai([PydanticTool(wipe, **options)])
    assert runs == []
