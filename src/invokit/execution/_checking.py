"""The decision without running: what ``Executor.check`` and ``Executor.explain`` say about a
call.

A framework asks before it runs a tool (openai-agents' ``needs_approval``, LangChain's
interrupt, ADK's confirmation), and re-runs the tool after a person answered. ``check`` goes
through lookup and validation, then reads the same snapshot and the same verdict as ``execute``
(:func:`~invokit.execution._decision.decide`: the rules, the host checkers, a person's "no" to
this very call, standing rules, session grants, an approval given elsewhere, this call's own
pending or answered question), and stores nothing, invokes nothing, asks nobody and reports no
event. ``explain`` shows the rules that matched, and the same verdict: where the store's answer
decides (a grant, a person's answer), it says so (``Explanation.answered``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from invokit._calls import ToolCall
from invokit.exceptions import ArgumentsError, ToolError, ToolFailed
from invokit.execution._deciding import verdict_of
from invokit.execution._decision import Verdict
from invokit.execution._records import argument_issues
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._doors import Checking
    from invokit.permissions import Explanation


@dataclass(frozen=True, kw_only=True, slots=True)
class CallCheck:
    """What the executor would do with a call, found without running it."""

    action: Literal["allow", "ask", "deny"]
    """``allow``: it would run now; ``ask``: it would wait for a person (or the inline
    approver); ``deny``: it would not run."""
    reason: str | None = None
    """Why, in words a person or a model can read."""
    rule: str | None = None
    """The policy or standing rule that decided; ``None`` when a default did."""
    error: ToolError | None = None
    """Set when the call could never run as made (unknown tool, invalid arguments, a
    preflight refusal): its ``kind``, ``message`` and ``data`` are the error result
    ``execute`` would return. ``action`` is then ``"deny"``."""
    pending: ApprovalRequest | None = None
    """An approval already waiting for this very call (same call id, session, project and
    arguments): ``execute`` would return it again instead of asking anew."""


def _refused(error: ToolError) -> CallCheck:
    return CallCheck(action="deny", reason=error.message, error=error)


async def check(ex: Checking, call: ToolCall) -> CallCheck:
    """:meth:`Executor.check`."""
    name = call.name
    if type(name) is not str:
        return _refused(
            ToolFailed(f"A tool name must be text, not {type(name).__name__}.", kind="not_found")
        )
    session = call.session_id
    if session is not None and type(session) is not str:
        return _refused(
            ToolFailed(
                f"A session id must be text, not {type(session).__name__}.", kind="invalid_call"
            )
        )
    prepared = ex._lookup(name)
    if prepared is None:
        return _refused(ToolFailed(ex._not_found(call), kind="not_found"))
    try:
        args = prepared.validator.validate(call.arguments)
    except ArgumentsError as exc:
        return _refused(ToolFailed(str(exc), kind="invalid_arguments", data=argument_issues(exc)))
    ctx = ToolContext(call, resources=ex.resources)
    found = await verdict_of(ex, prepared, call, args, ctx, store=True)
    if isinstance(found, ToolError):
        return _refused(found)
    verdict = found[1]
    return CallCheck(
        action=verdict.action,
        reason=verdict.reason,
        rule=verdict.rule,
        pending=verdict.approval if verdict.by == "pending" else None,
    )


async def explain(ex: Checking, call: ToolCall) -> Explanation:
    """:meth:`Executor.explain`: the policy's explanation with this project's standing rules
    and the host checkers, then the verdict ``execute`` acts on (the same snapshot as
    :func:`check`): where it differs from the rules' answer, or the store's answer decides, the
    explanation's decision is the verdict's and ``answered`` says what decided."""
    from invokit.execution._standing import explain_with_standing
    from invokit.permissions import Decision

    explanation = await explain_with_standing(ex, call)  # raises for bad input, as documented
    prepared = ex._lookup(call.name)
    assert prepared is not None  # explain_with_standing raised otherwise
    args = prepared.validator(call.arguments)
    found = await verdict_of(
        ex, prepared, call, args, ToolContext(call, resources=ex.resources), store=True
    )
    if isinstance(found, ToolError):
        raise found
    verdict = found[1]
    answered = _answered(verdict)
    shown = explanation.decision
    if answered is None and shown.verdict == verdict.action:
        return explanation
    decision = Decision(
        verdict=verdict.action,
        reason=verdict.reason,
        rule=verdict.rule,
        targeted=verdict.decision.targeted,
        standing=verdict.by in ("always", "session") or shown.standing,
        protected=verdict.decision.protected,
    )
    matches = explanation.matches
    if answered is not None:  # the rules matched, but the store's answer decides
        matches = tuple(replace(match, decisive=False) for match in matches)
    return replace(
        explanation, decision=decision, matches=matches, default_used=False, answered=answered
    )


def _answered(verdict: Verdict) -> str | None:
    """What the store held that decided ``verdict``, in words; ``None`` when a rule did."""
    request = verdict.approval
    if verdict.by == "session" and verdict.authority is not None:
        given = f" given by {verdict.authority.by}" if verdict.authority.by else ""
        return f"a session grant{given} ({verdict.authority.id})"
    if request is None:
        return None
    return {
        "no": f'a person\'s "no" to this call (approval {request.id})',
        "approval": f"an approval given elsewhere for exactly this call ({request.id})",
        "earlier": f"this call's earlier question, approved ({request.id})",
        "pending": f"this call's question, still waiting ({request.id})",
    }.get(verdict.by)
