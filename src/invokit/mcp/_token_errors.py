"""Why a bearer token was turned away: what the ``401``/``403`` answer says to the client."""

from __future__ import annotations

from typing import Literal

TokenError = Literal[
    "invalid_request", "invalid_token", "insufficient_scope", "temporarily_unavailable"
]
"""The ``error`` code of the answer (RFC 6750 §3.1; the last one is a ``503``)."""


class TokenRejected(Exception):
    """A request's bearer token cannot be accepted; never raised out of the HTTP gate.

    Args:
        error: the RFC 6750 error code.
        description: one sentence for the client, in the answer's body and header.
        status: the HTTP status: 401, 403 (``insufficient_scope``) or 503.
        detail: more for the server's log only (it may name the issuer's URLs).
    """

    def __init__(
        self,
        error: TokenError,
        description: str,
        *,
        status: int = 401,
        detail: str | None = None,
        scope: str | None = None,
    ) -> None:
        super().__init__(description)
        self.error: TokenError = error
        self.description = description
        self.status = status
        self.detail = detail
        self.scope = scope
        """The scopes a ``403 insufficient_scope`` says are needed (space-separated)."""
