"""Runs that pause for approvals, credentials or host-run calls, and resume from JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from invokit import AuthRequired, Executor, ToolAnnotations, ToolContext, declare, tool
from invokit.approvals import ApprovalDecision
from invokit.execution import ApprovalRequired, AuthorizationRequired, ExternalCall
from invokit.loop import (
    Credentials,
    ExternalResult,
    RunInterrupted,
    RunOutcome,
    RunResult,
    RunState,
    UserMessage,
    resume,
    run,
)
from invokit.testing import ScriptedModel, call, turn

from ._support import add, assert_valid, notebook, results_of


def _paused(outcome: RunOutcome) -> RunInterrupted:
    assert isinstance(outcome, RunInterrupted)
    return outcome


def _done(outcome: RunOutcome) -> RunResult:
    assert isinstance(outcome, RunResult)
    return outcome


@pytest.mark.anyio
async def test_an_approval_pauses_the_run_and_json_state_resumes_it(tmp_path: Path) -> None:
    """The paused state survives JSON; once approved the call runs once, the call that ran
    before the pause keeps its result, and the model continues."""
    notes = tmp_path / "notes.txt"
    ran: list[int] = []

    @tool(read_only=True)
    def count() -> int:
        """Count invocations."""
        ran.append(1)
        return len(ran)

    executor = Executor([count, notebook(notes)])
    model = ScriptedModel([turn(call("count"), call("notes.append", {"text": "hi"})), "saved"])
    paused = _paused(await run(model, executor, [UserMessage(text="note hi")]))
    (interrupt,) = paused.interrupts
    assert isinstance(interrupt, ApprovalRequired)
    assert interrupt.call.name == "notes.append"
    assert not notes.exists()
    text = json.dumps(paused.state.to_dict())
    assert RunState.from_json(text) == paused.state

    done = _done(await resume(model, executor, text, {interrupt.id: True}))
    assert done.output == "saved"
    assert notes.read_text() == "hi\n"
    assert ran == [1]
    assert [r.structured for r in results_of(done.messages)] == [1, "appended 'hi'"]
    assert (done.turns, done.tool_calls) == (2, 2)
    assert_valid(done.messages)


@pytest.mark.anyio
async def test_a_denied_call_gets_an_error_result_and_the_run_goes_on(tmp_path: Path) -> None:
    """A denial, keyed by call id, becomes the call's result; the model reads it."""
    notes = tmp_path / "notes.txt"
    executor = Executor([notebook(notes)])
    model = ScriptedModel([turn(call("notes.append", {"text": "x"}, id="c1")), "ok, not saved"])
    paused = _paused(await run(model, executor, [UserMessage(text="x")]))
    done = _done(
        await resume(
            model, executor, paused.state, {"c1": ApprovalDecision.deny("not today", by="ann")}
        )
    )
    (result,) = results_of(done.messages)
    assert result.error is not None
    assert result.error.kind == "approval_denied"
    assert done.output == "ok, not saved"
    assert not notes.exists()


@pytest.mark.anyio
async def test_an_approval_decided_in_the_store_needs_no_decision(tmp_path: Path) -> None:
    """Left out of ``decisions``, an approval is read from the store: still pending, the run
    stays paused; decided there (as ``invokit approvals`` does), it runs."""
    notes = tmp_path / "notes.txt"
    executor = Executor([notebook(notes)])
    model = ScriptedModel([turn(call("notes.append", {"text": "x"})), "done"])
    first = _paused(await run(model, executor, [UserMessage(text="x")]))
    again = _paused(await resume(model, executor, first.state.to_dict()))
    assert again.interrupts == first.interrupts
    await executor.approvals.resolve(
        first.interrupts[0].id, ApprovalDecision.approve(by="terminal")
    )
    done = _done(await resume(model, executor, again.state))
    assert notes.read_text() == "x\n"
    assert done.reason == "final"


@pytest.mark.anyio
async def test_host_run_calls_and_credentials_resume_with_their_answers() -> None:
    """An external call takes the host's result and an auth interrupt takes credentials;
    one left unanswered keeps the run paused with the others' results kept."""

    @tool(read_only=True)
    def whoami(ctx: ToolContext) -> str:
        """Who the credentials belong to."""
        token = ctx.credentials.get("token")
        if token is None:
            raise AuthRequired("github", scopes=["read:user"])
        return f"user of {token}"

    pick = declare(
        "ui.pick", "Ask the person to pick a colour.", annotations=ToolAnnotations(read_only=True)
    )
    executor = Executor([whoami, pick])
    model = ScriptedModel([turn(call("whoami"), call("ui.pick")), "thanks"])
    paused = _paused(await run(model, executor, [UserMessage(text="x")]))
    auth, external = paused.interrupts
    assert isinstance(auth, AuthorizationRequired)
    assert isinstance(external, ExternalCall)
    assert auth.scopes == ("read:user",)

    half = _paused(
        await resume(
            model, executor, paused.state.to_json(), {external.id: ExternalResult(value="red")}
        )
    )
    assert half.interrupts == (auth,)
    assert [r.structured for r in half.state.finished] == ["red"]
    done = _done(
        await resume(
            model, executor, half.state.to_json(), {auth.id: Credentials(values={"token": "t1"})}
        )
    )
    assert [r.structured for r in results_of(done.messages)] == ["user of t1", "red"]
    assert_valid(done.messages)


@pytest.mark.anyio
async def test_a_limit_reached_in_a_paused_turn_still_ends_the_run(tmp_path: Path) -> None:
    """The call budget used up by the paused turn ends the run after resuming, without
    asking the model again."""
    executor = Executor([add, notebook(tmp_path / "n.txt")])
    model = ScriptedModel(
        [
            turn(
                call("notes.append", {"text": "a"}),
                call("add", {"a": 1, "b": 1}),
                call("add", {"a": 2, "b": 2}),
            ),
            "never",
        ]
    )
    paused = _paused(await run(model, executor, [UserMessage(text="x")], max_tool_calls=2))
    assert paused.state.ending == "max_tool_calls"
    done = _done(
        await resume(model, executor, paused.state.to_json(), {paused.interrupts[0].id: True})
    )
    assert done.reason == "max_tool_calls"
    assert model.remaining == 1
    kinds = [r.error.kind if r.error else None for r in results_of(done.messages)]
    assert kinds == [None, None, "max_tool_calls"]


@pytest.mark.parametrize(
    ("decision", "error"),
    [
        pytest.param({"nope": True}, KeyError, id="unknown-id"),
        pytest.param({"c1": Credentials(values={})}, TypeError, id="wrong-kind"),
    ],
)
@pytest.mark.anyio
async def test_decisions_that_fit_no_waiting_call_raise(
    tmp_path: Path, decision: dict[str, Any], error: type[Exception]
) -> None:
    """A decision naming no waiting call, or of the wrong kind, is a usage error."""
    executor = Executor([notebook(tmp_path / "n.txt")])
    model = ScriptedModel([turn(call("notes.append", {"text": "x"}, id="c1"))])
    paused = _paused(await run(model, executor, [UserMessage(text="x")]))
    with pytest.raises(error):
        await resume(model, executor, paused.state, decision)


@pytest.mark.anyio
async def test_a_bad_decision_leaves_every_approval_unused(tmp_path: Path) -> None:
    """Decisions are checked before any is used: after a refused set, a corrected one runs
    both calls."""
    notes = tmp_path / "n.txt"
    executor = Executor([notebook(notes)])
    model = ScriptedModel(
        [
            turn(
                call("notes.append", {"text": "a"}, id="c1"),
                call("notes.append", {"text": "b"}, id="c2"),
            ),
            "done",
        ]
    )
    paused = _paused(await run(model, executor, [UserMessage(text="x")]))
    with pytest.raises(TypeError):
        await resume(model, executor, paused.state, {"c1": True, "c2": ExternalResult(value=1)})
    assert not notes.exists()
    done = _done(await resume(model, executor, paused.state, {"c1": True, "c2": True}))
    assert notes.read_text() == "a\nb\n"
    assert done.reason == "final"
