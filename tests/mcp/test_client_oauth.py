"""invokit calling a protected MCP server: a real ``invokit serve --http`` with ``[serve.auth]``
as a subprocess, the test issuer on 127.0.0.1, and an ``MCPToolset`` signing in with PKCE.

The person's part (following the authorization URL, signing in, landing on the redirect) is
done with httpx; what comes back is handed to ``executor.resume`` as the interrupt asks.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from invokit import Completed, Executor, Interrupted, ToolCall
from invokit.exceptions import ToolFailed
from invokit.execution import AuthorizationRequired
from invokit.mcp import MCPOAuth, MCPToolset, OAuthTokenStore, PinStore
from invokit.permissions import Policy
from tests.mcp.oauth_issuer import Issuer, running_issuer
from tests.mcp.protected import protected_server

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:9/callback"
"""Nothing listens there: the person's browser (httpx here) is only redirected to it."""


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


@pytest.fixture(scope="module")
def served(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of an ``invokit serve --http`` that takes only the issuer's tokens."""
    with protected_server(issuer.url, tmp_path_factory.mktemp("protected")) as url:
        yield url


def token_store(tmp_path: Path) -> OAuthTokenStore:
    return OAuthTokenStore(tmp_path / "state" / "mcp-oauth.sqlite3")


def toolset(url: str, tmp_path: Path) -> MCPToolset:
    store = token_store(tmp_path)
    return MCPToolset.http(
        url,
        prefix="team",
        oauth=MCPOAuth(redirect_uri=REDIRECT, store=store),
        pins=PinStore(tmp_path / "pins.json"),
        connect_timeout=30.0,
    )


def signs_in(authorization_url: str) -> str:
    """The person: opens the authorization URL, signs in, and is sent back; the URL they land on."""
    answer = httpx.get(authorization_url, follow_redirects=False, timeout=30)
    assert answer.status_code == 302, answer.text
    landed = answer.headers["location"]
    assert landed.startswith(REDIRECT)
    return landed


async def test_a_toolset_signs_in_once_the_person_has(
    served: str, issuer: Issuer, tmp_path: Path
) -> None:
    """Before anyone signs in the toolset connects with no tools and names the sign-in (a PKCE
    authorization URL for this server); the person's answer lists the tools, and the tokens
    live in a private file."""
    async with toolset(served, tmp_path) as tools:
        needed = tools.authorization
        assert needed is not None and tools.names() == ()
        url = needed.challenge["authorization_url"]
        assert url.startswith(f"{issuer.url}/authorize?")
        assert "code_challenge_method=S256" in url
        await tools.sign_in({"callback_url": signs_in(url)})
        assert tools.authorization is None
        assert "team.fs.read" in tools.names()
    token_file = tmp_path / "state" / "mcp-oauth.sqlite3"
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600


async def signed_in(tools: MCPToolset) -> None:
    """Connect ``tools`` and have the person sign in."""
    await tools.connect()
    needed = tools.authorization
    assert needed is not None
    await tools.sign_in({"callback_url": signs_in(needed.challenge["authorization_url"])})


async def expire_stored_token(issuer: Issuer, store: OAuthTokenStore, url: str) -> None:
    """Make the kept access token one that has run out (the server refuses it too)."""
    tokens = store.for_server(url)
    kept = await tokens.get_tokens()
    assert kept is not None and kept.refresh_token
    expired = issuer.current.sign(issuer.claims("alice", url, scope="mcp:tools", expires_in=-600))
    await tokens.set_tokens(kept.model_copy(update={"access_token": expired, "expires_in": -600}))


def read_readme() -> ToolCall:
    return ToolCall(id="c1", name="team.fs.read", arguments='{"path": "README.md"}')


async def test_an_expired_access_token_is_refreshed(
    served: str, issuer: Issuer, tmp_path: Path
) -> None:
    """A kept access token that has expired is refreshed before the next request, in a running
    toolset and in a new one (a restarted host): the calls run without a new sign-in."""
    tools = toolset(served, tmp_path)
    store = token_store(tmp_path)
    async with tools:
        await signed_in(tools)
        executor = Executor(tools, policy=Policy(default="allow"))
        before = issuer.refreshes
        await expire_stored_token(issuer, store, served)
        outcome = await executor.execute(read_readme())
        assert isinstance(outcome, Completed) and not outcome.result.is_error, outcome
        assert issuer.refreshes == before + 1
    await expire_stored_token(issuer, store, served)
    async with toolset(served, tmp_path) as again:
        assert again.authorization is None and "team.fs.read" in again.names()
        outcome = await Executor(again, policy=Policy(default="allow")).execute(read_readme())
        assert isinstance(outcome, Completed) and not outcome.result.is_error, outcome
    assert issuer.refreshes == before + 2


async def test_a_call_waits_for_the_person_to_sign_in_again(
    served: str, issuer: Issuer, tmp_path: Path
) -> None:
    """When the tokens run out and cannot be refreshed, the call ends as an AuthRequired
    interrupt naming the authorization URL (the refused tokens are dropped); resuming it with
    the person's answer signs in and runs the call."""
    tools = toolset(served, tmp_path)
    async with tools:
        await signed_in(tools)
        executor = Executor(tools, policy=Policy(default="allow"))
        await expire_stored_token(issuer, token_store(tmp_path), served)
        issuer.revoke_refresh_tokens()
        outcome = await executor.execute(read_readme())
        assert isinstance(outcome, Interrupted), outcome
        interrupt = outcome.interrupt
        assert isinstance(interrupt, AuthorizationRequired)
        assert interrupt.provider == issuer.url
        assert await token_store(tmp_path).for_server(served).get_tokens() is None
        landed = signs_in(interrupt.challenge["authorization_url"])
        resumed = await executor.resume(interrupt.id, credentials={"callback_url": landed})
        assert isinstance(resumed, Completed) and not resumed.result.is_error, resumed
        assert "# Served" in str(resumed.result.content)


async def test_an_answer_for_no_sign_in_is_an_error_result(
    served: str, issuer: Issuer, tmp_path: Path
) -> None:
    """Credentials whose state this host never issued are refused as a result the host can
    read; nothing is exchanged at the issuer."""
    tools = toolset(served, tmp_path)
    async with tools:
        await tools.connect()
        before = issuer.sign_ins
        with pytest.raises(ToolFailed) as caught:
            await tools.sign_in({"code": "made-up", "state": "never-issued"})
        assert caught.value.kind == "invalid_credentials"
        assert issuer.sign_ins == before
        assert tools.authorization is not None


async def test_a_sign_in_is_not_logged_as_an_error(
    served: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Starting a sign-in leaves no error traceback in the log: it is not a failure."""
    with caplog.at_level(logging.DEBUG):
        async with toolset(served, tmp_path) as tools:
            assert tools.authorization is not None
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
