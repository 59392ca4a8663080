"""invokit tools inside real openai-agents agents (its ScriptedModel, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, RunState, Tool, function_tool
from agents.items import TResponseOutputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from invokit import Completed, Executor, Failed, Limits, ToolCall, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.exceptions import InvalidToolDefinition
from invokit.execution import Event
from invokit.integrations.openai_agents import InvokitTools, from_openai_agents, function_tools
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

OFFLINE = RunConfig(tracing_disabled=True)


class Notes:
    """A notebook whose tool bodies count every run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def registry(self) -> ToolRegistry:
        @tool(name="notes.read", read_only=True)
        async def read(name: str) -> str:
            """Read a note."""
            self.runs.append(("read", {"name": name}))
            return f"{name}: alpha"

        @tool(name="notes.write")
        async def write(name: str, text: str) -> str:
            """Write a note."""
            self.runs.append(("write", {"name": name, "text": text}))
            return f"wrote {name}"

        @tool(name="notes.delete", destructive=True)
        async def delete(name: str) -> str:
            """Delete a note."""
            self.runs.append(("delete", {"name": name}))
            return f"deleted {name}"

        return ToolRegistry([read, write, delete])

    def count(self, name: str) -> int:
        return sum(1 for ran, _ in self.runs if ran == name)


def _outputs(call: ModelCall) -> list[str]:
    return [
        str(item["output"])
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def _read_back(call: ModelCall) -> list[TResponseOutputItem]:
    """The model's last turn: it says what the tools returned."""
    return [assistant_message(" | ".join(_outputs(call)))]


def _model(name: str, arguments: dict[str, Any], call_id: str = "c1") -> ScriptedModel:
    return ScriptedModel(
        [[function_call(name, arguments, call_id=call_id)], ModelStep.respond(_read_back)]
    )


def _agent(tools: list[FunctionTool], model: ScriptedModel) -> Agent[Any]:
    return Agent(name="notes", model=model, tools=list[Tool](tools))


async def test_a_read_runs_and_the_model_reads_its_result() -> None:
    """An allowed call runs once through the executor, without asking, and the model reads
    its output."""
    notes = Notes()
    tools = function_tools(Executor(notes.registry()))
    assert [t.name for t in tools] == ["notes_delete", "notes_read", "notes_write"]
    result = await Runner.run(
        _agent(tools, _model("notes_read", {"name": "a"})), "read a", run_config=OFFLINE
    )
    assert result.interruptions == []
    assert result.final_output == "a: alpha"
    assert notes.runs == [("read", {"name": "a"})]


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        pytest.param("notes_delete", {"name": "a"}, "denied", id="deny-rule"),
        pytest.param("notes_read", {"name": 3}, "invalid_arguments", id="invalid"),
    ],
)
async def test_a_refused_call_is_a_tool_error_the_model_reads(
    name: str, arguments: dict[str, Any], kind: str
) -> None:
    """A call invokit refuses is not asked about; the model reads the error and nothing runs."""
    notes = Notes()
    executor = Executor(notes.registry(), policy=Policy(deny=["notes.delete"]))
    model = _model(name, arguments)
    agent = _agent(function_tools(executor, strict=False), model)
    result = await Runner.run(agent, "go", run_config=OFFLINE)
    assert result.interruptions == []
    assert result.final_output.startswith(f"Error ({kind}): ")
    assert notes.runs == []
    assert await executor.approvals.list_pending() == []


async def test_an_approval_is_an_interruption_resumed_through_run_state_and_runs_once() -> None:
    """invokit's ask interrupts the run (and waits in invokit's store); approved in RunState
    through the tools, the resumed run writes once, recorded with who approved."""
    notes = Notes()
    executor = Executor(notes.registry())
    tools = InvokitTools(executor)
    agent = _agent(tools.tools, _model("notes_write", {"name": "b", "text": "beta"}))
    first = await Runner.run(agent, "write b", run_config=OFFLINE)
    assert [item.call_id for item in first.interruptions] == ["c1"]
    waiting = await executor.approvals.list_pending()
    assert [(r.call.id, r.tool) for r in waiting] == [("c1", "notes.write")]
    assert notes.count("write") == 0

    state = first.to_state()
    await tools.approve(state, first.interruptions[0], by="ana")
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.interruptions == []
    assert second.final_output == "wrote b"
    assert notes.count("write") == 1
    record = await executor.approvals.get(waiting[0].id)
    assert record.status == "consumed"
    assert record.decision is not None and record.decision.by == "ana"


async def test_a_serialized_run_state_resumes_on_a_second_executor(tmp_path: Path) -> None:
    """RunState kept as JSON and approved the plain openai-agents way resumes with another
    executor on the same SQLite store; the call runs once, approved by openai-agents."""
    notes = Notes()
    store = tmp_path / "approvals.db"
    first_executor = Executor(notes.registry(), approvals=SqliteApprovalStore(store))
    model = _model("notes_write", {"name": "b", "text": "beta"})
    first = await Runner.run(
        _agent(function_tools(first_executor), model), "write b", run_config=OFFLINE
    )
    kept = first.to_state().to_json()
    await first_executor.aclose()

    second_executor = Executor(notes.registry(), approvals=SqliteApprovalStore(store))
    agent = _agent(function_tools(second_executor), model)
    state = await RunState.from_json(agent, kept)
    state.approve(state.get_interruptions()[0])
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.final_output == "wrote b"
    assert notes.count("write") == 1
    record = await second_executor.approvals.find_by_call(
        "c1", session_id=None, project=second_executor.project
    )
    assert record is not None and record.status == "consumed"
    assert record.decision is not None and record.decision.by == "openai-agents"
    await second_executor.aclose()


async def test_a_rejection_is_recorded_in_invokit_and_read_by_the_model() -> None:
    """A person's no in RunState, given through the tools, denies the invokit approval too;
    the model reads the message and nothing runs."""
    notes = Notes()
    executor = Executor(notes.registry())
    tools = InvokitTools(executor)
    agent = _agent(tools.tools, _model("notes_write", {"name": "b", "text": "beta"}))
    first = await Runner.run(agent, "write b", run_config=OFFLINE)
    [waiting] = await executor.approvals.list_pending()
    state = first.to_state()
    await tools.reject(state, first.interruptions[0], message="not today", by="ana")
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.final_output == "not today"
    record = await executor.approvals.get(waiting.id)
    assert record.status == "denied"
    assert record.decision is not None and record.decision.by == "ana"
    assert notes.count("write") == 0


async def test_a_no_given_in_invokit_wins_over_a_yes_in_run_state() -> None:
    """An approval denied in invokit (say with ``invokit approvals deny``) stays denied when
    RunState approves it: the model reads the denial and nothing runs."""
    notes = Notes()
    executor = Executor(notes.registry())
    agent = _agent(function_tools(executor), _model("notes_write", {"name": "b", "text": "x"}))
    first = await Runner.run(agent, "write b", run_config=OFFLINE)
    [waiting] = await executor.approvals.list_pending()
    await executor.resume(waiting.id, approve=False, reason="never", by="bo")
    state = first.to_state()
    state.approve(first.interruptions[0])
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.final_output.startswith("Error (approval_denied): ")
    assert "never" in second.final_output
    assert notes.count("write") == 0


async def test_a_rejection_withdraws_a_yes_given_elsewhere_that_has_not_run() -> None:
    """Approved in invokit (the CLI) while the run waits, then rejected in RunState through
    the tools: a "no" wins over a "yes" that has not run, so the approval can never run (not
    by an identical call later either)."""
    from invokit.approvals import ApprovalDecision

    notes = Notes()
    executor = Executor(notes.registry())
    tools = InvokitTools(executor)
    agent = _agent(tools.tools, _model("notes_write", {"name": "b", "text": "beta"}))
    first = await Runner.run(agent, "write b", run_config=OFFLINE)
    [waiting] = await executor.approvals.list_pending()
    await executor.approvals.resolve(waiting.id, ApprovalDecision.approve(by="bob"))
    state = first.to_state()
    await tools.reject(state, first.interruptions[0], message="not today", by="ana")
    await Runner.run(agent, state, run_config=OFFLINE)
    assert (await executor.approvals.get(waiting.id)).status == "denied"
    again = ToolCall(id="c9", name="notes.write", arguments={"name": "b", "text": "beta"})
    assert not isinstance(await executor.execute(again), Completed)
    assert notes.count("write") == 0


# -- openai-agents tools imported into invokit ----------------------------------------------


def _agents_tools(runs: list[str]) -> list[FunctionTool]:
    @function_tool(failure_error_function=None)
    def remove(path: str) -> str:
        """Remove a file."""
        runs.append(f"remove {path}")
        return f"removed {path}"

    @function_tool(needs_approval=True)
    def publish(path: str) -> str:
        """Publish a file."""
        runs.append(f"publish {path}")
        return f"published {path}"

    @function_tool(failure_error_function=None)
    def look(path: str) -> str:
        """Look at a file."""
        runs.append(f"look {path}")
        if path == "missing":
            raise FileNotFoundError(path)
        return f"saw {path}"

    return [remove, publish, look]


async def test_an_imported_agents_tool_is_denied_by_an_invokit_rule() -> None:
    """An openai-agents tool in an invokit registry is refused by an invokit deny rule, inside
    a real agent, and never runs."""
    runs: list[str] = []
    executor = Executor(from_openai_agents(_agents_tools(runs)), policy=Policy(deny=["remove"]))
    agent = _agent(function_tools(executor), _model("remove", {"path": "x"}))
    result = await Runner.run(agent, "clean up", run_config=OFFLINE)
    assert result.final_output.startswith("Error (denied): ")
    assert runs == []


async def test_an_imported_tool_runs_through_the_executor() -> None:
    """An imported tool runs with invokit-validated arguments; its exception is an error
    result; its needs_approval=True makes invokit ask."""
    runs: list[str] = []
    executor = Executor(from_openai_agents(_agents_tools(runs)), policy=Policy(allow=["look"]))
    ok = await executor.execute(ToolCall(id="1", name="look", arguments={"path": "y"}))
    assert isinstance(ok, Completed) and ok.result.text == "saw y"
    broken = await executor.execute(ToolCall(id="2", name="look", arguments={"path": "missing"}))
    assert isinstance(broken, Completed) and broken.result.is_error
    bad = await executor.execute(ToolCall(id="3", name="look", arguments={"path": 3}))
    assert isinstance(bad, Failed)
    check = await executor.check(ToolCall(id="4", name="publish", arguments={"path": "y"}))
    assert check.action == "ask"
    assert runs == ["look y", "look missing"]


async def test_an_imported_needs_approval_function_is_asked_with_the_arguments() -> None:
    """An imported tool's needs_approval function decides, per call, whether invokit asks."""
    runs: list[str] = []

    async def outside_tmp(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
        return not str(params.get("path", "")).startswith("tmp/")

    @function_tool(needs_approval=outside_tmp)
    def erase(path: str) -> str:
        """Erase a file."""
        runs.append(path)
        return f"erased {path}"

    executor = Executor(from_openai_agents([erase]), policy=Policy(allow=["erase"]))
    scratch = await executor.execute(ToolCall(id="1", name="erase", arguments={"path": "tmp/a"}))
    assert isinstance(scratch, Completed) and scratch.result.text == "erased tmp/a"
    kept = await executor.check(ToolCall(id="2", name="erase", arguments={"path": "src/a"}))
    assert kept.action == "ask"
    assert runs == ["tmp/a"]


def test_what_is_no_function_tool_is_refused_at_import() -> None:
    """Only FunctionTools can be imported."""
    with pytest.raises(InvalidToolDefinition):
        from_openai_agents(["not a tool"])  # type: ignore[list-item]


async def test_a_session_approval_covers_later_calls_of_the_session() -> None:
    """Approved for the session through the tools, a later write of the same session runs
    without another interruption."""
    notes = Notes()
    executor = Executor(notes.registry())
    tools = InvokitTools(executor, session_id="s1")

    def again(call: ModelCall) -> list[TResponseOutputItem]:
        return [function_call("notes_write", {"name": "c", "text": "gamma"}, call_id="c2")]

    model = ScriptedModel(
        [
            [function_call("notes_write", {"name": "b", "text": "beta"}, call_id="c1")],
            ModelStep.respond(again),
            ModelStep.respond(_read_back),
        ]
    )
    agent = _agent(tools.tools, model)
    first = await Runner.run(agent, "write b, then c", run_config=OFFLINE)
    state = first.to_state()
    await tools.approve(state, first.interruptions[0], by="ana", scope="session")
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.interruptions == []
    assert second.final_output.endswith("wrote c")
    assert [args["name"] for _, args in notes.runs] == ["b", "c"]


async def test_an_inline_approver_decides_inside_the_run() -> None:
    """With an inline approver on the executor, the run is not interrupted: the approver is
    asked when the tool is invoked and the approved call runs once."""
    notes = Notes()
    asked: list[str] = []

    async def approver(request: Any) -> bool:
        asked.append(request.tool)
        return True

    executor = Executor(notes.registry(), approver=approver)
    agent = _agent(function_tools(executor), _model("notes_write", {"name": "b", "text": "x"}))
    result = await Runner.run(agent, "write b", run_config=OFFLINE)
    assert result.interruptions == []
    assert result.final_output == "wrote b"
    assert asked == ["notes.write"]
    assert notes.count("write") == 1


async def test_a_sticky_run_state_yes_approves_each_later_ask_of_the_run() -> None:
    """openai-agents' always_approve answers invokit's later asks of that tool in the run,
    each recorded as its own approval; a deny rule still wins over it."""
    notes = Notes()
    executor = Executor(notes.registry(), policy=Policy(deny=["notes.write(name=secret*)"]))

    def again(call: ModelCall) -> list[TResponseOutputItem]:
        return [
            function_call("notes_write", {"name": "c", "text": "gamma"}, call_id="c2"),
            function_call("notes_write", {"name": "secret", "text": "x"}, call_id="c3"),
        ]

    model = ScriptedModel(
        [
            [function_call("notes_write", {"name": "b", "text": "beta"}, call_id="c1")],
            ModelStep.respond(again),
            ModelStep.respond(_read_back),
        ]
    )
    agent = _agent(function_tools(executor), model)
    first = await Runner.run(agent, "write b, c and secret", run_config=OFFLINE)
    state = first.to_state()
    state.approve(first.interruptions[0], always_approve=True)
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.interruptions == []
    assert second.final_output.startswith("wrote b | wrote c | Error (denied): ")
    assert [args["name"] for _, args in notes.runs] == ["b", "c"]
    for call_id in ("c1", "c2"):
        record = await executor.approvals.find_by_call(
            call_id, session_id=None, project=executor.project
        )
        assert record is not None and record.status == "consumed"
        assert record.decision is not None and record.decision.by == "openai-agents"


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
    """The question is audited when the run is interrupted, the answer given through the tools
    when it is given (who, and the api channel), and the call once when it runs."""
    notes = Notes()
    sink = Events()
    executor = Executor(notes.registry(), events=[sink])
    tools = InvokitTools(executor)
    agent = _agent(tools.tools, _model("notes_write", {"name": "b", "text": "beta"}))
    first = await Runner.run(agent, "write b", run_config=OFFLINE)
    assert [e.call_id for e in sink.of("approval_requested")] == ["c1"]
    state = first.to_state()
    await tools.approve(state, first.interruptions[0], by="ana")
    [resolved] = sink.of("approval_resolved")
    assert (resolved.data["by"], resolved.data["channel"], resolved.data["verdict"]) == (
        "ana",
        "api",
        "approve",
    )
    await Runner.run(agent, state, run_config=OFFLINE)
    assert [e.call_id for e in sink.of("completed")] == ["c1"]
    assert notes.count("write") == 1


async def test_a_yes_given_after_the_question_expired_runs_nothing() -> None:
    """A RunState approval of a question that expired meanwhile does not approve the question
    invokit asks anew: nothing runs, the model is told, and no question is left waiting."""
    notes = Notes()
    executor = Executor(notes.registry(), limits=Limits(approval_ttl=0.5))
    agent = _agent(function_tools(executor), _model("notes_write", {"name": "b", "text": "x"}))
    first = await Runner.run(agent, "write b", run_config=OFFLINE)
    await anyio.sleep(0.7)
    state = first.to_state()
    state.approve(first.interruptions[0])
    second = await Runner.run(agent, state, run_config=OFFLINE)
    assert second.final_output.startswith("Error (approval_expired): ")
    assert notes.count("write") == 0
    assert await executor.approvals.list_pending() == []


async def test_an_imported_tool_s_guardrails_are_not_skipped() -> None:
    """An input guardrail on an openai-agents tool blocks a call inside openai-agents; it runs
    only in an openai-agents run, so importing the tool into invokit (which calls
    ``on_invoke_tool`` directly) would skip it: such a tool is refused, not run unguarded."""
    from agents import ToolGuardrailFunctionOutput, ToolInputGuardrailData, tool_input_guardrail

    runs: list[str] = []

    @tool_input_guardrail
    def no_root(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        if '"/' in data.context.tool_arguments:
            return ToolGuardrailFunctionOutput.reject_content("absolute paths are refused")
        return ToolGuardrailFunctionOutput.allow()

    @function_tool(tool_input_guardrails=[no_root])
    def wipe(path: str) -> str:
        """Wipe a path."""
        runs.append(path)
        return f"wiped {path}"

    with pytest.raises(InvalidToolDefinition, match="guardrails"):
        from_openai_agents([wipe])
    assert runs == []


@pytest.mark.parametrize("enabled", [False, lambda ctx, agent: False], ids=["off", "function"])
def test_a_disabled_agents_tool_is_not_imported_enabled(enabled: Any) -> None:
    """openai-agents never offers a tool whose is_enabled says no (or decides per run);
    imported into invokit it would be callable: it is refused."""

    @function_tool(is_enabled=enabled)
    def wipe(path: str) -> str:
        """Wipe a path."""
        return f"wiped {path}"

    with pytest.raises(InvalidToolDefinition, match="is_enabled"):
        from_openai_agents([wipe])
