"""An issuer's signing keys: found through its metadata, cached, refetched for an unknown key.

The issuer publishes where its keys are (``jwks_uri``) in its metadata: OpenID Connect
discovery (``/.well-known/openid-configuration``) or OAuth authorization server metadata
(RFC 8414, ``/.well-known/oauth-authorization-server``), tried in the order the MCP
authorization spec gives. The metadata must name the configured issuer exactly (RFC 8414 §3.3),
so a document served for another issuer is never trusted.

Keys are fetched once and kept. A token signed with a key id not in the set makes the set be
fetched again (the issuer rotated its keys), at most once per ``refetch_after`` seconds, so a
stream of tokens with made-up key ids cannot turn into a stream of requests to the issuer.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import jwt

from invokit.mcp._token_errors import TokenRejected

_TIMEOUT = 10.0


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be, in the order the MCP authorization spec tries them:
    RFC 8414 and OpenID Connect with the well-known part inserted before the issuer's path,
    then OpenID Connect discovery with it appended."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


class IssuerKeys:
    """The signing keys of one issuer, as :func:`jwt.decode` takes them.

    Args:
        issuer: the issuer's identifier (its ``iss``), exactly as its metadata names it.
        refetch_after: the fewest seconds between two fetches of the key set.
        max_age: seconds after which the kept set is fetched again on the next token.
    """

    def __init__(self, issuer: str, *, refetch_after: float = 10.0, max_age: float = 3600.0):
        self.issuer = issuer
        self.refetch_after = refetch_after
        self.max_age = max_age
        self._jwks_uri: str | None = None
        self._keys: dict[str | None, dict[str, Any]] = {}
        self._made: dict[tuple[str | None, str], jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._tried_at: float | None = None
        self._lock = anyio.Lock()

    async def key(self, kid: str | None, algorithm: str) -> jwt.PyJWK:
        """The key with id ``kid`` (a token without one: the issuer's only signing key), for
        ``algorithm`` (the key's own ``alg`` wins when it names one: then a token signed with
        another algorithm fails to verify).

        Raises:
            TokenRejected: no such key, even after fetching the set again, or the issuer's
                keys cannot be had (status 503 then: the token may well be good).
        """
        if self._find(kid) is None or self._stale():
            await self._refresh(kid)
        found = self._find(kid)
        if found is None and not self._keys:
            raise _unavailable("its keys were not fetched yet (the last try failed)")
        if found is None:
            raise TokenRejected(
                "invalid_token",
                f"the token is signed with a key ({str(kid)[:40]!r}) the issuer does not publish",
            )
        made = self._made.get((kid, algorithm))
        if made is None:
            try:
                made = jwt.PyJWK(found, algorithm=found.get("alg") or algorithm)
            except (jwt.PyJWTError, ValueError, TypeError, KeyError):
                raise TokenRejected(
                    "invalid_token",
                    f"the token's algorithm ({algorithm}) does not fit its key ({str(kid)[:40]!r})",
                ) from None
            self._made[(kid, algorithm)] = made
        return made

    async def _refresh(self, kid: str | None) -> None:
        """Fetch the set again, unless another token just did or it was tried too recently."""
        async with self._lock:
            found = self._find(kid)
            if (found is not None and not self._stale()) or not self._may_fetch():
                return
            self._tried_at = time.monotonic()
            try:
                await self._fetch()
            except TokenRejected:
                if found is None:
                    raise
                # Stale keys that still verify beat no answer while the issuer is away.

    def _find(self, kid: str | None) -> dict[str, Any] | None:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    def _stale(self) -> bool:
        return self._fetched_at is not None and time.monotonic() - self._fetched_at > self.max_age

    def _may_fetch(self) -> bool:
        """Whether the set may be fetched now: failures and successes alike count, so a
        broken or absent issuer is not asked again for every token either."""
        return self._tried_at is None or time.monotonic() - self._tried_at >= self.refetch_after

    async def _fetch(self) -> None:
        async with httpx.AsyncClient(timeout=_TIMEOUT, follow_redirects=False) as client:
            if self._jwks_uri is None:
                self._jwks_uri = await self._discover(client)
            document = await _get_json(client, self._jwks_uri, "its key set (jwks_uri)")
        keys = {}
        for raw in document.get("keys") or ():
            if _usable(raw):
                keys[raw.get("kid")] = raw
        if not keys:
            raise _unavailable(f"its key set at {self._jwks_uri} holds no usable signing key")
        self._keys = keys
        self._made = {}
        self._fetched_at = time.monotonic()

    async def _discover(self, client: httpx.AsyncClient) -> str:
        """The issuer's ``jwks_uri``, from the first of its metadata documents found."""
        for url in metadata_urls(self.issuer):
            try:
                response = await client.get(url, headers={"accept": "application/json"})
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise _unavailable(f"its metadata at {url} cannot be read: {exc!r}") from None
            if response.status_code != 200:
                continue
            document = _json(response, url)
            if document.get("issuer") != self.issuer:
                raise _unavailable(
                    f"its metadata at {url} names another issuer ({document.get('issuer')!r})"
                )
            jwks_uri = document.get("jwks_uri")
            if not isinstance(jwks_uri, str) or not jwks_uri:
                raise _unavailable(f"its metadata at {url} has no jwks_uri")
            return jwks_uri
        raise _unavailable("no metadata found at " + ", ".join(metadata_urls(self.issuer)))


def _usable(raw: Any) -> bool:
    """A public key for signatures that this library reads. Only asymmetric keys: a shared
    secret published in a key set is no proof of who signed."""
    if not isinstance(raw, dict) or raw.get("kty") not in ("RSA", "EC", "OKP"):
        return False
    if raw.get("use", "sig") != "sig" or (
        raw.get("kid") is not None and type(raw["kid"]) is not str
    ):
        return False
    try:
        jwt.PyJWK(raw)
    except (jwt.PyJWTError, ValueError, TypeError, KeyError):
        return False  # a malformed key in the issuer's set is not one of its keys
    return True


async def _get_json(client: httpx.AsyncClient, url: str, what: str) -> dict[str, Any]:
    try:
        response = await client.get(url, headers={"accept": "application/json"})
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise _unavailable(f"{what} at {url} cannot be read: {exc!r}") from None
    if response.status_code != 200:
        raise _unavailable(f"{what} at {url} answered {response.status_code}")
    return _json(response, url)


def _json(response: httpx.Response, url: str) -> dict[str, Any]:
    try:
        document = response.json()
    except ValueError:
        raise _unavailable(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise _unavailable(f"{url} did not answer a JSON object")
    return document


def _unavailable(problem: str) -> TokenRejected:
    return TokenRejected(
        "temporarily_unavailable",
        "this server cannot check tokens now: the issuer's keys are unavailable",
        status=503,
        detail=problem,
    )
