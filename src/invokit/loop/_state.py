"""How a run ends: finished (:class:`RunResult`) or paused (:class:`RunInterrupted`).

A paused run's :class:`RunState` is plain data with a JSON form: the transcript, the calls
still waiting (their interrupts), the results of the same turn that are already known, and the
run's counters and limits. Store it anywhere; ``resume`` continues it, in another process if
need be (with an approval store both processes share, such as ``SqliteApprovalStore``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from invokit._calls import ToolResult
from invokit.execution import Interrupt, interrupt_from_dict
from invokit.loop._messages import Message, message_from_dict, message_to_dict

StopReason: TypeAlias = Literal["final", "max_turns", "max_tool_calls", "stuck", "halted"]
"""Why a run finished: the model answered without calls, a limit was reached, the model
repeated itself, or a hook halted the run."""

STATE_VERSION = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class RunResult:
    """A finished run."""

    messages: list[Message]
    """The whole transcript; every tool call in it has exactly one result."""
    reason: StopReason
    """Why the run finished."""
    output: str = ""
    """The model's last text (its answer when ``reason`` is ``final``)."""
    detail: str | None = None
    """What happened, in words, when the run ended for another reason than an answer."""
    turns: int = 0
    """Model turns taken."""
    tool_calls: int = 0
    """Tool calls handed to the executor."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RunState:
    """Everything needed to continue a paused run; see :meth:`to_json`."""

    messages: tuple[Message, ...]
    """The transcript up to and including the turn whose calls wait."""
    pending: tuple[Interrupt, ...]
    """What the waiting calls need: an approval, credentials, or a host-run result."""
    finished: tuple[ToolResult, ...] = ()
    """Results of the same turn that are already known."""
    warn: tuple[str, ...] = ()
    """Ids of calls of that turn whose results get the stuck warning."""
    turns: int = 0
    tool_calls: int = 0
    stuck_counts: dict[str, int] = field(default_factory=dict)
    """Identical-call counts so far (signature → count)."""
    ending: StopReason | None = None
    """Set when the run ends once this turn's results are in (a limit was reached)."""
    ending_detail: str | None = None
    max_turns: int = 10
    max_tool_calls: int | None = None
    stuck_after: int | None = 3
    session_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``version`` 1)."""
        return {
            "version": STATE_VERSION,
            "messages": [message_to_dict(m) for m in self.messages],
            "pending": [interrupt.to_dict() for interrupt in self.pending],
            "finished": [result.to_dict() for result in self.finished],
            "warn": list(self.warn),
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "stuck_counts": dict(self.stuck_counts),
            "ending": self.ending,
            "ending_detail": self.ending_detail,
            "max_turns": self.max_turns,
            "max_tool_calls": self.max_tool_calls,
            "stuck_after": self.stuck_after,
            "session_id": self.session_id,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        """Rebuild a state from :meth:`to_dict`'s output.

        Raises:
            ValueError: the data is from an unknown version.
        """
        version = data.get("version")
        if version != STATE_VERSION:
            raise ValueError(f"unsupported run state version {version!r}")
        return cls(
            messages=tuple(message_from_dict(m) for m in data["messages"]),
            pending=tuple(interrupt_from_dict(dict(p)) for p in data["pending"]),
            finished=tuple(ToolResult.from_dict(r) for r in data.get("finished", ())),
            warn=tuple(data.get("warn", ())),
            turns=int(data.get("turns", 0)),
            tool_calls=int(data.get("tool_calls", 0)),
            stuck_counts={str(k): int(v) for k, v in (data.get("stuck_counts") or {}).items()},
            ending=data.get("ending"),
            ending_detail=data.get("ending_detail"),
            max_turns=int(data.get("max_turns", 10)),
            max_tool_calls=data.get("max_tool_calls"),
            stuck_after=data.get("stuck_after"),
            session_id=data.get("session_id"),
        )

    def to_json(self) -> str:
        """The state as JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RunState:
        """Rebuild a state from :meth:`to_json`'s output."""
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True, kw_only=True, slots=True)
class RunInterrupted:
    """A paused run: some calls of the last turn wait for a person, credentials or the host.

    ``run`` and ``resume`` *return* this (they do not raise it): a pause is an expected
    outcome, and the caller decides when and where to continue. Give each pending interrupt a
    decision and call ``resume(model, executor, interrupted.state, decisions)``.
    """

    state: RunState

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """What the waiting calls need, in call order."""
        return self.state.pending

    @property
    def messages(self) -> list[Message]:
        """The transcript so far (the waiting calls have no results yet)."""
        return list(self.state.messages)


RunOutcome: TypeAlias = RunResult | RunInterrupted
"""What ``run`` and ``resume`` return."""
