"""Hooks around the invoke step: observe, rewrite the arguments, skip with a result, or halt."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from invokit._calls import ToolCall, ToolResult
from invokit._spec import ToolSpec
from invokit.execution._outcomes import Completed, Outcome
from invokit.execution._prepared import Prepared
from invokit.execution._records import completed_data
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._doors import Hooking


@dataclass(frozen=True, slots=True)
class Continue:
    """Go on as planned."""


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Run with these arguments instead; they are validated and checked by policy again."""

    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Skip:
    """Do not run the tool; the model reads ``result`` (its call id and name are set for you)."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class Halt:
    """Stop: the call fails with ``reason`` (kind ``halted``) and an agent loop ends its run."""

    reason: str


HookAction: TypeAlias = Continue | Rewrite | Skip | Halt


class Hook(Protocol):
    """Both methods are optional; define the ones you need. Hooks run in order.

    ``before_call`` runs after the call was validated, allowed and (where asked) approved,
    right before the tool; ``after_call`` sees every result that went through the invoke step
    and may replace it.
    """

    async def before_call(
        self, call: ToolCall, arguments: dict[str, Any], spec: ToolSpec
    ) -> HookAction | None:
        """Return ``None`` or :class:`Continue` to go on."""
        ...

    async def after_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """Return a replacement result, or ``None`` to keep it."""
        ...


async def run_before_hooks(
    ex: Hooking,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
    approved: ApprovalRequest | None,
) -> Outcome | None:
    current = args
    for hook in ex._before:
        try:
            # Each hook gets its own copy: a hook that edits in place without returning
            # Rewrite must not slip changed arguments past validation and policy.
            action = await hook.before_call(call, copy.deepcopy(current), prepared.spec)
        except Exception as exc:
            return ex._failed(call, start, "hook_failed", f"A before_call hook failed: {exc!r}")
        if isinstance(action, Halt):
            return ex._failed(call, start, "halted", action.reason)
        if isinstance(action, Skip):
            result = replace(
                action.result, call_id=call.id, name=call.name, duration=perf_counter() - start
            )
            if "completed" in ex._sinks_for:
                ex._emit(
                    "completed",
                    call,
                    {**completed_data(result, current, None, approved), "skipped": True},
                )
            return Completed(result)
        if isinstance(action, Rewrite):
            current = copy.deepcopy(action.arguments)
    if current == args:
        return None
    # Guards see what will really run: rewritten arguments go back to the decision.
    return await ex._rewritten(prepared, call, current, ctx, start, approved)
