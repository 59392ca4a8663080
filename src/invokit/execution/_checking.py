"""The decision without running: what ``Executor.check`` says about a call.

A framework asks before it runs a tool (openai-agents' ``needs_approval``, LangChain's
interrupt, ADK's confirmation), and re-runs the tool after a person answered. ``check`` goes
through lookup, validation, preflight and the one decision function
(:func:`~invokit.execution._deciding.judge`), then the approvals already given (a pending or
answered approval of this very call, standing rules, session grants, an approval given
elsewhere), and stores nothing, invokes nothing, asks nobody and reports no event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit.exceptions import ApprovalError, ArgumentsError, ToolError, ToolFailed
from invokit.execution._approving import denied_by, earlier, final_no, same_call
from invokit.execution._deciding import judge
from invokit.execution._prepared import Prepared
from invokit.execution._records import argument_issues
from invokit.execution._standing import (
    applicable,
    pinned_match,
    refresh_standing_rules,
    standing_policy,
)
from invokit.permissions import PermissionRequest
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest
    from invokit.execution._executor import Executor
    from invokit.permissions import Decision


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


async def check(ex: Executor, call: ToolCall) -> CallCheck:
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
    judged = await judge(ex, prepared, call, args, ToolContext(call, resources=ex.resources))
    if isinstance(judged, ToolError):
        return _refused(judged)
    requests, decision = judged
    if decision.verdict != "ask":
        return CallCheck(action=decision.verdict, reason=decision.reason, rule=decision.rule)
    return await _asked(ex, prepared, call, args, requests, decision)


async def _asked(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, object],
    requests: tuple[PermissionRequest, ...],
    decision: Decision,
) -> CallCheck:
    """An ``ask``, answered by what was approved already, in the order ``execute`` reads it:
    a person's "no" to this very call, then standing rules and grants, then this call's own
    pending or approved request."""
    record = await earlier(ex, call.id, call.session_id)
    if record is not None and not same_call(record, prepared, args):
        record = None
    if record is not None and final_no(record):  # a person's "no" wins over any grant
        assert record.decision is not None
        return CallCheck(
            action="deny", reason=denied_by(record.request, record.decision), rule=None
        )
    covered = await _standing_cover(ex, prepared, call, args, requests, decision)
    if covered is not None:
        return covered
    if record is not None and record.status == "pending":
        return CallCheck(
            action="ask", reason=decision.reason, rule=decision.rule, pending=record.request
        )
    if record is not None and record.status == "approved":
        return CallCheck(
            action="allow",
            reason=f"approved by a person (approval {record.request.id})",
            rule=decision.rule,
        )
    return CallCheck(action="ask", reason=decision.reason, rule=decision.rule)


async def _standing_cover(
    ex: Executor,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, object],
    requests: tuple[PermissionRequest, ...],
    decision: Decision,
) -> CallCheck | None:
    """What ``standing_grant`` would find, read without using anything up: an "always" rule
    of this project, a session grant (not for a targeted ask), an approval given elsewhere for
    exactly this call."""
    spec = prepared.spec
    await refresh_standing_rules(ex)
    if applicable(ex._always, spec) and decision.protected is None:
        pinned = pinned_match(ex, spec, dict(args))
        if pinned is not None:
            return CallCheck(
                action="allow",
                reason=f"approved always by rule {pinned.rule!r} (exactly these arguments)",
                rule=pinned.rule,
            )
        again = standing_policy(ex, prepared).decide(dict(args), requests)
        if again.verdict == "allow" and again.standing:
            return CallCheck(action="allow", reason=again.reason, rule=again.rule)
    session = call.session_id
    if (
        session is not None
        and not decision.targeted
        and decision.protected is None
        and await ex.approvals.has_session_grant(
            session, spec.name, spec.fingerprint, project=ex.project
        )
    ):
        return CallCheck(action="allow", reason="approved for this session", rule=None)
    found = await ex.approvals.find_approved(
        spec.name, spec.fingerprint, canonical_hash(args), session, project=ex.project
    )
    if found is None:
        return None
    try:
        record = await ex.approvals.get(found.id)
    except ApprovalError:
        return None
    edited = record.decision.arguments if record.decision is not None else None
    if edited is not None and canonical_hash(edited) != canonical_hash(args):
        return None  # other arguments were approved: only resume() runs those
    return CallCheck(
        action="allow", reason=f"approved by a person (approval {found.id})", rule=decision.rule
    )
