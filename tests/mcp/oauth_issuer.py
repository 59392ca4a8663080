"""A small OAuth 2.1 / OpenID Connect issuer on 127.0.0.1, for tests of the resource server.

A real HTTP server (a thread) with real keys made by ``cryptography``: discovery at
``/.well-known/openid-configuration``, its key set at ``/jwks`` and a token endpoint at
``/token`` that signs an access token for the subject, audience (``resource``, RFC 8707),
scopes and lifetime a test asks for. As an OpenID Connect provider it has an authorization
endpoint, ``/authorize``: a sign-in form (a user name, no password) that redirects back with
a code, which ``/token`` exchanges (``authorization_code``, PKCE ``S256`` required) for an ID
token for the client. It can rotate its signing key, and counts how often its
key set is fetched.
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
        self.codes: dict[str, dict[str, str]] = {}
        """Authorization codes not yet exchanged, with what they were issued for."""
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
            "grant_types_supported": ["authorization_code", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
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

        def _form(self) -> dict[str, str]:
            length = int(self.headers.get("content-length") or 0)
            return {k: v[-1] for k, v in parse_qs(self.rfile.read(length).decode()).items()}

        def _sign_in_page(self) -> None:
            """The provider's sign-in form; the request's parameters travel on as fields."""
            query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query).items()}
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

        def _authorize(self) -> None:
            """The form posted: a code for the user, back to the client's redirect URI."""
            form = self._form()
            if form.get("response_type") != "code" or form.get("code_challenge_method") != "S256":
                self._json(400, {"error": "invalid_request"})
                return
            code = secrets.token_urlsafe(16)
            with issuer._lock:
                issuer.codes[code] = {
                    "sub": form.get("username", ""),
                    "client_id": form.get("client_id", ""),
                    "redirect_uri": form.get("redirect_uri", ""),
                    "challenge": form.get("code_challenge", ""),
                    "nonce": form.get("nonce", ""),
                }
            target = (
                form["redirect_uri"]
                + "?"
                + urlencode({"code": code, "state": form.get("state", "")})
            )
            self.send_response(302)
            self.send_header("location", target)
            self.send_header("content-length", "0")
            self.end_headers()

        def _exchange(self, form: dict[str, str]) -> None:
            """``authorization_code``: the ID token for a code, once, with its PKCE verifier."""
            with issuer._lock:
                grant = issuer.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if (
                grant is None
                or grant["client_id"] != form.get("client_id")
                or grant["redirect_uri"] != form.get("redirect_uri")
                or challenge.decode() != grant["challenge"]
            ):
                self._json(400, {"error": "invalid_grant"})
                return
            claims = issuer.claims(grant["sub"], grant["client_id"])
            if grant["nonce"]:
                claims["nonce"] = grant["nonce"]
            self._json(
                200,
                {
                    "id_token": issuer.current.sign(claims),
                    "access_token": issuer.current.sign(claims),
                    "token_type": "Bearer",
                    "expires_in": 300,
                },
            )

        def do_GET(self) -> None:
            if self.path.startswith("/authorize?"):
                self._sign_in_page()
            elif self.path == "/.well-known/openid-configuration":
                self._json(200, issuer.document())
            elif self.path == "/jwks":
                self._json(200, issuer.jwks())
            else:
                self._json(404, {"error": "not_found"})

        def do_POST(self) -> None:
            if self.path == "/authorize":
                self._authorize()
                return
            if self.path != "/token":
                self._json(404, {"error": "not_found"})
                return
            form = self._form()
            if form.get("grant_type") == "authorization_code":
                self._exchange(form)
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
