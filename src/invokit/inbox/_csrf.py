"""Cross-site request forgery: a state change needs the session's CSRF token in its form and
an ``Origin`` header naming this server. Either alone would do against most forgeries; both
are asked, so a leak of one is not enough."""

from __future__ import annotations

import hmac
from collections.abc import Collection

from starlette.requests import Request


def same_origin(request: Request, origins: Collection[str]) -> bool:
    """Whether the request says it comes from one of this server's ``origins``. A browser
    sends ``Origin`` with every POST; a request without one is refused."""
    origin = request.headers.get("origin")
    return origin is not None and origin in origins


def token_matches(sent: object, expected: str) -> bool:
    """Whether the form's ``csrf`` field is the session's token (compared in constant time)."""
    return isinstance(sent, str) and hmac.compare_digest(sent.encode(), expected.encode())
