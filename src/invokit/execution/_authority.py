"""The authority a call ran under when nobody was asked: a session grant or an "always" rule.

A call the policy asks about may run without a question because a person answered an earlier
one more widely. The audit log must then say whose answer it was: the grant or rule (its id and
what it covers), who gave it and when. The executor puts an :class:`Authority` on the
``completed`` record of such a call.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from invokit.approvals import StandingRule


@dataclass(frozen=True, kw_only=True, slots=True)
class Authority:
    """The standing answer a call ran under."""

    kind: Literal["session", "always"]
    """``session``: a session grant; ``always``: a standing "approve always" rule."""
    id: str
    """``g_…`` for a session grant (one per session, tool version and project), the rule's
    ``rul_…`` id for an "always" rule."""
    scope: str
    """What it covers, said for a person: the rule and its project, or the tool version,
    session and project of the grant."""
    by: str | None = None
    """Who gave it; ``None`` when this process does not know (a grant given by another
    replica: the store records no giver for session grants)."""
    at: float | None = None
    """When it was given (``time.time()``); ``None`` when unknown, as for ``by``."""
    approval_id: str | None = None
    """The approval whose answer gave it, when known."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON form written on the ``completed`` record (unknown fields left out)."""
        data: dict[str, Any] = {"kind": self.kind, "id": self.id, "scope": self.scope}
        for name in ("by", "at", "approval_id"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


def grant_id(session_id: str, tool: str, fingerprint: str, project: str | None) -> str:
    """The id of the session grant for this session, tool version and project: derived from
    them, so every replica names the same grant the same way."""
    key = "\x00".join((session_id, tool, fingerprint, project or ""))
    return "g_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def session_authority(
    session_id: str,
    tool: str,
    fingerprint: str,
    project: str | None,
    *,
    by: str | None = None,
    at: float | None = None,
    approval_id: str | None = None,
) -> Authority:
    """The authority of the session grant of ``tool`` (at ``fingerprint``) in ``session_id``."""
    where = f", project {project}" if project is not None else ""
    return Authority(
        kind="session",
        id=grant_id(session_id, tool, fingerprint, project),
        scope=f"{tool} (version {fingerprint[:12]}) for session {session_id}{where}",
        by=by,
        at=at,
        approval_id=approval_id,
    )


def rule_authority(rule: StandingRule) -> Authority:
    """The authority of a standing "approve always" rule."""
    where = f" in project {rule.project}" if rule.project is not None else ""
    server = f" (server {rule.server})" if rule.server is not None else ""
    return Authority(
        kind="always",
        id=rule.id,
        scope=f"{rule.rule}{where}{server}",
        by=rule.by,
        at=rule.created_at,
    )
