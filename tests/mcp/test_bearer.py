"""Access tokens checked against a real issuer on 127.0.0.1 (keys, metadata, algorithms), with
the verifier in this process."""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Callable, Iterator, Mapping

import jwt
import pytest

from invokit.mcp import OAuthConfig
from invokit.mcp._bearer import BearerVerifier
from invokit.mcp._jwks import IssuerKeys
from invokit.mcp._token_errors import TokenRejected
from tests.mcp.oauth_issuer import Issuer, SigningKey, running_issuer

pytestmark = pytest.mark.anyio

AUDIENCE = "http://127.0.0.1:9/mcp"


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


def verifier_for(issuer: Issuer, **keys: float) -> BearerVerifier:
    verifier = BearerVerifier(OAuthConfig(issuer=issuer.url, scopes=("mcp:tools",)), AUDIENCE)
    if keys:
        verifier.keys = IssuerKeys(issuer.url, **keys)
    return verifier


def signed(issuer: Issuer, sub: str = "alice") -> str:
    return issuer.current.sign(issuer.claims(sub, AUDIENCE, scope="mcp:tools"))


async def rejected(verifier: BearerVerifier, token: str) -> TokenRejected:
    with pytest.raises(TokenRejected) as caught:
        await verifier.access(token)
    return caught.value


async def test_a_good_token_gives_its_principal_and_scopes(issuer: Issuer) -> None:
    """The access of a good token names its subject and issuer, its scopes and audience."""
    access = await verifier_for(issuer).access(signed(issuer))
    assert access.subject == "alice"
    assert access.claims == {"iss": issuer.url, "groups": []}
    assert access.scopes == ["mcp:tools"]
    assert access.resource == AUDIENCE


def _unsigned(issuer: Issuer) -> str:
    claims = issuer.claims("alice", AUDIENCE, scope="mcp:tools")
    return jwt.encode(claims, key=None, algorithm="none")  # type: ignore[arg-type]


def _hmac_with_the_public_key(issuer: Issuer) -> str:
    """The classic confusion attack: HS256 keyed with the issuer's published key."""
    claims = issuer.claims("alice", AUDIENCE, scope="mcp:tools")
    header = {"alg": "HS256", "kid": issuer.current.kid, "typ": "JWT"}

    def part(data: Mapping[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    body = f"{part(header)}.{part(claims)}"
    secret = json.dumps(issuer.current.jwk()).encode()
    mac = hmac.new(secret, body.encode(), "sha256").digest()
    return body + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "make",
    [pytest.param(_unsigned, id="alg-none"), pytest.param(_hmac_with_the_public_key, id="hs256")],
)
async def test_a_token_not_signed_with_an_asymmetric_key_is_refused(
    issuer: Issuer, make: Callable[[Issuer], str]
) -> None:
    """alg "none" and HMAC tokens are refused before any key is looked at."""
    problem = await rejected(verifier_for(issuer), make(issuer))
    assert problem.error == "invalid_token"
    assert "does not accept" in problem.description
    assert issuer.jwks_fetches == 0


async def test_made_up_key_ids_do_not_flood_the_issuer(issuer: Issuer) -> None:
    """Tokens with unknown key ids fetch the key set again at most once per refetch period."""
    verifier = verifier_for(issuer, refetch_after=3600.0)
    await verifier.access(signed(issuer))
    for _ in range(20):
        stranger = SigningKey.new()
        problem = await rejected(
            verifier, stranger.sign(issuer.claims("alice", AUDIENCE, scope="mcp:tools"))
        )
        assert "does not publish" in problem.description
    assert issuer.jwks_fetches == 1


async def test_metadata_naming_another_issuer_is_not_trusted(issuer: Issuer) -> None:
    """Metadata whose issuer is not the configured one gives no keys: 503, nothing fetched."""
    issuer.named_issuer = "http://127.0.0.1:1"
    problem = await rejected(verifier_for(issuer), signed(issuer))
    assert problem.status == 503
    assert problem.error == "temporarily_unavailable"
    assert problem.detail is not None and "another issuer" in problem.detail
    assert issuer.jwks_fetches == 0


async def test_a_shared_secret_in_the_key_set_is_never_a_key(issuer: Issuer) -> None:
    """An "oct" (HMAC) key published in the set is not one of the issuer's keys: a token
    naming it is refused as signed with an unpublished key."""
    secret = base64.urlsafe_b64encode(b"s" * 32).rstrip(b"=").decode()
    issuer.extra_keys = [{"kty": "oct", "kid": "shared", "k": secret, "alg": "HS256"}]
    verifier = verifier_for(issuer)
    await verifier.access(signed(issuer))
    forged = SigningKey.new().sign(
        issuer.claims("alice", AUDIENCE, scope="mcp:tools"), kid="shared"
    )
    problem = await rejected(verifier, forged)
    assert "does not publish" in problem.description


async def test_kept_keys_still_verify_while_the_issuer_is_away() -> None:
    """Once the key set is stale and the issuer cannot be reached, the kept keys still verify;
    an issuer never reached gives 503."""
    with running_issuer() as issuer:
        verifier = verifier_for(issuer, max_age=0.0, refetch_after=0.0)
        token = signed(issuer)
        await verifier.access(token)
    access = await verifier.access(token)  # the issuer is gone now
    assert access.subject == "alice"
    never = verifier_for(issuer)
    problem = await rejected(never, token)
    assert problem.status == 503


async def test_the_sdk_protocol_says_none_for_a_refused_token(issuer: Issuer) -> None:
    """verify_token, the SDK's TokenVerifier protocol, answers None instead of raising."""
    verifier = verifier_for(issuer)
    assert await verifier.verify_token("nope") is None
    found = await verifier.verify_token(signed(issuer))
    assert found is not None and found.subject == "alice"


async def test_a_malformed_key_in_the_set_is_skipped(issuer: Issuer) -> None:
    """Keys the library cannot read (a broken modulus, no kty) are left out; the issuer's good
    key still verifies, and a token naming a broken one is refused, not an error."""
    issuer.extra_keys = [
        {"kty": "RSA", "kid": "broken", "n": "!!!", "e": "AQAB"},
        {"kid": "typeless"},
        {"kty": "EC", "kid": 7, "crv": "P-256"},
    ]
    verifier = verifier_for(issuer)
    assert (await verifier.access(signed(issuer))).subject == "alice"
    forged = SigningKey.new().sign(
        issuer.claims("alice", AUDIENCE, scope="mcp:tools"), kid="broken"
    )
    assert "does not publish" in (await rejected(verifier, forged)).description
