"""``invokit serve --http`` as an OAuth 2.1 resource server, per the MCP authorization spec.

In front of the MCP app: the Protected Resource Metadata document (RFC 9728) is served to
anyone at ``/.well-known/oauth-protected-resource`` and at its form for the served path
(``/.well-known/oauth-protected-resource/mcp``); every other request needs an access token
in ``Authorization: Bearer``, checked by :class:`~invokit.mcp._bearer.BearerVerifier`. A
request without one, or with one that is refused, is answered ``401`` (``403`` for a missing
scope) with a ``WWW-Authenticate`` header naming the metadata document and a JSON body saying
why; it never reaches the app. An accepted request carries the token's access as the SDK's
``AuthenticatedUser`` in ``scope["user"]``: the SDK binds each MCP session to the principal
that opened it, and the server reads the caller's issuer and subject from it.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.authentication import AuthCredentials

from invokit.mcp._bearer import BearerVerifier
from invokit.mcp._oauth_config import OAuthConfig
from invokit.mcp._token_errors import TokenRejected

logger = logging.getLogger("invokit.mcp")

Scope = dict[str, Any]
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(resource: str) -> str:
    """Where RFC 9728 puts the metadata of ``resource``: the well-known path inserted between
    its origin and its path (``https://h/mcp`` → ``https://h/.well-known/oauth-protected-resource/mcp``)."""
    parts = urlsplit(resource)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"


class ResourceServerGate:
    """ASGI middleware: the metadata document, and the bearer check before ``app``.

    Args:
        app: the MCP app.
        config: the issuer, audience, scopes and leeway.
        resource: this server's resource identifier (the audience tokens must name).
        name: the server's name, in the metadata document.
    """

    def __init__(self, app: Any, config: OAuthConfig, *, resource: str, name: str) -> None:
        self.app = app
        self.verifier = BearerVerifier(config, resource)
        self.metadata_url = metadata_url(resource)
        suffixed = WELL_KNOWN + urlsplit(resource).path.rstrip("/")
        self._paths = frozenset({WELL_KNOWN, suffixed})
        document: dict[str, Any] = {
            "resource": resource,
            "authorization_servers": [config.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": name,
        }
        if config.scopes:
            document["scopes_supported"] = list(config.scopes)
        self._document = json.dumps(document).encode()
        self._scope_hint = " ".join(config.scopes)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in self._paths:
            await self._metadata(scope, send)
            return
        token = _bearer(scope)
        if token is None:
            await self._refuse(send, None)
            return
        try:
            access = await self.verifier.access(token)
        except TokenRejected as exc:
            if exc.detail is not None:
                logger.warning("cannot check an access token: %s", exc.detail)
            await self._refuse(send, exc)
            return
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        await self.app(scope, receive, send)

    async def _metadata(self, scope: Scope, send: Any) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _send(send, 405, b'{"error": "method not allowed"}', [(b"allow", b"GET, HEAD")])
            return
        # Public, and read by browser-based clients too.
        headers = [(b"access-control-allow-origin", b"*"), (b"cache-control", b"max-age=3600")]
        body = self._document if scope["method"] == "GET" else b""
        await _send(send, 200, body, headers, length=len(self._document))

    async def _refuse(self, send: Any, rejected: TokenRejected | None) -> None:
        """``401`` naming the metadata document; with a refused token, its error and why."""
        challenge = [f'resource_metadata="{self.metadata_url}"']
        if rejected is None:
            # RFC 6750 §3.1: a request without a token gets no error code.
            body = {
                "error": "invalid_token",
                "error_description": "no access token was sent: this invokit server needs "
                "one (Authorization: Bearer ...) from the issuer its resource_metadata names",
            }
            status = 401
        else:
            body = {"error": rejected.error, "error_description": rejected.description}
            challenge.insert(0, f'error="{rejected.error}"')
            challenge.insert(1, f'error_description="{_quoted(rejected.description)}"')
            status = rejected.status
        if self._scope_hint:
            challenge.append(f'scope="{self._scope_hint}"')
        header = ("Bearer " + ", ".join(challenge)).encode("ascii", "replace")
        await _send(send, status, json.dumps(body).encode(), [(b"www-authenticate", header)])


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            token = value[7:].strip()
            return token.decode("latin-1") if token else None
    return None


def _quoted(text: str) -> str:
    """``text`` inside a header's quoted string: ASCII, no quote or backslash to end it."""
    ascii_text = text.encode("ascii", "replace").decode()
    return ascii_text.replace("\\", "/").replace('"', "'")


async def _send(
    send: Any,
    status: int,
    body: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    length: int | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body) if length is None else length).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
