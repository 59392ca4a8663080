"""A shared-secret gate in front of the HTTP transport.

Loopback is shared by every user and every sandbox on the machine, so a local HTTP server
without a secret lets any local process list, call and (through elicitation) approve tools. The
gate wants the token in an ``Authorization: Bearer`` header, or as ``?token=`` in the URL for
clients that cannot send headers (as Jupyter does).
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import parse_qs

Scope = dict[str, Any]


MISSING = (
    b"no token: this invokit server needs its token, in the URL its banner prints "
    b"(?token=...) or as an Authorization: Bearer header.\n"
)
WRONG = (
    b"wrong token: this is not the token of this invokit server; copy the URL from its "
    b"banner again (--new-token changes it, and each served root has its own).\n"
)
NO_OAUTH = b"this invokit server has no OAuth: send its token (the URL its banner prints).\n"


class TokenGate:
    """ASGI middleware: HTTP requests without the token get 401 and never reach ``app``.

    The 401's body says whether the token was missing or wrong. It is a plain 401: no OAuth
    resource metadata, and OAuth discovery (``/.well-known/oauth-*``) is answered 404, so a
    client such as the MCP Inspector does not start an OAuth flow for a server that has none.
    """

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("the token must not be empty")
        self.app = app
        self._expected = token.encode()

    def _given(self, scope: Scope) -> bytes | None:
        """The token the request sent (header first, then ``?token=``), or ``None``."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return bytes(value[7:].strip())
        raw: bytes = scope.get("query_string", b"")
        query = parse_qs(raw.decode("latin-1"))
        if "token" in query:
            return query["token"][-1].encode()
        return None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = self._given(scope)
        if given is not None and hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        if str(scope.get("path", "")).startswith("/.well-known/oauth"):
            await _plain(send, 404, NO_OAUTH)
        else:
            await _plain(send, 401, MISSING if given is None else WRONG, challenge=True)


async def _plain(send: Any, status: int, body: bytes, *, challenge: bool = False) -> None:
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    if challenge:
        headers.append((b"www-authenticate", b'Bearer realm="invokit"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
