"""The settings of ``invokit serve --http`` as an OAuth 2.1 resource server (``[serve.auth]``)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, kw_only=True, slots=True)
class OAuthConfig:
    """``invokit serve --http`` as an OAuth 2.1 resource server (``[serve.auth]``)."""

    issuer: str
    """The authorization server whose tokens are accepted, exactly as its tokens' ``iss``
    and its metadata's ``issuer`` say it (``https://``, or ``http://`` on loopback)."""
    audience: str | None = None
    """What the tokens' ``aud`` must include: this server's canonical URL (RFC 8707), also
    the ``resource`` of its protected resource metadata. ``None``: the URL it serves at."""
    scopes: tuple[str, ...] = ()
    """Scopes every token must hold; a token without one is answered ``403``."""
    leeway: float = 30.0
    """Seconds of clock difference tolerated on ``exp``, ``nbf`` and ``iat``."""

    def __post_init__(self) -> None:
        problem = _url_problem(self.issuer, "issuer")
        if problem is None and self.audience is not None and not self.audience:
            problem = "the audience must not be empty"
        if problem is None and any(not s or " " in s for s in self.scopes):
            problem = "each scope must be a non-empty word without spaces"
        if problem is None and not 0 <= self.leeway <= 300:
            problem = "the leeway must be from 0 to 300 seconds"
        if problem is not None:
            raise ValueError(problem)


def _url_problem(url: str, what: str) -> str | None:
    """Why ``url`` cannot be the issuer: tokens are trusted on what its keys sign, so its
    keys must come over TLS, except from this machine."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return None
    if parts.scheme == "http" and parts.hostname is not None and _loopback(parts.hostname):
        return None
    return f"the {what} must be an https:// URL (or http:// on loopback), not {url!r}"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
