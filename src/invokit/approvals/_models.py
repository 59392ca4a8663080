"""Approval values: the request a person sees, their decision, and the stored record."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._spec import ToolSpec
from invokit.exceptions import ApprovalMismatch
from invokit.permissions import (
    Deciders,
    Decision,
    PermissionRequest,
    Person,
    request_from_dict,
    request_to_dict,
)

ApprovalScope: TypeAlias = Literal["once", "session", "always"]
ApprovalStatus: TypeAlias = Literal["pending", "approved", "denied", "consumed", "expired"]
ApprovalChannel: TypeAlias = Literal[
    "terminal", "elicitation", "cli", "inbox", "api", "approver", "executor"
]
"""Where a decision was made: the ``serve`` terminal, the MCP client's elicitation form,
``invokit approvals approve|deny``, the inbox page, ``Executor.resume``, an inline ``approver``, or the
executor itself (a withdrawal: the caller went away)."""

DEFAULT_TTL = 3600.0
"""Seconds an approval stays usable: an hour."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRequest:
    """A call waiting for a person, bound to exactly what they are asked to approve."""

    id: str
    """Unguessable (``secrets.token_urlsafe``); whoever holds it can resolve the approval."""
    call: ToolCall
    """The call as the model made it."""
    tool: str
    """The tool's name."""
    spec_fingerprint: str
    """The tool spec's fingerprint: a changed tool needs a new approval."""
    arguments: dict[str, Any]
    """The validated arguments."""
    arguments_hash: str
    """``canonical_hash(arguments)``; the approval applies to these arguments only."""
    requests: tuple[PermissionRequest, ...] = ()
    """What the call said it will touch."""
    reason: str = ""
    """Why the policy asked."""
    rule: str | None = None
    """The rule that asked; ``None`` when the default did."""
    protected: str | None = None
    """What runs or obeys the path this call changes (an execution surface), said for the person;
    no session grant or "always" rule covers such a call, and none is offered for it."""
    session_id: str | None = None
    project: str | None = None
    """The project of the executor that asked (its ``project``); the approval runs the call
    only there. ``None`` for a request recorded before approvals had a project."""
    created_at: float
    """``time.time()`` when it was asked."""
    expires_at: float
    """After this it counts as denied; nothing is approved by a timeout."""
    trace: dict[str, str] | None = None
    """The W3C trace context (``traceparent``, ``tracestate``) of the span of the call that
    asked, when it was traced: the resumed call's span links to it, in any process."""
    deciders: Deciders | None = None
    """Who may answer (the policy's ``[[policy.approvers]]`` for the rule that asked), stamped
    when asked; ``None``: anyone who can answer."""

    @classmethod
    def create(
        cls,
        *,
        call: ToolCall,
        spec: ToolSpec,
        arguments: Mapping[str, Any],
        requests: Sequence[PermissionRequest] = (),
        decision: Decision | None = None,
        ttl: float = DEFAULT_TTL,
        now: float | None = None,
        project: str | None = None,
    ) -> ApprovalRequest:
        """A new request for ``call`` of ``spec``'s tool, asked because of ``decision``."""
        created = time.time() if now is None else now
        args = dict(arguments)
        return cls(
            id=secrets.token_urlsafe(18),
            call=call,
            tool=str(spec.name),
            spec_fingerprint=spec.fingerprint,
            arguments=args,
            arguments_hash=canonical_hash(args),
            requests=tuple(requests),
            reason=decision.reason if decision is not None else "",
            rule=decision.rule if decision is not None else None,
            protected=decision.protected if decision is not None else None,
            session_id=call.session_id,
            project=project,
            created_at=created,
            expires_at=created + ttl,
        )

    def verify(
        self,
        *,
        tool: str,
        spec_fingerprint: str,
        arguments: Mapping[str, Any],
        call_id: str | None = None,
    ) -> None:
        """Raise :class:`ApprovalMismatch` unless this approval is for exactly this call."""
        if call_id is not None and call_id != self.call.id:
            raise ApprovalMismatch(
                self.id, f"it was given for call {self.call.id!r}, not {call_id!r}"
            )
        if tool != self.tool:
            raise ApprovalMismatch(self.id, f"it was given for tool {self.tool!r}, not {tool!r}")
        if spec_fingerprint != self.spec_fingerprint:
            raise ApprovalMismatch(self.id, f"the tool {tool!r} changed since it was given")
        if canonical_hash(dict(arguments)) != self.arguments_hash:
            raise ApprovalMismatch(self.id, "it was given for other arguments")

    def binds(
        self,
        spec_fingerprint: str,
        arguments_hash: str,
        session_id: str | None,
        project: str | None = None,
    ) -> bool:
        """Whether this request is for the same tool version, arguments, session and project
        (a request without a project matches only ``project=None``)."""
        return (
            self.spec_fingerprint == spec_fingerprint
            and self.arguments_hash == arguments_hash
            and self.session_id == session_id
            and self.project == project
        )

    def expired(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) >= self.expires_at

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; :meth:`from_dict` rebuilds an equal request."""
        data: dict[str, Any] = {
            "id": self.id,
            "call": self.call.to_dict(),
            "tool": self.tool,
            "spec_fingerprint": self.spec_fingerprint,
            "arguments": self.arguments,
            "arguments_hash": self.arguments_hash,
            "requests": [request_to_dict(r) for r in self.requests],
            "reason": self.reason,
            "rule": self.rule,
            "session_id": self.session_id,
            "project": self.project,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
        }
        if self.trace is not None:
            data["trace"] = dict(self.trace)
        if self.protected is not None:
            data["protected"] = self.protected
        if self.deciders is not None:
            data["deciders"] = self.deciders.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalRequest:
        return cls(
            id=data["id"],
            call=ToolCall.from_dict(data["call"]),
            tool=data["tool"],
            spec_fingerprint=data["spec_fingerprint"],
            arguments=dict(data["arguments"]),
            arguments_hash=data["arguments_hash"],
            requests=tuple(request_from_dict(r) for r in data.get("requests", ())),
            reason=data.get("reason", ""),
            rule=data.get("rule"),
            protected=_text(data.get("protected")),
            session_id=data.get("session_id"),
            project=data.get("project"),
            created_at=float(data["created_at"]),
            expires_at=float(data["expires_at"]),
            trace=_trace(data.get("trace")),
            deciders=_deciders(data.get("deciders")),
        )


def _deciders(value: Any) -> Deciders | None:
    return Deciders.from_dict(value) if isinstance(value, Mapping) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _trace(value: Any) -> dict[str, str] | None:
    """A stored trace context, text keys and values only (anything else is dropped)."""
    if not isinstance(value, Mapping):
        return None
    kept = {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}
    return kept or None


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalDecision:
    """A person's answer to an :class:`ApprovalRequest`."""

    approved: bool
    scope: ApprovalScope = "once"
    """``once``: this call; ``session``: this tool version for the rest of the session;
    ``always``: a standing rule recorded in the store."""
    reason: str | None = None
    """For a denial, what the model is told."""
    arguments: dict[str, Any] | None = None
    """Edited arguments to run instead; re-validated and re-checked by the executor."""
    by: str | None = None
    """Who decided (a user name, ``cli``, ``elicitation``)."""
    channel: ApprovalChannel | None = None
    """Where the decision was made; ``None`` when the decider did not say (the audit log then
    records the channel the executor received it through)."""
    credentials: dict[str, Any] | None = field(default=None, repr=False)
    """Secrets the host supplies for the run; never shown to the model or the audit log."""
    person: Person | None = None
    """Who decided, as an identity a policy's approvers and four eyes are checked against."""

    @classmethod
    def approve(
        cls,
        scope: ApprovalScope = "once",
        *,
        by: str | None = None,
        arguments: dict[str, Any] | None = None,
        channel: ApprovalChannel | None = None,
        person: Person | None = None,
    ) -> ApprovalDecision:
        return cls(
            approved=True,
            scope=scope,
            by=by,
            arguments=arguments,
            channel=channel,
            person=person,
        )

    @classmethod
    def deny(
        cls,
        reason: str | None = None,
        *,
        by: str | None = None,
        channel: ApprovalChannel | None = None,
        person: Person | None = None,
    ) -> ApprovalDecision:
        return cls(approved=False, reason=reason, by=by, channel=channel, person=person)

    def to_dict(self, *, include_credentials: bool = False) -> dict[str, Any]:
        """The JSON form; credentials only when asked (for a private store, not a log)."""
        data: dict[str, Any] = {"approved": self.approved, "scope": self.scope}
        for name in ("reason", "arguments", "by", "channel"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.person is not None:
            data["person"] = self.person.to_dict()
        if include_credentials and self.credentials is not None:
            data["credentials"] = self.credentials
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalDecision:
        return cls(
            approved=bool(data["approved"]),
            scope=data.get("scope", "once"),
            reason=data.get("reason"),
            arguments=data.get("arguments"),
            by=data.get("by"),
            channel=data.get("channel"),
            credentials=data.get("credentials"),
            person=Person.from_dict(data["person"])
            if isinstance(data.get("person"), Mapping)
            else None,
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRecord:
    """An approval as a store holds it: the request, where it stands, and the decision."""

    request: ApprovalRequest
    status: ApprovalStatus
    """``expired`` is reported for a pending or approved-but-unused approval past its time."""
    decision: ApprovalDecision | None = None
    resolved_at: float | None = None
    consumed_at: float | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments to run: the person's edit if they made one, else the request's."""
        if self.decision is not None and self.decision.arguments is not None:
            return self.decision.arguments
        return self.request.arguments
