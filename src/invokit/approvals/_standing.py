"""Standing "approve always" rules as a store records them: scoped to a project and, for a tool
of a remote MCP server, to that server and the pinned version of the tool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invokit._ids import new_id


@dataclass(frozen=True, kw_only=True, slots=True)
class StandingRule:
    """One "approve always" rule a person recorded, and where it applies.

    It applies only in its ``project`` and, when ``server`` is set, only to that MCP server's
    tool whose pinned fingerprint is ``fingerprint`` (a changed tool is not covered); without a
    ``server`` it applies only to local tools. A rule with no project (``legacy``) was recorded
    before rules had a scope: it applies nowhere and is kept only so a person can see and revoke
    it.
    """

    id: str
    """A stable id (``rul_...``) to revoke it by."""
    rule: str
    """The policy rule, as :func:`invokit.permissions.rule_for` wrote it."""
    project: str | None
    """The project (the executor's ``project``, by default its policy's root) it applies in;
    ``None`` for a legacy, unscoped rule, which applies nowhere."""
    server: str | None = None
    """The MCP server of the remote tool it was recorded for; ``None`` for a local tool."""
    fingerprint: str | None = None
    """The pinned fingerprint of that remote tool; ``None`` for a local tool."""
    created_at: float
    """``time.time()`` when it was recorded."""
    by: str | None = None
    """Who approved it (the decision's ``by``), when known."""

    @classmethod
    def new(
        cls,
        rule: str,
        *,
        project: str | None,
        server: str | None,
        fingerprint: str | None,
        created_at: float,
        by: str | None,
    ) -> StandingRule:
        """A new record with a fresh id."""
        return cls(
            id=new_id("rul_", 12),
            rule=rule,
            project=project,
            server=server,
            fingerprint=fingerprint,
            created_at=created_at,
            by=by,
        )

    @property
    def legacy(self) -> bool:
        """Recorded before rules had a scope: shown, never applied."""
        return self.project is None

    def scope(self) -> tuple[str | None, str | None, str | None]:
        """``(project, server, fingerprint)``: two records with the same rule and scope are one."""
        return (self.project, self.server, self.fingerprint)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``invokit approvals rules --json``)."""
        return {
            "id": self.id,
            "rule": self.rule,
            "project": self.project,
            "server": self.server,
            "fingerprint": self.fingerprint,
            "created_at": self.created_at,
            "by": self.by,
            "legacy": self.legacy,
        }


def check_scope(project: str, server: str | None, fingerprint: str | None) -> None:
    """Refuse a scope that could never apply, or that would apply too widely."""
    if not isinstance(project, str) or not project:
        raise ValueError("a standing rule needs a project (a non-empty string)")
    if (server is None) != (fingerprint is None) or "" in (server, fingerprint):
        # An empty one is refused too: a store that keeps "no server" as "" would read it
        # back as a rule for local tools.
        raise ValueError(
            "a standing rule for a remote tool needs both its server and its pinned fingerprint"
        )


def matches(record: StandingRule, key: str, project: str | None) -> bool:
    """Whether ``key`` (an id, or a rule's text) names ``record`` within ``project`` (any project
    when ``None``)."""
    if record.id == key:
        return True
    return record.rule == key and (project is None or record.project == project)


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionGrant:
    """A session grant as a store records it: what it covers, who gave it and when, so every
    replica (and a restarted process) can name its giver."""

    session_id: str
    """The session it covers the tool in."""
    tool: str
    """The tool's name."""
    spec_fingerprint: str
    """The tool version it covers."""
    project: str | None
    """The project it applies in (``None``: recorded without one)."""
    at: float
    """When it was given (``time.time()``): the decision's time when the giver passed it, else
    when the store recorded it."""
    by: str | None = None
    """Who gave it (the decision's ``by``); ``None`` when unknown (a grant recorded before
    stores kept givers, or by a caller that named nobody)."""
    approval_id: str | None = None
    """The approval whose answer gave it, when known."""
