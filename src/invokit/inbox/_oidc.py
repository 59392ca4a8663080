"""OpenID Connect sign-in for the inbox: the authorization code flow with PKCE (S256), as a
public client of the issuer of ``[serve.auth]``.

``/inbox/login`` sends the browser to the issuer's authorization endpoint with a fresh
``state``, ``nonce`` and code challenge, kept meanwhile in a short-lived signed cookie
(``SameSite=Lax``: the issuer's redirect back is a cross-site navigation). ``/inbox/callback``
checks the ``state``, exchanges the code with its verifier at the token endpoint, and checks the
ID token with PyJWT against the issuer's published keys (its issuer, this client as audience,
expiry, the nonce). The person is then the token's issuer and subject: the principal their
agents' calls carry.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from invokit.inbox import _render
from invokit.inbox._session import Signer

LOGIN_COOKIE = "invokit_inbox_login"
LOGIN_TIME = 600.0
"""Seconds a person has to sign in at the issuer."""
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")


class SignInFailed(Exception):
    """Why a sign-in did not complete, said to the person."""


class OidcSignIn:
    """The inbox's sign-in at ``issuer`` as client ``client_id``."""

    def __init__(self, issuer: str, client_id: str) -> None:
        from invokit.mcp.internal import IssuerKeys

        self.issuer = issuer
        self.client_id = client_id
        self.keys = IssuerKeys(issuer)
        self._metadata: dict[str, Any] | None = None

    async def _endpoints(self) -> dict[str, Any]:
        if self._metadata is None:
            from invokit.mcp.internal import metadata_urls

            async with httpx.AsyncClient(timeout=10) as client:
                for url in metadata_urls(self.issuer):
                    try:
                        answer = await client.get(url)
                        document = answer.json() if answer.status_code == 200 else None
                    except (httpx.HTTPError, ValueError):
                        continue
                    if (
                        isinstance(document, dict)
                        and document.get("issuer") == self.issuer
                        and isinstance(document.get("authorization_endpoint"), str)
                        and isinstance(document.get("token_endpoint"), str)
                    ):
                        self._metadata = document
                        break
            if self._metadata is None:
                raise SignInFailed("the issuer's metadata (authorization endpoint) is unavailable")
        return self._metadata

    async def login(self, request: Request, signer: Signer) -> Response:
        try:
            endpoints = await self._endpoints()
        except SignInFailed as exc:
            return _failed(str(exc), 503)
        state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": _callback(request),
                "scope": "openid",
                "state": state,
                "nonce": nonce,
                "code_challenge": challenge.decode().rstrip("="),
                "code_challenge_method": "S256",
            }
        )
        response = RedirectResponse(f"{endpoints['authorization_endpoint']}?{query}", 302)
        sealed = signer.seal(
            {"state": state, "nonce": nonce, "verifier": verifier, "exp": time.time() + LOGIN_TIME}
        )
        response.set_cookie(
            LOGIN_COOKIE,
            sealed,
            max_age=int(LOGIN_TIME),
            path="/inbox",
            httponly=True,
            samesite="lax",
            secure=request.url.scheme == "https",
        )
        return response

    async def callback(
        self, request: Request, signer: Signer
    ) -> tuple[dict[str, str], tuple[str, ...]] | Response:
        """The person's issuer and subject and their groups, or the page saying why not."""
        pending = signer.unseal(request.cookies.get(LOGIN_COOKIE))
        params = request.query_params
        if pending is None:
            return _failed("the sign-in took too long or did not start here: try again", 400)
        if not secrets.compare_digest(str(params.get("state", "")), str(pending["state"])):
            return _failed("the sign-in's state does not match: try again", 400)
        if "error" in params or "code" not in params:
            return _failed("the issuer did not sign you in", 400)
        try:
            return await self._person(request, str(params["code"]), pending)
        except SignInFailed as exc:
            return _failed(str(exc), 400)

    async def _person(
        self, request: Request, code: str, pending: dict[str, Any]
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        endpoints = await self._endpoints()
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                answer = await client.post(
                    endpoints["token_endpoint"],
                    data={
                        "grant_type": "authorization_code",
                        "code": code,
                        "redirect_uri": _callback(request),
                        "client_id": self.client_id,
                        "code_verifier": pending["verifier"],
                    },
                )
            tokens = answer.json()
        except (httpx.HTTPError, ValueError):
            raise SignInFailed("the issuer's token endpoint did not answer") from None
        id_token = tokens.get("id_token") if isinstance(tokens, dict) else None
        if answer.status_code != 200 or not isinstance(id_token, str):
            raise SignInFailed("the issuer refused the code")
        claims = await self._verified(id_token)
        if not secrets.compare_digest(str(claims.get("nonce", "")), str(pending["nonce"])):
            raise SignInFailed("the ID token's nonce does not match this sign-in")
        groups = claims.get("groups")
        listed = tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else ()
        return {"iss": str(claims["iss"]), "sub": str(claims["sub"])}, listed

    async def _verified(self, id_token: str) -> dict[str, Any]:
        from invokit.mcp.internal import TokenRejected

        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError:
            raise SignInFailed("the ID token is not a signed JWT") from None
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise SignInFailed("the ID token is signed with an algorithm not accepted")
        try:
            key = await self.keys.key(header.get("kid"), str(algorithm))
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key,
                algorithms=[str(algorithm)],
                audience=self.client_id,
                issuer=self.issuer,
                leeway=30,
                options={"require": ["exp", "iat", "iss", "sub", "aud"]},
            )
        except TokenRejected as exc:
            raise SignInFailed(f"the ID token was refused: {exc.description}") from None
        except jwt.PyJWTError as exc:
            raise SignInFailed(f"the ID token was refused: {exc}") from None
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise SignInFailed("the ID token names no subject")
        return claims


def _callback(request: Request) -> str:
    """Where the issuer sends the browser back: this server, as the browser reached it (the
    ``Host`` was checked against the server's own)."""
    return f"{request.url.scheme}://{request.headers['host']}/inbox/callback"


def _failed(why: str, status: int) -> Response:
    return HTMLResponse(
        _render.signin(issuer=None, notice=f"sign-in failed: {why}", form=False), status
    )


def sign_in(settings: Any, origins: Sequence[str]) -> OidcSignIn | None:
    """The sign-in at the issuer of ``[serve.auth]``; ``None`` without an ``inbox_client_id``
    (then no inbox is served with auth on)."""
    client_id = getattr(settings, "inbox_client_id", None)
    if settings is None or not client_id:
        return None
    return OidcSignIn(settings.issuer, client_id)
