"""One model turn's calls on their way to results: run, refused, waiting or abandoned."""

from __future__ import annotations

from dataclasses import dataclass, field

from invokit._calls import ToolCall, ToolResult
from invokit.execution import Completed, Failed, Interrupt, Interrupted, Outcome
from invokit.loop._stuck import with_warning


@dataclass(kw_only=True, slots=True)
class Turn:
    """The calls of one assistant message and what is known about each.

    Every call ends with exactly one result: the executor's, a refusal written by the loop
    (a limit, a halt, a stuck run), or a ``cancelled`` error when the run is cancelled.
    """

    calls: tuple[ToolCall, ...]
    results: dict[str, ToolResult] = field(default_factory=dict)
    """Call id → result."""
    pending: dict[str, Interrupt] = field(default_factory=dict)
    """Call id → what the call waits for."""
    warn: frozenset[str] = frozenset()
    """Ids of calls whose results get the stuck warning."""
    warn_count: int = 0
    """The identical-call count the warning states."""

    def record(self, call: ToolCall, outcome: Outcome) -> None:
        """Keep the executor's outcome for ``call``."""
        self.pending.pop(call.id, None)
        if isinstance(outcome, Interrupted):
            self.pending[call.id] = outcome.interrupt
        else:
            assert isinstance(outcome, Completed | Failed)
            self.results[call.id] = outcome.result

    def refuse(self, calls: tuple[ToolCall, ...] | list[ToolCall], kind: str, message: str) -> None:
        """Give each of ``calls`` an error result saying why it was not run."""
        for call in calls:
            self.results[call.id] = ToolResult.failure(call, kind, message)

    def abandon(self) -> None:
        """Close every open call with a ``cancelled`` error (the run is being cancelled)."""
        open_calls = [call for call in self.calls if call.id not in self.results]
        self.pending.clear()
        self.refuse(
            open_calls,
            "cancelled",
            "The run was cancelled while this call was open; it may or may not have run.",
        )

    def ordered(self) -> tuple[ToolResult, ...]:
        """One result per call, in call order, with stuck warnings added."""
        out: list[ToolResult] = []
        for call in self.calls:
            result = self.results[call.id]
            if call.id in self.warn:
                result = with_warning(result, call, self.warn_count)
            out.append(result)
        return tuple(out)

    def waiting(self) -> tuple[Interrupt, ...]:
        """The pending interrupts in call order."""
        return tuple(self.pending[c.id] for c in self.calls if c.id in self.pending)

    def known(self) -> tuple[ToolResult, ...]:
        """The results known so far, in call order (without warnings)."""
        return tuple(self.results[c.id] for c in self.calls if c.id in self.results)
