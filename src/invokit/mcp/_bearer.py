"""Access tokens checked as an OAuth 2.1 resource server: signature, issuer, audience, time, scopes.

A token is a JWT signed by the configured issuer with one of its published keys
(:mod:`invokit.mcp._jwks`), issued for this server (its ``aud`` names the server's audience,
RFC 8707), not expired (with a small leeway for clocks), and holding every required scope
(``scope``, space-separated, or ``scp``, a list). Its principal is its ``iss`` and ``sub``.
The JOSE work is PyJWT's; nothing here signs or verifies by hand.
"""

from __future__ import annotations

from typing import Any

import jwt
from mcp.server.auth.provider import AccessToken

from invokit.mcp._jwks import IssuerKeys
from invokit.mcp._oauth_config import OAuthConfig
from invokit.mcp._token_errors import TokenRejected

ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
"""The signature algorithms accepted: asymmetric ones only (never ``none`` or a shared-secret
HMAC, which would let anyone holding the published key sign)."""


class BearerVerifier:
    """Checks access tokens for one audience; the MCP SDK's ``TokenVerifier`` too.

    Args:
        config: the issuer, scopes and leeway.
        audience: what the tokens' ``aud`` must include.
    """

    def __init__(self, config: OAuthConfig, audience: str) -> None:
        self.config = config
        self.audience = audience
        self.keys = IssuerKeys(config.issuer)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's protocol: the token's access, or ``None`` when it is refused."""
        try:
            return await self.access(token)
        except TokenRejected:
            return None

    async def access(self, token: str) -> AccessToken:
        """What ``token`` grants, its principal in ``subject`` and ``claims["iss"]``.

        Raises:
            TokenRejected: saying why it is refused.
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("invalid_token", "the token is not a signed JWT") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in ALGORITHMS:
            raise TokenRejected(
                "invalid_token",
                f"the token is signed with {str(algorithm)[:20]!r}, which this server does not "
                f"accept ({', '.join(ALGORITHMS)})",
            )
        if kid is not None and type(kid) is not str:
            raise TokenRejected("invalid_token", "the token's key id (kid) is not text")
        key = await self.keys.key(kid, algorithm)
        claims = self._claims(token, key, algorithm)
        subject = claims.get("sub")
        if type(subject) is not str or not subject:
            raise TokenRejected("invalid_token", "the token's subject (sub) is empty")
        granted = _scopes(claims)
        missing = [s for s in self.config.scopes if s not in granted]
        if missing:
            raise TokenRejected(
                "insufficient_scope",
                f"the token lacks the scope(s) this server needs: {' '.join(missing)}",
                status=403,
                scope=" ".join(self.config.scopes),
            )
        client = claims.get("client_id", claims.get("azp"))
        return AccessToken(
            token=token,
            client_id=client if type(client) is str and client else subject,
            scopes=sorted(granted),
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=subject,
            claims={"iss": claims["iss"], "groups": _groups(claims)},
        )

    def _claims(self, token: str, key: jwt.PyJWK, algorithm: str) -> dict[str, Any]:
        config = self.config
        try:
            return jwt.decode(
                token,
                key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=config.issuer,
                leeway=config.leeway,
                options={"require": ["exp", "iss", "sub", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            problem = "the token has expired"
        except jwt.ImmatureSignatureError:
            problem = "the token is not valid yet (nbf or iat is in the future)"
        except jwt.InvalidAudienceError:
            problem = (
                f"the token is not for this server: its audience (aud) must include {self.audience}"
            )
        except jwt.InvalidIssuerError:
            problem = f"the token is from another issuer: this server trusts {config.issuer}"
        except jwt.MissingRequiredClaimError as exc:
            problem = f"the token has no {exc.claim} claim"
        except jwt.InvalidSignatureError:
            problem = "the token's signature does not verify with the issuer's key"
        except jwt.InvalidAlgorithmError:
            problem = "the token's algorithm does not fit the issuer's key"
        except jwt.PyJWTError as exc:
            problem = f"the token is not valid: {type(exc).__name__}"
        raise TokenRejected("invalid_token", problem)


def _groups(claims: dict[str, Any]) -> list[str]:
    """The groups a token says its subject is in (``groups``, a list of names), for the
    policy's ``group:`` approvers; anything else there counts as none."""
    listed = claims.get("groups")
    if not isinstance(listed, list):
        return []
    return [g for g in listed if isinstance(g, str) and g]


def _scopes(claims: dict[str, Any]) -> set[str]:
    """The scopes a token grants: ``scope`` (RFC 8693/9068, space-separated) or ``scp``."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return set(scope.split())
    listed = claims.get("scp")
    if isinstance(listed, list):
        return {s for s in listed if isinstance(s, str)}
    return set()
