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


class TokenGate:
    """ASGI middleware: HTTP requests without the token get 401 and never reach ``app``."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("the token must not be empty")
        self.app = app
        self._expected = token.encode()

    def _allowed(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return hmac.compare_digest(value[7:].strip(), self._expected)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get("token", [""])[-1].encode()
        return hmac.compare_digest(given, self._expected)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            body = b"Unauthorized: this invokit server needs its token (see its banner).\n"
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"www-authenticate", b'Bearer realm="invokit"'),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)
