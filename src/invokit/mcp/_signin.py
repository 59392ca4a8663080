"""Signing in to a protected MCP server without holding a connection open for a person.

The MCP SDK's ``OAuthClientProvider`` does the OAuth 2.1 work (metadata discovery, client
registration, PKCE, the token exchange, refreshing), but waits inside an HTTP request for the
person's answer. Here the wait is an interrupt instead: when a sign-in is needed, the
authorization URL is made, its PKCE verifier kept in the token store, and the request fails
with :class:`SignInNeeded`; the toolset turns that into ``AuthRequired``. When the person comes
back with the redirect's ``code`` and ``state`` (resuming the call), the next request finishes
the flow with the kept verifier. Tokens are read from the store on every request, so another
process's refresh (or sign-in) is used here at once and a rotated refresh token is never
replayed.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, PKCEParameters
from mcp.client.auth.utils import validate_authorization_response_iss
from mcp.shared.auth import OAuthClientMetadata
from pydantic import AnyUrl

from invokit.exceptions import AuthRequired, ToolFailed
from invokit.mcp._token_store import OAuthTokenStore, ServerTokens, TokenRows


@dataclass(frozen=True, kw_only=True, slots=True)
class MCPOAuth:
    """How invokit signs in to an MCP server that asks for OAuth (the MCP authorization spec).

    The person opens the authorization URL of the ``AuthRequired`` interrupt, signs in, and is
    sent to ``redirect_uri`` with ``code`` and ``state``; the host resumes the call with
    ``credentials={"callback_url": <that URL>}`` (or ``{"code": ..., "state": ...}``).
    """

    redirect_uri: str
    """Where the issuer sends the person back (registered with the issuer)."""
    client_name: str = "invokit"
    """The name dynamic client registration gives the issuer."""
    scopes: Sequence[str] = ()
    """Scopes to ask for; by default those the server names."""
    store: TokenRows | None = None
    """Where tokens live; default ``mcp-oauth.sqlite3`` in the state directory (the CLI uses
    ``invokit.postgres.PostgresOAuthTokenStore`` with a PostgreSQL state)."""


class SignInNeeded(Exception):
    """The server needs a person to sign in at ``url`` (raised inside the HTTP auth flow)."""

    def __init__(self, url: str, scopes: Sequence[str]) -> None:
        super().__init__("sign-in needed")
        self.url = url
        self.scopes = tuple(scopes)


class _QuietSignIn(logging.Filter):
    """Drops the SDK's "OAuth flow error" traceback when the "error" is a sign-in handed to
    a person: that is the normal way a sign-in starts here, not a failure."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], SignInNeeded))


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietSignIn())


@dataclass(frozen=True, kw_only=True, slots=True)
class _Answer:
    code: str
    verifier: str
    iss: str | None


class SignIn(OAuthClientProvider):
    """The SDK's OAuth client, with the person's part as an interrupt (see the module)."""

    def __init__(self, server_url: str, oauth: MCPOAuth) -> None:
        self.tokens = ServerTokens(oauth.store or OAuthTokenStore(), server_url)
        metadata = OAuthClientMetadata(
            client_name=oauth.client_name,
            redirect_uris=[AnyUrl(oauth.redirect_uri)],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope=" ".join(oauth.scopes) or None,
        )
        super().__init__(server_url, metadata, self.tokens, self._never, self._never_called)
        self.needed: SignInNeeded | None = None
        """The sign-in the server asked for last, until the person finishes it."""
        self._answer: _Answer | None = None

    async def _never(self, url: str) -> None:  # pragma: no cover - the grant below replaces it
        raise AssertionError("unused")

    async def _never_called(self) -> Any:  # pragma: no cover - the grant below replaces it
        raise AssertionError("unused")

    async def _initialize(self) -> None:
        await super()._initialize()
        # The SDK forgets when a stored token expires; without this a restarted host sends
        # an expired token and has to sign in again instead of refreshing.
        self.context.token_expiry_time = await self.tokens.expires_at()
        if self.context.oauth_metadata is None:
            # Likewise where its token endpoint is: a restarted host refreshes there.
            found, resource = await self.tokens.get_discovery()
            self.context.oauth_metadata = found
            self.context.protected_resource_metadata = resource
            if resource is not None and resource.authorization_servers:
                self.context.auth_server_url = str(resource.authorization_servers[0])
        # Read again on the next request: the store, not this object, is the truth.
        self._initialized = False

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        await self.tokens.set_discovery(
            self.context.oauth_metadata, self.context.protected_resource_metadata
        )

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        refreshed = await super()._handle_refresh_response(response)
        if not refreshed:
            # Tokens are read from the store on every request: a refused refresh token left
            # there would be tried again, in vain, before each call until someone signs in.
            await self.tokens.forget_tokens()
        return refreshed

    async def answer(self, credentials: Mapping[str, Any]) -> None:
        """Take the person's answer (``callback_url``, or ``code`` and ``state``) for the next
        request to finish the sign-in with.

        Raises:
            ToolFailed: the answer is malformed, an error from the issuer, or for no sign-in
                this host started (or one too old).
        """
        fields = _fields(credentials)
        if "error" in fields:
            why = fields.get("error_description") or fields["error"]
            raise ToolFailed(f"The sign-in was refused by the issuer: {why}", kind="auth_failed")
        code, state = fields.get("code"), fields.get("state")
        if not code or not state:
            raise ToolFailed(
                "The sign-in answer needs the redirect's code and state (or callback_url).",
                kind="invalid_credentials",
            )
        verifier = await self.tokens.take_pending(state)
        if verifier is None:
            raise ToolFailed(
                "The sign-in answer is for no sign-in this host started (or one over 15 "
                "minutes old); start again.",
                kind="invalid_credentials",
            )
        self._answer = _Answer(code=code, verifier=verifier, iss=fields.get("iss"))
        self.needed = None

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        answer, self._answer = self._answer, None
        if answer is not None:
            validate_authorization_response_iss(answer.iss, self.context.oauth_metadata)
            return answer.code, answer.verifier
        url = await self._authorization_url()
        self.needed = SignInNeeded(url, (self.context.client_metadata.scope or "").split())
        raise self.needed

    async def _authorization_url(self) -> str:
        """A new authorization URL (PKCE S256, a fresh state), its verifier kept in the store."""
        context = self.context
        assert context.client_info is not None and context.client_metadata.redirect_uris
        if context.oauth_metadata and context.oauth_metadata.authorization_endpoint:
            endpoint = str(context.oauth_metadata.authorization_endpoint)
        else:
            endpoint = urljoin(context.get_authorization_base_url(context.server_url), "/authorize")
        pkce = PKCEParameters.generate()
        state = secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": context.client_info.client_id,
            "redirect_uri": str(context.client_metadata.redirect_uris[0]),
            "state": state,
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
        }
        if context.should_include_resource_param(context.protocol_version):
            params["resource"] = context.get_resource_url()  # RFC 8707: audience-bound tokens
        if context.client_metadata.scope:
            params["scope"] = context.client_metadata.scope
        await self.tokens.put_pending(state, pkce.code_verifier)
        return f"{endpoint}?{urlencode(params)}"

    def required(self, server: str) -> AuthRequired:
        """The ``AuthRequired`` a call ends with while the sign-in waits for the person."""
        assert self.needed is not None and self.context.client_metadata.redirect_uris
        return AuthRequired(
            self.context.auth_server_url or server,
            self.needed.scopes,
            {
                "authorization_url": self.needed.url,
                "server": server,
                "redirect_uri": str(self.context.client_metadata.redirect_uris[0]),
            },
        )


def _fields(credentials: Mapping[str, Any]) -> dict[str, str]:
    """The redirect's query fields, from ``callback_url`` or given one by one."""
    url = credentials.get("callback_url")
    if isinstance(url, str):
        return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
    return {k: v for k, v in credentials.items() if isinstance(v, str)}
