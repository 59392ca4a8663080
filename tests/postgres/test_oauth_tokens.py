"""The OAuth tokens of invokit as a client of protected MCP servers, in PostgreSQL: a server
signed in to through one replica is signed in for every replica, and a started sign-in is
finished once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.shared.auth import OAuthToken

from invokit.mcp import MCPOAuth, MCPToolset, PinStore
from invokit.mcp.internal import ServerTokens
from invokit.postgres import PostgresOAuthTokenStore
from tests.mcp.oauth_issuer import Issuer, running_issuer
from tests.mcp.protected import protected_server
from tests.mcp.test_client_oauth import REDIRECT, signed_in

pytestmark = pytest.mark.anyio

SERVER = "https://mcp.example.test/mcp"


@pytest.fixture
def replicas(postgres_url: str) -> Iterator[tuple[PostgresOAuthTokenStore, ...]]:
    """Two replicas' stores on one database."""
    stores = (PostgresOAuthTokenStore(postgres_url), PostgresOAuthTokenStore(postgres_url))
    yield stores
    for store in stores:
        store.close()


async def test_what_one_replica_keeps_every_replica_reads(
    replicas: tuple[PostgresOAuthTokenStore, ...],
) -> None:
    one, other = (ServerTokens(store, SERVER) for store in replicas)
    assert await other.get_tokens() is None
    await one.set_tokens(OAuthToken(access_token="a1", expires_in=300, refresh_token="r1"))
    found = await other.get_tokens()
    assert found is not None and found.access_token == "a1" and found.refresh_token == "r1"
    assert await other.expires_at() is not None
    await other.set_tokens(OAuthToken(access_token="a2", expires_in=300))  # a refresh there
    again = await one.get_tokens()
    assert again is not None and again.access_token == "a2"
    assert await ServerTokens(replicas[0], "https://another.test/mcp").get_tokens() is None
    await one.forget_tokens()
    assert await other.get_tokens() is None


async def test_a_started_sign_in_is_finished_once(
    replicas: tuple[PostgresOAuthTokenStore, ...],
) -> None:
    await ServerTokens(replicas[0], SERVER).put_pending("st", "verifier")
    taken: list[str | None] = []

    async def take(store: PostgresOAuthTokenStore) -> None:
        taken.append(await ServerTokens(store, SERVER).take_pending("st"))

    async with anyio.create_task_group() as group:
        for store in replicas:
            group.start_soon(take, store)
    assert sorted(taken, key=str) == [None, "verifier"]


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


async def test_a_toolset_signed_in_through_one_replica_needs_no_sign_in_on_another(
    issuer: Issuer, tmp_path: Path, replicas: tuple[PostgresOAuthTokenStore, ...]
) -> None:
    (tmp_path / "protected").mkdir()
    with protected_server(issuer.url, tmp_path / "protected") as url:
        first, second = (
            MCPToolset.http(
                url,
                prefix="team",
                oauth=MCPOAuth(redirect_uri=REDIRECT, store=store),
                pins=PinStore(tmp_path / f"pins-{n}.json"),
                connect_timeout=30.0,
            )
            for n, store in enumerate(replicas)
        )
        async with first:
            await signed_in(first)
            assert "team.fs.read" in first.names()
        async with second:
            assert second.authorization is None  # the tokens came from the database
            assert "team.fs.read" in second.names()
    assert issuer.sign_ins == 1
