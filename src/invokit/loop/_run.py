"""The agent loop: model → calls → executor → results → model, until an answer or a stop.

Each turn the model sees the transcript and the registry's tools; its calls go through
``Executor.execute_many`` (parallel where safe) and their results are appended, one per call,
in call order. The run finishes on an answer without calls, a limit, a halt or a stuck model,
and pauses — returning :class:`RunInterrupted` — when a call needs an approval, credentials
or a host-run result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from invokit._calls import ToolCall
from invokit.execution import (
    Executor,
    Halt,
)
from invokit.loop._decisions import Resolution, answer, match_decisions
from invokit.loop._messages import AssistantMessage, Message, ToolResultsMessage
from invokit.loop._model import Model
from invokit.loop._state import RunInterrupted, RunOutcome, RunResult, RunState, StopReason
from invokit.loop._stuck import StuckDetector, stuck_reason
from invokit.loop._turn import Turn


async def run(
    model: Model,
    executor: Executor,
    messages: list[Message],
    *,
    max_turns: int = 10,
    max_tool_calls: int | None = None,
    stuck_after: int | None = 3,
    hooks: Sequence[object] = (),
    session_id: str | None = None,
) -> RunOutcome:
    """Run the agent loop until the model answers, a limit is reached, or a call must wait.

    Args:
        model: the model (an adapter, a :class:`~invokit.testing.ScriptedModel`, or any
            object with ``respond``).
        executor: runs every call through the guarded pipeline.
        messages: the transcript so far. It is extended *in place*, so that it stays complete
            and valid (every call with exactly one result) even when the run is cancelled.
        max_turns: model turns at most; the calls of the last turn still run, then the run
            ends with reason ``max_turns``.
        max_tool_calls: tool calls at most over the run (``None``: no limit); calls past
            the limit are not run, get an error result each, and the run ends.
        stuck_after: the run ends (reason ``stuck``) when one call — same tool, same
            canonical arguments — is made this many times; the call before gets a warning.
            ``None`` turns this off.
        hooks: objects with any of ``before_model``, ``after_model``, ``on_message``
            (see :class:`RunHook`).
        session_id: stamped on every call, for session-scoped approvals and the audit log.

    Returns:
        :class:`RunResult` when the run finished, :class:`RunInterrupted` when it paused.

    Raises:
        ValueError: a limit is out of range, or ``messages`` has a call without a result.
    """
    _check_limits(max_turns, max_tool_calls, stuck_after)
    _check_transcript(messages)
    loop = _Loop(
        model,
        executor,
        messages,
        hooks,
        max_turns=max_turns,
        max_tool_calls=max_tool_calls,
        detector=StuckDetector(after=stuck_after),
        session_id=session_id,
    )
    return await loop.drive()


async def resume(
    model: Model,
    executor: Executor,
    state: RunState | Mapping[str, Any] | str,
    decisions: Mapping[str, Resolution] | None = None,
    *,
    hooks: Sequence[object] = (),
) -> RunOutcome:
    """Continue a paused run with a decision for its waiting calls.

    Args:
        model: the model, as for :func:`run`.
        executor: an executor over the same tools; in another process it must share the
            approval store (``SqliteApprovalStore``) with the one that paused.
        state: ``RunInterrupted.state``, its ``to_dict()`` or its ``to_json()``.
        decisions: by interrupt id or call id: ``True``/``False`` or an ``ApprovalDecision``
            for an approval, :class:`Credentials`, or :class:`ExternalResult`. An approval
            left out is looked up in the store (a person may have decided it with
            ``invokit approvals``); another call left out keeps waiting.
        hooks: as for :func:`run`.

    Returns:
        :class:`RunResult`, or :class:`RunInterrupted` when calls still wait.

    Raises:
        KeyError: a decision names no waiting call.
        TypeError: a decision does not fit its call's interrupt.
    """
    if isinstance(state, str):
        state = RunState.from_json(state)
    elif not isinstance(state, RunState):
        state = RunState.from_dict(state)
    last = state.messages[-1] if state.messages else None
    if not isinstance(last, AssistantMessage) or not state.pending:
        raise ValueError("the state has no waiting calls to resume")
    turn = Turn(
        calls=last.calls,
        results={result.call_id: result for result in state.finished},
        pending={interrupt.call.id: interrupt for interrupt in state.pending},
        warn=frozenset(state.warn),
        warn_count=(state.stuck_after or 1) - 1,
    )
    answers = match_decisions(turn, decisions or {})
    loop = _Loop(
        model,
        executor,
        list(state.messages),
        hooks,
        max_turns=state.max_turns,
        max_tool_calls=state.max_tool_calls,
        detector=StuckDetector(after=state.stuck_after, counts=dict(state.stuck_counts)),
        session_id=state.session_id,
        turns=state.turns,
        tool_calls=state.tool_calls,
        ending=(state.ending, state.ending_detail) if state.ending else None,
    )
    return await loop.drive(resumed=(turn, answers))


class _Loop:
    """The mutable side of one run; lives for one ``run`` or ``resume`` call."""

    def __init__(
        self,
        model: Model,
        executor: Executor,
        messages: list[Message],
        hooks: Sequence[object],
        *,
        max_turns: int,
        max_tool_calls: int | None,
        detector: StuckDetector,
        session_id: str | None,
        turns: int = 0,
        tool_calls: int = 0,
        ending: tuple[StopReason, str | None] | None = None,
    ) -> None:
        self.model = model
        self.executor = executor
        self.messages = messages
        self.before_model = [h for h in hooks if hasattr(h, "before_model")]
        self.after_model = [h for h in hooks if hasattr(h, "after_model")]
        self.watchers = [h for h in hooks if hasattr(h, "on_message")]
        self.max_turns = max_turns
        self.max_tool_calls = max_tool_calls
        self.detector = detector
        self.session_id = session_id
        self.turns = turns
        self.tool_calls = tool_calls
        self.ending = ending
        self.seen_ids = {
            call.id for m in messages if isinstance(m, AssistantMessage) for call in m.calls
        }

    async def drive(self, resumed: tuple[Turn, dict[str, Resolution]] | None = None) -> RunOutcome:
        if resumed is not None:
            turn, answers = resumed
            await self._guarded(turn, self._answer_all(turn, answers))
            paused = self._close(turn)
            if paused is not None:
                return paused
        while self.ending is None:
            halt = await self._before_model()
            if halt is not None:
                self._end("halted", halt.reason)
                break
            reply = await self.model.respond(tuple(self.messages), self.executor.registry.specs())
            self.turns += 1
            reply = self._checked(reply)
            self._append(reply)
            halt = await self._after_model(reply)
            if halt is not None:
                if reply.calls:
                    turn = Turn(calls=reply.calls)
                    turn.refuse(
                        reply.calls, "halted", f"Not run: the run was halted: {halt.reason}"
                    )
                    self._append(ToolResultsMessage(results=turn.ordered()))
                self._end("halted", halt.reason)
                break
            if not reply.calls:
                return self._result("final", None)
            turn, to_run = self._plan(reply.calls)
            if to_run:
                self.tool_calls += len(to_run)
                await self._guarded(turn, self._execute(turn, to_run))
            paused = self._close(turn)
            if paused is not None:
                return paused
        assert self.ending is not None
        reason, detail = self.ending
        return self._result(reason, detail)

    # -- a turn ---------------------------------------------------------------------------

    def _plan(self, calls: tuple[ToolCall, ...]) -> tuple[Turn, list[ToolCall]]:
        """Stuck detection and the call budget: which calls run, which are refused."""
        check = self.detector.observe(calls)
        after = self.detector.after or 1
        turn = Turn(calls=calls, warn=check.warn, warn_count=after - 1)
        if check.stuck is not None:
            reason = stuck_reason(check.stuck, check.count)
            turn.refuse(calls, "stuck", f"Not run: {reason}")
            self._end("stuck", reason)
            return turn, []
        if self.max_tool_calls is None:
            return turn, list(calls)
        budget = max(0, self.max_tool_calls - self.tool_calls)
        if len(calls) <= budget:
            return turn, list(calls)
        detail = f"The run reached its limit of {self.max_tool_calls} tool calls."
        turn.refuse(calls[budget:], "max_tool_calls", f"Not run: {detail}")
        self._end("max_tool_calls", detail)
        return turn, list(calls[:budget])

    async def _execute(self, turn: Turn, calls: list[ToolCall]) -> None:
        # Outcomes are recorded as they arrive: if the run is cancelled mid-turn, calls that
        # finished keep their real results and only the open ones are marked cancelled.
        await self.executor.execute_many(
            calls, on_outcome=lambda i, outcome: turn.record(calls[i], outcome)
        )

    async def _answer_all(self, turn: Turn, answers: dict[str, Resolution]) -> None:
        # In call order, one at a time: approved calls may be ones that must not overlap.
        for call in turn.calls:
            interrupt = turn.pending.get(call.id)
            if interrupt is None:
                continue
            outcome = await answer(self.executor, interrupt, answers.get(call.id))
            if outcome is not None:
                turn.record(call, outcome)

    async def _guarded(self, turn: Turn, work: Awaitable[None]) -> None:
        """Await ``work``; if it does not finish (cancelled, or a bug), close the turn's open
        calls with error results so the transcript stays valid, then let the exception go."""
        finished = False
        try:
            await work
            finished = True
        finally:
            if not finished:
                turn.abandon()
                self._append(ToolResultsMessage(results=turn.ordered()))

    def _close(self, turn: Turn) -> RunInterrupted | None:
        """Pause if calls wait; otherwise append the turn's results and note any ending."""
        if turn.pending:
            return RunInterrupted(state=self._state(turn))
        results = turn.ordered()
        self._append(ToolResultsMessage(results=results))
        for result in results:
            if result.error is not None and result.error.kind == "halted":
                self.ending = ("halted", result.error.message)
                return None
        if self.turns >= self.max_turns:
            self._end("max_turns", f"The run reached its limit of {self.max_turns} model turns.")
        return None

    # -- plumbing -------------------------------------------------------------------------

    def _checked(self, reply: AssistantMessage) -> AssistantMessage:
        """The reply with unique call ids (some local servers repeat or omit them), the
        session id and the turn number stamped on each call."""
        calls: list[ToolCall] = []
        for index, call in enumerate(reply.calls):
            call_id = call.id
            if not call_id or call_id in self.seen_ids:
                call_id = f"call_{self.turns}_{index}"
                while call_id in self.seen_ids:
                    call_id += "_"
            self.seen_ids.add(call_id)
            calls.append(
                replace(
                    call,
                    id=call_id,
                    session_id=self.session_id or call.session_id,
                    turn_id=call.turn_id or str(self.turns),
                )
            )
        return replace(reply, calls=tuple(calls))

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        for hook in self.watchers:
            hook.on_message(message)

    async def _before_model(self) -> Halt | None:
        for hook in self.before_model:
            action = await hook.before_model(self.turns + 1, tuple(self.messages))
            if isinstance(action, Halt):
                return action
        return None

    async def _after_model(self, reply: AssistantMessage) -> Halt | None:
        for hook in self.after_model:
            action = await hook.after_model(self.turns, reply)
            if isinstance(action, Halt):
                return action
        return None

    def _end(self, reason: StopReason, detail: str | None) -> None:
        if self.ending is None:
            self.ending = (reason, detail)

    def _result(self, reason: StopReason, detail: str | None) -> RunResult:
        last = next((m for m in reversed(self.messages) if isinstance(m, AssistantMessage)), None)
        return RunResult(
            messages=self.messages,
            reason=reason,
            output=last.text if last is not None else "",
            detail=detail,
            turns=self.turns,
            tool_calls=self.tool_calls,
        )

    def _state(self, turn: Turn) -> RunState:
        reason, detail = self.ending if self.ending is not None else (None, None)
        return RunState(
            messages=tuple(self.messages),
            pending=turn.waiting(),
            finished=turn.known(),
            warn=tuple(sorted(turn.warn)),
            turns=self.turns,
            tool_calls=self.tool_calls,
            stuck_counts=dict(self.detector.counts),
            ending=reason,
            ending_detail=detail,
            max_turns=self.max_turns,
            max_tool_calls=self.max_tool_calls,
            stuck_after=self.detector.after,
            session_id=self.session_id,
        )


def _check_limits(max_turns: int, max_tool_calls: int | None, stuck_after: int | None) -> None:
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, not {max_turns}")
    if max_tool_calls is not None and max_tool_calls < 0:
        raise ValueError(f"max_tool_calls must be 0 or more, not {max_tool_calls}")
    if stuck_after is not None and stuck_after < 2:
        # The model is told before the run ends, so one repeat must be allowed.
        raise ValueError(f"stuck_after must be at least 2, not {stuck_after}")


def _check_transcript(messages: Sequence[Message]) -> None:
    """Every call in ``messages`` has exactly one result (a provider rejects anything else)."""
    open_ids: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            open_ids.update(call.id for call in message.calls)
        elif isinstance(message, ToolResultsMessage):
            for result in message.results:
                if result.call_id not in open_ids:
                    raise ValueError(f"the result for {result.call_id!r} answers no open call")
                open_ids.discard(result.call_id)
    if open_ids:
        raise ValueError(
            f"the transcript has calls without results: {', '.join(sorted(open_ids))}; "
            "resume a paused run with resume()"
        )
