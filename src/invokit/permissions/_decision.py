"""What a policy says about a call, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

Verdict: TypeAlias = Literal["allow", "deny", "ask"]

RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
"""Deny beats ask beats allow: the stricter verdict wins when two subjects disagree."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """A policy's verdict on one call."""

    verdict: Verdict
    """``allow`` runs the call, ``ask`` needs a person's approval, ``deny`` refuses it."""
    reason: str
    """Why, in words a model and a person can read."""
    rule: str | None = None
    """The rule that decided, as written; ``None`` when the policy's default decided."""
    targeted: bool = False
    """An ``ask`` rule that names a target or conditions (a rule with a body) asks about some
    part of this call: a session grant does not cover it, a person answers each such call."""
    standing: bool = False
    """A standing "approve always" rule allowed some part of this call."""
    protected: str | None = None
    """For an ``ask`` about a write to an execution surface a project opted back in: what runs
    or obeys it, for the person. No session grant or "always" rule covers such a call."""

    @classmethod
    def allow(cls, reason: str = "", rule: str | None = None) -> Decision:
        return cls(verdict="allow", reason=reason, rule=rule)

    @classmethod
    def deny(cls, reason: str = "", rule: str | None = None) -> Decision:
        return cls(verdict="deny", reason=reason, rule=rule)

    @classmethod
    def ask(cls, reason: str = "", rule: str | None = None) -> Decision:
        return cls(verdict="ask", reason=reason, rule=rule)

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"


@dataclass(frozen=True, kw_only=True, slots=True)
class RuleMatch:
    """A rule that matched some part of a call, whether or not it decided."""

    rule: str
    """The rule as written."""
    verdict: Verdict
    """The list it is in."""
    subject: str | None
    """The request it matched (``file_read .env``), or ``None`` for the call as a whole."""
    decisive: bool
    """Whether this match produced the call's decision."""
    standing: bool = False
    """A standing "approve always" rule."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Explanation:
    """Which rule decided a call, and which others matched but lost."""

    tool: str
    decision: Decision
    matches: tuple[RuleMatch, ...]
    """Every rule that matched, in the order deny, ask, standing allow, allow."""
    default: Verdict
    """What this tool gets when no rule matches."""
    default_used: bool
    """Whether the default decided (for at least the decisive subject)."""
    remote: str | None = None
    """The MCP server this tool belongs to; its hints count only where they restrict."""
    answered: str | None = None
    """What the approval store held that decides instead of a rule (``Executor.explain``): a
    person's "no" to this very call, a session grant, an approval given elsewhere, or this
    call's own earlier question (approved, or still waiting); ``None`` when the rules decide."""

    def render(self) -> str:
        """A few lines for a terminal: the decision first, then each matching rule once."""
        decision = self.decision
        if self.answered is not None:
            decided_by = self.answered
        else:
            decided_by = f"rule {decision.rule!r}" if decision.rule else "the default"
        head = f"{self.tool}: {decision.verdict}, decided by {decided_by}"
        if decision.reason and not (decision.rule and decision.rule in decision.reason):
            head += f" ({decision.reason})"  # only what the rule's name does not say already
        lines = [head]
        for match in self.matches:
            mark = "*" if match.decisive else "-"
            on = f" on {match.subject}" if match.subject else ""
            kind = "allow always" if match.standing else match.verdict
            role = "decides" if match.decisive else "also matches"
            lines.append(f"  {mark} {kind} {match.rule!r}{on}: {role}")
        if not self.matches:
            lines.append(f"  no rule matched; the default for this tool is {self.default}")
        if self.decision.targeted:
            lines.append(
                "  an ask rule names this call's target: a session grant does not cover it"
            )
        if self.remote is not None:
            lines.append(
                f"  a tool of MCP server {self.remote!r}: its hints only restrict (a missing "
                "hint counts as MCP's default), never allow"
            )
        return "\n".join(lines)
