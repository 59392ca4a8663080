"""What a host answers for each paused call when it resumes a run, and how each answer
reaches the executor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from invokit.approvals import ApprovalDecision
from invokit.execution import (
    ApprovalRequired,
    AuthorizationRequired,
    Executor,
    Interrupt,
    Outcome,
)

if TYPE_CHECKING:
    from invokit.loop._turn import Turn


@dataclass(frozen=True, kw_only=True, slots=True)
class Credentials:
    """The answer to an ``AuthorizationRequired`` interrupt: credentials for the tool."""

    values: dict[str, Any]
    """Handed to the tool as ``ctx.credentials``; never shown to the model."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ExternalResult:
    """The answer to an ``ExternalCall`` interrupt: what the host-run tool returned."""

    value: Any
    """A JSON-safe value, turned into the call's result like any tool's return value."""


Resolution: TypeAlias = bool | ApprovalDecision | Credentials | ExternalResult
"""One decision for one paused call: ``True`` / ``False`` or an :class:`ApprovalDecision`
for an approval, :class:`Credentials` for authorization, :class:`ExternalResult` for a
host-run call."""


async def answer(
    executor: Executor, interrupt: Interrupt, resolution: Resolution | None
) -> Outcome | None:
    """The executor's outcome for ``interrupt`` given ``resolution``; ``None``: still waits."""
    if isinstance(interrupt, ApprovalRequired):
        if resolution is None:  # maybe decided elsewhere; the store knows
            return await executor.resume(interrupt.id)
        if isinstance(resolution, bool):
            return await executor.resume(interrupt.id, approve=resolution)
        assert isinstance(resolution, ApprovalDecision)
        return await executor.resume(
            interrupt.id,
            approve=resolution.approved,
            reason=resolution.reason,
            arguments=resolution.arguments,
            scope=resolution.scope,
            by=resolution.by,
            credentials=resolution.credentials,
        )
    if resolution is None:
        return None
    if isinstance(resolution, Credentials):
        return await executor.resume(interrupt, credentials=resolution.values)
    assert isinstance(resolution, ExternalResult)
    return await executor.resume(interrupt, result=resolution.value)


def _fits(interrupt: Interrupt, resolution: Resolution) -> bool:
    if isinstance(interrupt, ApprovalRequired):
        return isinstance(resolution, bool | ApprovalDecision)
    if isinstance(interrupt, AuthorizationRequired):
        return isinstance(resolution, Credentials)
    return isinstance(resolution, ExternalResult)


def match_decisions(turn: Turn, decisions: Mapping[str, Resolution]) -> dict[str, Resolution]:
    """Decisions keyed by call id; each key may be an interrupt id or a call id. All are
    checked before any is used, so a mistake leaves every approval unused."""
    by_key: dict[str, str] = {}
    for call_id, interrupt in turn.pending.items():
        by_key[interrupt.id] = call_id
        by_key[call_id] = call_id
    answers: dict[str, Resolution] = {}
    for key, resolution in decisions.items():
        if key not in by_key:
            waiting = ", ".join(sorted(i.id for i in turn.pending.values()))
            raise KeyError(f"no waiting call has the id {key!r}; waiting: {waiting}")
        interrupt = turn.pending[by_key[key]]
        if not _fits(interrupt, resolution):
            raise TypeError(
                f"a {type(resolution).__name__} cannot answer the {interrupt.kind} interrupt "
                f"{interrupt.id} (call {interrupt.call.id})"
            )
        answers[by_key[key]] = resolution
    return answers
