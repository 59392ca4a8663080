"""Standing approvals in the executor: session grants and "approve always" rules.

What a person approved for longer than one call, and exactly how far it reaches:

* a **session grant** covers the approved tool version for the rest of the call's session, but
  never a call that an ``ask`` rule with a body (a target or conditions) asks about
  (``Decision.targeted``): such a call is asked about each time;
* an **"always" rule** is the narrowest rule for what was approved (:func:`standing_rules_for`),
  recorded for the executor's ``project`` and, for a tool of a remote MCP server, for that server
  and the pinned fingerprint of the tool: it applies in no other project, and stops applying when
  the server changes the tool.

Nothing here runs for a call the policy allows or denies outright: only for an ``ask``.
The store is read on every such call, so rules another process recorded (or revoked) count at
once.
"""

from __future__ import annotations

import os
import posixpath
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._spec import ToolSpec
from invokit.exceptions import ApprovalError, PolicyError
from invokit.execution._prepared import Prepared
from invokit.tools._context import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest, StandingRule
    from invokit.execution._executor import Executor
    from invokit.permissions import Decision, Explanation, Policy, ToolPolicy


def default_project(policy: Policy) -> str:
    """The project standing rules are recorded for when none is given: the policy's root, else
    the current directory (absolute, normalized)."""
    if policy.root is not None:
        return policy.root
    return posixpath.normpath(Path(os.path.abspath(os.getcwd())).as_posix())


async def refresh_standing_rules(ex: Executor) -> bool:
    """Load this project's "approve always" rules from the store (maybe recorded or revoked by
    another process); True when they changed."""
    rules = tuple(await ex.approvals.always_rules(project=ex.project))
    if rules == ex._always:
        return False
    ex._always = rules
    return True


def applicable(rules: tuple[StandingRule, ...], spec: ToolSpec) -> tuple[StandingRule, ...]:
    """The rules recorded for this tool's version: local rules for a local tool; for a remote
    tool, those of its server and its pinned fingerprint."""
    from invokit.permissions._rules import binding_of

    binding = binding_of(spec)
    return tuple(r for r in rules if not r.legacy and (r.server, r.fingerprint) == binding)


def standing_policy(ex: Executor, prepared: Prepared) -> ToolPolicy:
    """The executor's policy with the standing rules that apply to this tool, compiled once per
    set of rules (kept on ``prepared``)."""
    rules = applicable(ex._always, prepared.spec)
    key = tuple(r.id for r in rules)
    cached = prepared.standing
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        compiled = ex._policy.with_standing(rules).compile(prepared.spec)
    except PolicyError:
        # A rule this version cannot read (written by another one) is left out, not trusted.
        usable = [r for r in rules if _readable(ex._policy, r)]
        compiled = ex._policy.with_standing(usable).compile(prepared.spec)
    prepared.standing = (key, compiled)
    return compiled


def _readable(policy: Policy, rule: StandingRule) -> bool:
    try:
        policy.with_standing([rule])
    except PolicyError:
        return False
    return True


async def standing_grant(
    ex: Executor, prepared: Prepared, call: ToolCall, args: dict[str, Any], decision: Decision
) -> ApprovalRequest | bool | None:
    """An approval that already covers this call: an "always" rule of this project, a session
    grant (not for a ``targeted`` ask), or a request a person approved elsewhere for exactly this
    call (consumed now)."""
    from invokit.execution._approving import emit_resolved

    spec = prepared.spec
    try:
        await refresh_standing_rules(ex)
        if applicable(ex._always, spec) and _covered(ex, prepared, call, args):
            return True
        if (
            call.session_id is not None
            and not decision.targeted
            and await ex.approvals.has_session_grant(call.session_id, spec.name, spec.fingerprint)
        ):
            return True
        request = await ex.approvals.find_approved(
            spec.name, spec.fingerprint, canonical_hash(args), call.session_id
        )
        if request is None:
            return None
        pending = await ex.approvals.get(request.id)
        edited = pending.decision.arguments if pending.decision is not None else None
        if edited is not None and canonical_hash(edited) != canonical_hash(args):
            # The person approved other arguments: only resume() may run those.
            return None
        record = await ex.approvals.consume(request.id)
        emit_resolved(ex, call, record.request, record.decision, consumed=True)
        if record.decision is not None:
            await remember_scope(ex, prepared, record.request, record.decision.scope)
        return record.request
    except ApprovalError:
        return None


def _covered(ex: Executor, prepared: Prepared, call: ToolCall, args: dict[str, Any]) -> bool:
    """Whether a standing rule allows this call: the policy with the rules decides again, and
    allows it with a standing rule among the reasons (an allow rule alone does not answer an ask
    that ``needs_approval`` raised)."""
    try:
        requests = tuple(prepared.tool.permissions(args, ToolContext(call, resources=ex.resources)))
    except Exception:  # the call's own check refused it already; never a grant
        return False
    again = standing_policy(ex, prepared).decide(args, requests)
    return again.verdict == "allow" and again.standing


async def remember_scope(
    ex: Executor, prepared: Prepared, request: ApprovalRequest, scope: str
) -> None:
    """Record what a wider approval covers: the tool version for the session, or standing
    rules for exactly what was approved ("always"). A failure to record leaves the approval
    a one-time one (with a warning); it never fails the call that was approved."""
    try:
        await record_scope(ex, prepared, request, scope)
    except Exception as exc:
        warnings.warn(
            f"approval {request.id}: its {scope!r} scope could not be recorded: {exc!r}",
            RuntimeWarning,
            stacklevel=2,
        )


async def record_scope(
    ex: Executor, prepared: Prepared, request: ApprovalRequest, scope: str
) -> None:
    """Record a ``session`` grant or the ``always`` rules of an approved request, in this
    executor's project (and, for a remote tool, bound to its server and pinned version)."""
    session_id = request.call.session_id
    if scope == "session" and session_id is not None:
        await ex.approvals.grant_session(session_id, prepared.spec.name, prepared.spec.fingerprint)
    elif scope == "always":
        rules = standing_rules_for(prepared.spec, request)
        if rules is None:
            # No rule says exactly what was approved: it stays a one-time approval.
            warnings.warn(
                f"approval {request.id}: no exact rule covers this call; approved once only",
                RuntimeWarning,
                stacklevel=2,
            )
            return
        from invokit.permissions._rules import binding_of

        server, fingerprint = binding_of(prepared.spec)
        by = await _decided_by(ex, request.id)
        for rule in rules:
            await ex.approvals.add_always_rule(
                rule, project=ex.project, server=server, fingerprint=fingerprint, by=by
            )
        await refresh_standing_rules(ex)


async def _decided_by(ex: Executor, approval_id: str) -> str | None:
    try:
        record = await ex.approvals.get(approval_id)
    except ApprovalError:
        return None
    return record.decision.by if record.decision is not None else None


def standing_rules_for(spec: ToolSpec, request: ApprovalRequest) -> list[str] | None:
    """The "approve always" rules for exactly what a person approved, or ``None`` when no rule
    can say it exactly (words or paths with surrounding spaces, a rule that does not read back
    or does not cover the call)."""
    from invokit.permissions import Policy, ShellExec, rule_for

    for item in request.requests:
        words = item.argv if isinstance(item, ShellExec) else (item.target(),)
        if any(not word or word != word.strip() for word in words):
            return None
    rules = [rule_for(spec.name, r) for r in request.requests] or [rule_for(spec.name)]
    try:
        standing = Policy(default="deny", extra_allow=rules)
    except PolicyError:
        return None
    if standing.decide(spec, request.arguments, request.requests).verdict != "allow":
        return None
    return rules


async def explain_with_standing(ex: Executor, call: ToolCall) -> Explanation:
    """:meth:`Executor.explain`, with this project's standing rules for the tool in the
    explanation; raises for an unknown tool or invalid arguments."""
    prepared = ex._lookup(call.name)
    if prepared is None:
        raise KeyError(ex._not_found(call))
    await refresh_standing_rules(ex)
    args = prepared.validator(call.arguments)
    requests = tuple(prepared.tool.permissions(args, ToolContext(call, resources=ex.resources)))
    return standing_policy(ex, prepared).explain(args, requests)
