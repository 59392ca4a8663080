"""A small OAuth 2.1 / OpenID Connect issuer on 127.0.0.1, for tests of the resource server.

A real HTTP server (a thread) with real keys made by ``cryptography``: discovery at
``/.well-known/openid-configuration``, its key set at ``/jwks`` and a token endpoint at
``/token`` that signs an access token for the subject, audience (``resource``, RFC 8707),
scopes and lifetime a test asks for. It can rotate its signing key, and counts how often its
key set is fetched.

For tests of invokit as an OAuth client it also registers clients (``/register``, RFC 7591),
signs a person in at ``/authorize`` (no page for a registered client: it redirects at once
with a code for ``person``, checking the PKCE challenge at the token endpoint) and refreshes
tokens; refresh tokens can be revoked, and refreshes are counted. As an OpenID Connect
provider for any other client (the inbox) ``/authorize`` is a sign-in form (a user name, no
password) that posts back and redirects with a code; its token answer carries an ID token for
that client, with the request's ``nonce``. A subject's tokens (access and ID) carry the
``groups`` a test gives it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


@dataclass(frozen=True, kw_only=True, slots=True)
class SigningKey:
    """An RSA key pair and its key id."""

    kid: str
    private: rsa.RSAPrivateKey

    @classmethod
    def new(cls) -> SigningKey:
        return cls(
            kid=uuid.uuid4().hex[:12],
            private=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        )

    def jwk(self) -> dict[str, Any]:
        public: dict[str, Any] = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**public, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def sign(self, claims: dict[str, Any], *, kid: str | None = None) -> str:
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": kid or self.kid})


class Issuer:
    """The issuer's state: its URL once serving, its published keys, its fetch count."""

    def __init__(self) -> None:
        self.url = ""
        self.keys = [SigningKey.new()]
        self.jwks_fetches = 0
        self.named_issuer: str | None = None
        """The ``issuer`` its metadata names, when a test makes it name another one."""
        self.extra_keys: list[dict[str, Any]] = []
        """More JWKs published beside the signing keys."""
        self.person = "alice"
        """Who signs in at ``/authorize``."""
        self.groups: dict[str, list[str]] = {}
        """The ``groups`` claim of each subject's tokens (access and ID), when it has one."""
        self.refreshes = 0
        """Refresh grants answered with a new token."""
        self.sign_ins = 0
        """Authorization codes exchanged for tokens."""
        self._codes: dict[str, dict[str, str]] = {}
        self._refresh: dict[str, dict[str, str]] = {}
        self._clients: set[str] = set()
        self._lock = threading.Lock()

    @property
    def current(self) -> SigningKey:
        return self.keys[-1]

    def rotate(self) -> SigningKey:
        """Publish a new key and sign with it from now on (the old one stays published)."""
        with self._lock:
            self.keys.append(SigningKey.new())
            return self.keys[-1]

    def claims(
        self, sub: str, aud: str, *, scope: str = "", expires_in: int = 300
    ) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "sub": sub,
            "aud": aud,
            "iat": now,
            "exp": now + expires_in,
            "client_id": "test-client",
            "jti": uuid.uuid4().hex,
        }
        if scope:
            claims["scope"] = scope
        if sub in self.groups:
            claims["groups"] = list(self.groups[sub])
        return claims

    def token(self, sub: str, aud: str, *, scope: str = "", expires_in: int = 300) -> str:
        """An access token from the token endpoint, over HTTP."""
        response = httpx.post(
            f"{self.url}/token",
            data={
                "grant_type": "client_credentials",
                "sub": sub,
                "resource": aud,
                "scope": scope,
                "expires_in": str(expires_in),
            },
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    def document(self) -> dict[str, Any]:
        return {
            "issuer": self.named_issuer or self.url,
            "jwks_uri": f"{self.url}/jwks",
            "token_endpoint": f"{self.url}/token",
            "authorization_endpoint": f"{self.url}/authorize",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "registration_endpoint": f"{self.url}/register",
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
        }

    def revoke_refresh_tokens(self) -> None:
        """Forget every refresh token issued so far."""
        with self._lock:
            self._refresh.clear()

    def register(self, body: dict[str, Any]) -> dict[str, Any]:
        client_id = "client-" + uuid.uuid4().hex[:8]
        with self._lock:
            self._clients.add(client_id)
        return {**body, "client_id": client_id, "token_endpoint_auth_method": "none"}

    def authorize(self, query: dict[str, str]) -> str:
        """Where the person's browser goes after signing in: the redirect with a code."""
        if (
            query.get("client_id") not in self._clients
            or query.get("code_challenge_method") != "S256"
        ):
            raise ValueError("bad authorization request")
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = {**query, "sub": self.person}
        back = {"code": code, "state": query.get("state", "")}
        return f"{query['redirect_uri']}?{urlencode(back)}"

    def sign_in(self, form: dict[str, str]) -> str:
        """The sign-in form posted (any client): the redirect with a code for its user."""
        if form.get("response_type") != "code" or form.get("code_challenge_method") != "S256":
            raise ValueError("bad authorization request")
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = {**form, "sub": form.get("username", "")}
        back = {"code": code, "state": form.get("state", "")}
        return f"{form['redirect_uri']}?{urlencode(back)}"

    def grant(self, form: dict[str, str]) -> dict[str, Any] | None:
        """The token response for an authorization code or refresh grant, or ``None``."""
        kind = form.get("grant_type")
        with self._lock:
            if kind == "authorization_code":
                asked = self._codes.pop(form.get("code", ""), None)
                if asked is None or asked["client_id"] != form.get("client_id"):
                    return None
                if form.get("redirect_uri", asked["redirect_uri"]) != asked["redirect_uri"]:
                    return None
                verifier = form.get("code_verifier", "").encode()
                challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest())
                if challenge.rstrip(b"=").decode() != asked["code_challenge"]:
                    return None
                self.sign_ins += 1
            elif kind == "refresh_token":
                asked = self._refresh.pop(form.get("refresh_token", ""), None)
                if asked is None:
                    return None
                self.refreshes += 1
            else:
                return None
            refresh = secrets.token_urlsafe(16)
            self._refresh[refresh] = asked
        claims = self.claims(asked["sub"], asked.get("resource", ""), scope=asked.get("scope", ""))
        identity = self.claims(asked["sub"], asked["client_id"])
        if asked.get("nonce"):
            identity["nonce"] = asked["nonce"]
        return {
            "access_token": self.current.sign(claims),
            "id_token": self.current.sign(identity),
            "token_type": "Bearer",
            "expires_in": claims["exp"] - claims["iat"],
            "refresh_token": refresh,
            "scope": asked.get("scope", ""),
        }

    def jwks(self) -> dict[str, Any]:
        with self._lock:
            self.jwks_fetches += 1
            return {"keys": [*self.extra_keys, *(k.jwk() for k in self.keys)]}


def _handler(issuer: Issuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _json(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sign_in_page(self, query: dict[str, str]) -> None:
            """The provider's sign-in form; the request's parameters travel on as fields."""
            fields = "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                for k, v in query.items()
            )
            body = (
                "<!doctype html><title>Test provider</title><h1>Sign in</h1>"
                f'<form method="post" action="/authorize">{fields}'
                '<input name="username" id="username"> <button id="login">Sign in</button>'
                "</form>"
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                self._json(200, issuer.document())
            elif self.path == "/jwks":
                self._json(200, issuer.jwks())
            elif self.path.startswith("/authorize?"):
                query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
                if query.get("client_id") not in issuer._clients:
                    self._sign_in_page(query)
                    return
                try:
                    location = issuer.authorize(query)
                except (KeyError, ValueError):
                    self._json(400, {"error": "invalid_request"})
                    return
                self.send_response(302)
                self.send_header("location", location)
                self.send_header("content-length", "0")
                self.end_headers()
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length).decode()
            if self.path == "/register":
                self._json(201, issuer.register(json.loads(body)))
                return
            if self.path == "/authorize":
                try:
                    location = issuer.sign_in({k: v[-1] for k, v in parse_qs(body).items()})
                except (KeyError, ValueError):
                    self._json(400, {"error": "invalid_request"})
                    return
                self.send_response(302)
                self.send_header("location", location)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            if self.path != "/token":
                self._json(404, {"error": "not_found"})
                return
            form = {k: v[-1] for k, v in parse_qs(body).items()}
            if form.get("grant_type") in ("authorization_code", "refresh_token"):
                granted = issuer.grant(form)
                if granted is None:
                    self._json(400, {"error": "invalid_grant"})
                else:
                    self._json(200, granted)
                return
            if form.get("grant_type") != "client_credentials" or not form.get("sub"):
                self._json(400, {"error": "invalid_request"})
                return
            claims = issuer.claims(
                form["sub"],
                form.get("resource", ""),
                scope=form.get("scope", ""),
                expires_in=int(form.get("expires_in", "300")),
            )
            self._json(
                200,
                {
                    "access_token": issuer.current.sign(claims),
                    "token_type": "Bearer",
                    "expires_in": claims["exp"] - claims["iat"],
                },
            )

    return Handler


@contextmanager
def running_issuer() -> Iterator[Issuer]:
    """An issuer serving HTTP on a free loopback port until the block ends."""
    issuer = Issuer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(issuer))
    issuer.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="test-issuer", daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
