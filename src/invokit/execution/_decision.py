"""The decision: one pure function from a call and what is known about it to one value.

This is the file that answers "why did this call run?" (or was refused, or asked about).
:func:`decide` reads a :class:`Snapshot` — the tool's permission requests, its own
``needs_approval`` answer, the host checkers' answers and, for a call the rules ask about, what
the approval store knows (a person's earlier answer to this very call, "always" rules, a session
grant, an approval given elsewhere) — and returns a :class:`Verdict`. It performs no I/O: the
snapshot is read first (``_snapshot.py``) and the verdict is acted on after (``_executor.py``,
``_approving.py``, ``_hooks.py``); ``check`` and ``explain`` read the same verdict.

The order is the promise:

1. what can be refused statically is refused (a deny rule, a host checker's deny) before
   anyone is asked, and a person's "no" to this very call stays a "no";
2. an ``allow`` of the rules (and of every checker) runs;
3. an ``ask`` is answered by a standing answer — an "always" rule, a session grant (never for a
   ``targeted`` ask), an approval given elsewhere for exactly this call — except for a
   ``protected`` call, which nothing but a person answering this call covers;
4. otherwise a person is asked (or this call's own earlier question is joined again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit.execution._asked import denied_by, final_no, same_call
from invokit.execution._authority import Authority, rule_authority
from invokit.execution._prepared import Prepared
from invokit.permissions import Decision, PermissionRequest
from invokit.permissions.internal import RANK

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRecord, ApprovalRequest, StandingRule
    from invokit.permissions import ToolPolicy

DecidedBy = Literal["policy", "no", "always", "session", "approval", "earlier", "pending", "ask"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Snapshot:
    """What is known about one call before it is decided, read once, first."""

    requests: tuple[PermissionRequest, ...] = ()
    """The tool's permission requests for these arguments (its preflight)."""
    asking: ToolPolicy | None = None
    """The policy compiled for the tool marked ``needs_approval``, set when the tool's own
    approval check wants this call approved."""
    checked: tuple[Decision, ...] = ()
    """The host checkers' answers (``Executor(checkers=...)``), in order."""
    read: bool = False
    """Whether the store was read (only for a call the rules ask about); the fields below are
    empty otherwise."""
    earlier: ApprovalRecord | None = None
    """The newest approval recorded for this call id, session and project (any status): the
    record the approvals part acts on too (it does not read it again)."""
    always: tuple[StandingRule, ...] = ()
    """The "always" rules of this project recorded for this tool version."""
    standing: ToolPolicy | None = None
    """The policy with the target rules among ``always``, compiled for this tool."""
    grant: Authority | None = None
    """The session grant covering this tool version in the call's session, if any."""
    approved: ApprovalRecord | None = None
    """An approved, unused request for exactly this call, given elsewhere, if any."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Question:
    """What a person would be asked."""

    reason: str
    rule: str | None
    protected: str | None
    requests: tuple[PermissionRequest, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """The decision on one call: what happens, why, and whose rule or answer decided."""

    action: Literal["allow", "deny", "ask"]
    reason: str
    """Why, in words a person or a model can read."""
    rule: str | None
    """The policy or standing rule that decided; ``None`` when a default or a person did."""
    by: DecidedBy
    """What decided: the rules (``policy``, host checkers included), a person's ``no`` to this
    call, an ``always`` rule, a ``session`` grant, an ``approval`` given elsewhere for exactly
    this call, this call's own ``earlier`` approved question, a ``pending`` one, or nothing yet
    (``ask``)."""
    decision: Decision
    """The ruling of the rules and checkers before any standing answer (the ``decided``
    event's)."""
    authority: Authority | None = None
    """The grant or "always" rule the call runs under (``by`` ``always`` or ``session``)."""
    approval: ApprovalRequest | None = None
    """The request a person already answered for this call (``approval``, ``earlier``,
    ``pending``, ``no``)."""
    question: Question | None = None
    """What a person is (or would be) asked, for an ``ask``."""

    @property
    def kind(self) -> str:
        """The error kind of a refusal: ``approval_denied`` for a person's "no"."""
        return "approval_denied" if self.by == "no" else "denied"


def ruling(plan: Prepared, arguments: dict[str, Any], snapshot: Snapshot) -> Decision:
    """The rules' and the host checkers' answer: the policy (for a tool whose own check wants
    approval, the policy as if it were marked ``needs_approval``), then each checker, the
    stricter winning (deny beats ask beats allow)."""
    decision = plan.policy.decide(arguments, snapshot.requests)
    if decision.verdict == "allow" and snapshot.asking is not None:
        decision = snapshot.asking.decide(arguments, snapshot.requests)
    return stricter(decision, snapshot.checked)


def stricter(decision: Decision, checked: tuple[Decision, ...]) -> Decision:
    """``decision``, or the first of the host checkers' answers stricter than it (deny beats
    ask beats allow): a checker never widens what the rules allow."""
    for answer in checked:
        if RANK[answer.verdict] > RANK[decision.verdict]:
            decision = answer
    return decision


def decide(
    call: ToolCall, plan: Prepared, arguments: dict[str, Any], snapshot: Snapshot
) -> Verdict:
    """The one decision on ``call`` of ``plan``'s tool with ``arguments``; see the module."""
    decision = ruling(plan, arguments, snapshot)
    verdict = decision.verdict
    if verdict != "ask":
        return Verdict(
            action=verdict,
            reason=decision.reason,
            rule=decision.rule,
            by="policy",
            decision=decision,
        )
    question = Question(
        reason=decision.reason,
        rule=decision.rule,
        protected=decision.protected,
        requests=snapshot.requests,
    )
    asked = Verdict(
        action="ask",
        reason=decision.reason,
        rule=decision.rule,
        by="ask",
        decision=decision,
        question=question,
    )
    if not snapshot.read:
        return asked
    record = snapshot.earlier
    if record is not None and not same_call(record, plan, arguments):
        record = None
    if record is not None and final_no(record):  # a person's "no" wins over any grant
        assert record.decision is not None
        return Verdict(
            action="deny",
            reason=denied_by(record.request, record.decision),
            rule=None,
            by="no",
            decision=decision,
            approval=record.request,
        )
    standing = _standing(plan, arguments, snapshot, decision)
    if standing is not None:
        return Verdict(
            action="allow",
            reason=standing[0],
            rule=standing[2],
            by="always",
            decision=decision,
            authority=standing[1],
            question=question,
        )
    grant = snapshot.grant
    if grant is not None and not decision.targeted and decision.protected is None:
        return Verdict(
            action="allow",
            reason="approved for this session",
            rule=None,
            by="session",
            decision=decision,
            authority=grant,
            question=question,
        )
    approved = snapshot.approved
    if approved is not None and _runs_as_approved(approved, arguments):
        return Verdict(
            action="allow",
            reason=f"approved by a person (approval {approved.request.id})",
            rule=decision.rule,
            by="approval",
            decision=decision,
            approval=approved.request,
            question=question,
        )
    if record is not None and record.status == "pending":
        return Verdict(
            action="ask",
            reason=decision.reason,
            rule=decision.rule,
            by="pending",
            decision=decision,
            approval=record.request,
            question=question,
        )
    if record is not None and record.status == "approved":
        return Verdict(
            action="allow",
            reason=f"approved by a person (approval {record.request.id})",
            rule=decision.rule,
            by="earlier",
            decision=decision,
            approval=record.request,
            question=question,
        )
    return asked


def _standing(
    plan: Prepared, arguments: dict[str, Any], snapshot: Snapshot, decision: Decision
) -> tuple[str, Authority, str | None] | None:
    """The "always" rule that answers this ask (reason, authority, rule text): a pinned rule
    naming exactly these arguments, else a target rule under which the policy allows the
    call with a standing rule among its reasons (an allow rule alone does not answer an ask
    that ``needs_approval`` raised). Never for a ``protected`` call."""
    from invokit.approvals.internal import is_pinned, pinned_rule

    rules = snapshot.always
    if not rules or decision.protected is not None:
        return None
    wanted = pinned_rule(plan.spec.name, arguments)
    if wanted is not None:
        pinned = next((r for r in rules if is_pinned(r.rule) and r.rule == wanted), None)
        if pinned is not None:
            reason = f"approved always by rule {pinned.rule!r} (exactly these arguments)"
            return reason, rule_authority(pinned), pinned.rule
    if snapshot.standing is None:
        return None
    again = snapshot.standing.decide(arguments, snapshot.requests)
    if again.verdict != "allow" or not again.standing:
        return None
    targets = [r for r in rules if not is_pinned(r.rule)]
    # The decision names the rule that decided; when several parts were allowed by several
    # rules it names one of them, and the first target rule stands for the rest.
    rule = next((r for r in targets if r.rule == again.rule), targets[0] if targets else None)
    if rule is None:
        return None
    return again.reason, rule_authority(rule), again.rule


def _runs_as_approved(record: ApprovalRecord, arguments: dict[str, Any]) -> bool:
    """Whether an approval given elsewhere runs exactly these arguments (a person who edited
    them approved other ones: only ``resume`` runs those)."""
    edited = record.decision.arguments if record.decision is not None else None
    return edited is None or canonical_hash(edited) == canonical_hash(arguments)
