"""Reading what the decision needs, before it is made: the tool's preflight and approval check,
the host checkers, and (for a call the rules ask about) the approval store.

Every read a decision depends on happens here, and nothing here decides: the values go into a
:class:`~invokit.execution._decision.Snapshot` for :func:`~invokit.execution._decision.decide`.
Nothing is written or used up: consuming an approval is acting on a verdict, not reading.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._spec import ToolSpec
from invokit.exceptions import ApprovalError, ToolError, ToolFailed
from invokit.execution._authority import grant_id, session_authority
from invokit.execution._checkers import checked_by
from invokit.execution._decision import Snapshot
from invokit.execution._prepared import Prepared
from invokit.execution._standing import applicable, refresh_standing_rules, standing_policy
from invokit.permissions import Decision
from invokit.registry import RenamedTool
from invokit.tools import Tool, ToolContext
from invokit.tools.internal import BoundCheck

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRecord, SessionGrant, StandingRule
    from invokit.execution._authority import Authority
    from invokit.execution._doors import Standing
    from invokit.permissions import ToolPolicy

_ASKING: dict[str, ToolSpec] = {}
"""A tool's spec marked ``needs_approval``, by fingerprint: how the policy treats a call the
tool's own check wants approved (asked, unless a deny or a standing rule decides)."""


async def read_call(
    ex: Standing, prepared: Prepared, call: ToolCall, args: dict[str, Any], ctx: ToolContext
) -> Snapshot | ToolError:
    """The tool's permission requests, its own approval check (only when the policy allows)
    and the host checkers' answers; the refusal of a preflight or approval check that refused
    or broke."""
    tool = prepared.tool
    try:
        requests = tuple(tool.permissions(args, ctx))
    except ToolError as exc:  # the tool refused in preflight (AccessDenied ...): its own words
        return exc
    except Exception as exc:  # a broken preflight refuses the call; nothing ran
        return ToolFailed(
            f"The permission check of {call.name!r} failed ({type(exc).__name__}); nothing ran.",
            kind="denied",
        )
    asking: ToolPolicy | None = None
    check = _check_of(tool)
    # The tool's own check can only turn an allow into an ask: it is not asked otherwise.
    if check is not None and prepared.policy.decide(args, requests).verdict == "allow":
        try:
            needed = await check(args, ctx)
        except ToolError as exc:
            return exc
        except Exception as exc:
            return ToolFailed(
                f"The approval check (needs_approval) of {call.name!r} failed "
                f"({type(exc).__name__}: {exc}); nothing ran.",
                kind="denied",
            )
        if needed:
            asking = _asking(ex, prepared.spec)
    checkers = ex._checkers
    checked = checked_by(checkers, call, requests) if checkers else ()
    return Snapshot(requests=requests, asking=asking, checked=checked)


async def read_store(
    ex: Standing,
    prepared: Prepared,
    call: ToolCall,
    args: dict[str, Any],
    snapshot: Snapshot,
    decision: Decision,
) -> Snapshot:
    """``snapshot`` with what the store knows about this asked-about call: the "always" rules
    of this project for this tool version, a session grant, an approval given elsewhere for
    exactly this call and this call's newest approval. A store that cannot say counts as
    knowing nothing (the call is asked about).

    This call's newest approval is read once, here, and last: the approvals part acts on this
    record (``Decided.snapshot``: rejoin the question, or withdraw it when the call runs
    without it) and does not read it again. Within one executor, executions of the same call
    take turns (``_same_call``), so no other asks under the same id between this read and the
    act on it. Across replicas nothing makes read-then-ask atomic: two replicas asking for one
    call id at once each store a question, the stores keep both (``find_by_call`` returns the
    newest, which later retries rejoin), and each is bound to exactly that call and
    single-use, so neither runs it without a person's "yes" to it."""
    from invokit.approvals.internal import call_record

    spec = prepared.spec
    always: tuple[StandingRule, ...] = ()
    standing: ToolPolicy | None = None
    grant = None
    approved: ApprovalRecord | None = None
    try:
        await refresh_standing_rules(ex)
        always = applicable(ex._always, spec)
        if always and decision.protected is None:
            standing = standing_policy(ex, prepared)
        session = call.session_id
        if session is not None and not decision.targeted and decision.protected is None:
            given = await ex.approvals.session_grant(
                session, spec.name, spec.fingerprint, project=ex.project
            )
            if given is not None:
                grant = _grant_authority(ex, given)
        found = await ex.approvals.find_approved(
            spec.name, spec.fingerprint, canonical_hash(args), session, project=ex.project
        )
        if found is not None:
            approved = await ex.approvals.get(found.id)
    except ApprovalError:
        pass  # what was read so far stands; the rest is unknown
    record = await call_record(
        ex.approvals, call.id, session_id=call.session_id, project=ex.project
    )
    return replace(
        snapshot,
        read=True,
        earlier=record,
        always=always,
        standing=standing,
        grant=grant,
        approved=approved,
    )


def _grant_authority(ex: Standing, grant: SessionGrant) -> Authority:
    """The authority of a session grant as the store recorded it: who gave it, when and by
    answering which approval, whichever replica (or earlier process) recorded it."""
    known = ex._grants.get(
        grant_id(grant.session_id, grant.tool, grant.spec_fingerprint, grant.project)
    )
    if known is not None and grant.by is None and grant.approval_id is None:
        return known  # a row recorded before stores kept givers: what this executor saw
    return session_authority(
        grant.session_id,
        grant.tool,
        grant.spec_fingerprint,
        grant.project,
        by=grant.by,
        at=grant.at,
        approval_id=grant.approval_id,
    )


def _check_of(tool: Tool) -> BoundCheck | None:
    while isinstance(tool, RenamedTool):  # prefixed, renamed, aliased: the real tool's check
        tool = tool.inner
    return tool.approval_check


def _asking(ex: Standing, spec: ToolSpec) -> ToolPolicy:
    """The policy in force compiled for ``spec`` marked ``needs_approval``."""
    fingerprint = spec.fingerprint
    asking = _ASKING.get(fingerprint)
    if asking is None:
        if len(_ASKING) >= 1024:
            _ASKING.clear()
        asking = _ASKING[fingerprint] = spec.with_annotations(needs_approval=True)
    return ex._policy.compile(asking)
