"""The inbox's sign-in session: a cookie the server signs (HMAC-SHA256 from the standard
library), so a browser can hold who signed in without the server keeping a table of sessions.

The cookie carries who signed in, the session's CSRF token and when it ends, as base64url JSON,
then a dot and the HMAC of that text under a key only the processes serving the inbox over one
state know (``invokit.cli._inbox_secret`` keeps it in the state). A cookie that does not
verify, or has ended, is no session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest

COOKIE = "invokit_inbox"
LIFETIME = 8 * 3600.0
"""Seconds a sign-in lasts: a working day."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Session:
    """A signed-in person."""

    who: dict[str, str] | None
    """The person's issuer and subject (``{"iss": ..., "sub": ...}``) with ``[serve.auth]``;
    ``None`` for whoever holds the serve token (auth off: one identity)."""
    csrf: str
    """The token every state-changing form of this session must carry."""
    expires_at: float
    groups: tuple[str, ...] = ()
    """The groups the issuer's ID token named (``groups``): what ``group:`` approvers match."""

    @property
    def name(self) -> str:
        """How the person is named in decisions and on the page."""
        if self.who is None:
            return "token holder"
        return f"{self.who['sub']} ({self.who['iss']})"

    def owns(self, caller: dict[str, str] | None) -> bool:
        """Whether this person may see and answer a question asked by ``caller``: with auth
        off every question; with auth on only their own."""
        if self.who is None:
            return True
        return caller is not None and caller == self.who

    def sees(self, request: ApprovalRequest) -> bool:
        """Whether this person may see and answer ``request``: their own agent's question, or
        one whose rule names them among its approvers (``user:SUB`` or ``group:NAME``), as
        with four eyes, where someone else must approve."""
        from invokit.inbox._questions import caller_of

        if self.owns(caller_of(request)):
            return True
        deciders = request.deciders
        if self.who is None or deciders is None:
            return False
        named = {f"user:{self.who['sub']}", *(f"group:{g}" for g in self.groups)}
        return any(approver in named for approver in deciders.approvers)


class Signer:
    """Makes and checks session cookies: signed with the first key, accepted under any (the
    previous key of a rotation stays accepted, so a rotation signs nobody out)."""

    def __init__(self, secret: bytes | Sequence[bytes] | None = None) -> None:
        if secret is None:
            keys: tuple[bytes, ...] = (secrets.token_bytes(32),)
        elif isinstance(secret, bytes):
            keys = (secret,)
        else:
            keys = tuple(secret)
        if not keys or not all(len(k) >= 16 for k in keys):
            raise ValueError("the inbox's session keys must be at least 16 bytes each")
        self._keys = keys

    def __repr__(self) -> str:
        return f"Signer({len(self._keys)} key(s))"  # never the keys themselves

    def new(
        self,
        who: dict[str, str] | None,
        *,
        groups: tuple[str, ...] = (),
        now: float | None = None,
    ) -> Session:
        started = time.time() if now is None else now
        return Session(
            who=who, csrf=secrets.token_urlsafe(24), expires_at=started + LIFETIME, groups=groups
        )

    def dumps(self, session: Session) -> str:
        return self.seal(
            {
                "who": session.who,
                "csrf": session.csrf,
                "exp": session.expires_at,
                "groups": list(session.groups),
            }
        )

    def loads(self, cookie: str | None, *, now: float | None = None) -> Session | None:
        """The session in ``cookie``; ``None`` when there is none, it was not signed here,
        it is malformed or it has ended."""
        body = self.unseal(cookie, now=now)
        if body is None:
            return None
        who, csrf, groups = body.get("who"), body.get("csrf"), body.get("groups", [])
        if not isinstance(csrf, str) or (who is not None and not _principal(who)):
            return None
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            return None
        return Session(who=who, csrf=csrf, expires_at=float(body["exp"]), groups=tuple(groups))

    def seal(self, body: dict[str, Any]) -> str:
        """``body`` (with an ``exp`` time) as signed text."""
        text = base64.urlsafe_b64encode(json.dumps(body, sort_keys=True).encode()).decode()
        return f"{text}.{self._mac(text, self._keys[0])}"

    def unseal(self, sealed: str | None, *, now: float | None = None) -> dict[str, Any] | None:
        """What :meth:`seal` signed; ``None`` when not signed here, malformed or past ``exp``."""
        if not sealed or "." not in sealed:
            return None
        text, _, mac = sealed.rpartition(".")
        if not any(hmac.compare_digest(mac, self._mac(text, key)) for key in self._keys):
            return None
        try:
            body: Any = json.loads(base64.urlsafe_b64decode(text.encode()))
        except ValueError:
            return None
        if not isinstance(body, dict) or not isinstance(body.get("exp"), (int, float)):
            return None
        if (time.time() if now is None else now) >= body["exp"]:
            return None
        return body

    @staticmethod
    def _mac(text: str, key: bytes) -> str:
        digest = hmac.new(key, text.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _principal(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"iss", "sub"}
        and all(isinstance(v, str) for v in value.values())
    )
