"""Acting on the verdict: what the executor does with a decided call (step 5).

The decision is made in ``_decision.py``; here it is acted on, once: the rules allow it, it
runs; a standing answer covers it, it runs under that authority; a person approved it
elsewhere, that approval is used up and it runs; otherwise a person is asked (or this call's
own earlier question is joined again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit.execution import _approving
from invokit.execution._deciding import decide_step, validate_and_decide
from invokit.execution._outcomes import Failed, Outcome
from invokit.execution._prepared import Prepared
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._decision import Snapshot
    from invokit.execution._doors import Guarding


async def guarded(
    ex: Guarding,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
    *,
    approved: ApprovalRequest | None,
) -> Outcome:
    """The verdict on ``args`` (``_decision.decide``), acted on: run, refuse, run under a
    standing answer or an approval given elsewhere, or ask. ``approved`` is the request a
    person approved for exactly these arguments, if any. Executions of the same call at once
    take turns (``_same_call``): each decides on what the one before it left."""
    if type(call.id) is not str:
        return await _guarded(ex, prepared, call, args, ctx, start, approved)
    key = (call.id, call.session_id)
    turns = ex._same_call
    try:
        async with turns.enter(key):
            return await _guarded(ex, prepared, call, args, ctx, start, approved)
    finally:
        turns.leave(key)


async def _guarded(
    ex: Guarding,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
    approved: ApprovalRequest | None,
) -> Outcome:
    decided = await decide_step(ex, prepared, call, args, ctx, start)
    if isinstance(decided, Failed):
        return decided
    verdict, decision = decided.verdict, decided.decision
    known: Snapshot | None = decided.snapshot
    # The approvals part acts on what the decision read (``known``): this call's earlier
    # question is read from the store once, by the decision when it read the store (an ask),
    # else by the approvals part itself (``_approving.earlier_of``).
    if approved is not None or (verdict.action == "allow" and verdict.by == "policy"):
        if approved is None and prepared.withdraws and not ex._asked_never(call):
            await _approving.ran_without(ex, call, None, known)
        return await ex._run(prepared, call, args, ctx, start, approved=approved, decision=decision)
    if verdict.by in ("always", "session"):  # a standing answer: the call runs under it
        await _approving.ran_without(ex, call, None, known)
        return await ex._run(
            prepared,
            call,
            args,
            ctx,
            start,
            approved=None,
            decision=decision,
            authority=verdict.authority,
        )
    if verdict.by == "approval" and verdict.approval is not None:
        used = await _approving.use_approval(ex, prepared, call, verdict.approval)
        if used is not None:
            await _approving.ran_without(ex, call, used, known)
            return await ex._run(prepared, call, args, ctx, start, approved=used, decision=decision)
        known = None  # the store changed under what was read: the approvals part reads anew
    # Asked about: this call's own earlier question is joined again (``rejoin``), else
    # a person is asked.
    return await _approving.ask(ex, prepared, call, args, verdict, ctx, start, known)


async def rewritten(
    ex: Guarding,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    ctx: ToolContext,
    start: float,
    approved: ApprovalRequest | None,
) -> Outcome:
    """Arguments a ``before_call`` hook rewrote, validated and decided again, and the verdict
    acted on: run (the hooks ran already), run under a standing answer or an approval given
    elsewhere, or ask. ``approved``: the request a person approved for this call, which
    covers the rewrite only when it names exactly these arguments."""
    checked = await validate_and_decide(
        ex, prepared, call, args, ctx, start, "The arguments a hook rewrote"
    )
    if isinstance(checked, Failed):
        return checked
    current, verdict = checked.args, checked.verdict
    authority = None  # what the rewritten arguments run under, decided again here
    asked = verdict.action != "allow" or verdict.by != "policy"
    if asked and not (approved is not None and approved.arguments == current):
        if verdict.by in ("always", "session"):
            authority = verdict.authority
        elif verdict.by != "approval" or verdict.approval is None:
            return await _approving.ask(
                ex, prepared, call, current, verdict, ctx, start, checked.snapshot
            )
        elif await _approving.use_approval(ex, prepared, call, verdict.approval) is None:
            # The store changed under what was read: the approvals part reads anew.
            return await _approving.ask(ex, prepared, call, current, verdict, ctx, start, None)
    return await ex._run(
        prepared,
        call,
        current,
        ctx,
        start,
        approved=approved,
        decision=checked.decision,
        rewritten=True,
        authority=authority,
    )
