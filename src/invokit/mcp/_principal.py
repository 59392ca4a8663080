"""Who called, with auth on: the issuer and subject of the caller's verified access token.

:class:`~invokit.mcp._resource_server.ResourceServerGate` puts the token's access on the
request; the server reads the principal from it, puts it on every call it makes
(``ToolCall.metadata[PRINCIPAL]``, so approvals and audit records carry it) and scopes the
call's session by it (:mod:`invokit.mcp._identity`). ``sub`` is unique only per issuer, so
the identity is always the pair.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

from invokit._calls import PRINCIPAL
from invokit.mcp._identity import IDENTITY_PREFIX

if TYPE_CHECKING:
    from invokit.permissions import Person

__all__ = ["PRINCIPAL", "Principal", "principal_of", "principal_session"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Principal:
    """A person or client as its issuer knows it."""

    issuer: str
    """The token's ``iss``."""
    subject: str
    """The token's ``sub``: unique within its issuer."""
    groups: tuple[str, ...] = ()
    """The token's ``groups``: what the policy's ``group:`` approvers match. Not part of the
    identity (a person whose groups change is the same person), so not in :meth:`to_dict`."""

    def person(self) -> Person:
        """The principal as a person who answers a question (approvers, four eyes)."""
        from invokit.permissions import Person

        return Person(sub=self.subject, iss=self.issuer, groups=self.groups)

    def to_dict(self) -> dict[str, str]:
        """The form calls and audit records carry: ``{"iss": ..., "sub": ...}``."""
        return {"iss": self.issuer, "sub": self.subject}

    def digest_parts(self) -> tuple[bytes, bytes]:
        return self.issuer.encode(), self.subject.encode()


def principal_of(request: Any) -> Principal | None:
    """The principal of the HTTP request the SDK hands a handler; ``None`` with auth off."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    claims = token.claims or {}
    issuer, groups = claims.get("iss"), claims.get("groups")
    if not isinstance(issuer, str) or not token.subject:
        return None
    listed = tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else ()
    return Principal(issuer=issuer, subject=token.subject, groups=listed)


def principal_session(principal: Principal) -> str:
    """The session id of a caller that has no session of its own (the stateless protocol,
    no client id): its principal's, so what it is granted or refused stays its own."""
    digest = hashlib.sha256()
    for part in (b"invokit-principal-identity-v1", *principal.digest_parts()):
        digest.update(len(part).to_bytes(4, "big") + part)
    return IDENTITY_PREFIX + digest.hexdigest()[:40]
