"""The inbox with ``[serve.auth]``: people sign in by OpenID Connect (authorization code with
PKCE) at a real test provider on loopback, and each sees and answers only the questions their
own agents asked; an answer to another person's question is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.cli.conftest import trust_config
from tests.cli.serving import approval_id_of, http_server
from tests.inbox.support import csrf_of
from tests.mcp.oauth_issuer import Issuer, running_issuer

pytestmark = pytest.mark.anyio


def config(issuer: str) -> str:
    return f"""\
[policy]
allow = ["tag:read & category:filesystem"]
ask = ["tag:write"]
default = "ask"

[serve.auth]
issuer = "{issuer}"
scopes = ["mcp:tools"]
inbox_client_id = "invokit-inbox"
"""


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


@pytest.fixture(scope="module")
def served(
    issuer: Issuer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    base = tmp_path_factory.mktemp("oidc")
    root, state = base / "root", base / "state"
    root.mkdir()
    (root / "invokit.toml").write_text(config(issuer.url))
    trust_config(root / "invokit.toml", state)
    with http_server(root, state) as (url, _log):
        yield url, url.partition("/mcp")[0], root


@asynccontextmanager
async def agent(url: str, bearer: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {bearer}"}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as session,
    ):
        yield session


async def sign_in(origin: str, issuer: Issuer, person: str) -> httpx.AsyncClient:
    """The browser's round trip: the inbox sends it to the provider, the person signs in
    there, the provider sends it back with a code, the inbox makes a session."""
    browser = httpx.AsyncClient(base_url=origin, timeout=30)
    start = await browser.get("/inbox/login")
    assert start.status_code == 302, start.text
    authorize = urlsplit(start.headers["location"])
    assert f"{authorize.scheme}://{authorize.netloc}" == issuer.url
    params = {k: v[-1] for k, v in parse_qs(authorize.query).items()}
    assert params["code_challenge_method"] == "S256" and params["client_id"] == "invokit-inbox"
    async with httpx.AsyncClient(timeout=30) as provider:
        form = await provider.get(start.headers["location"])
        assert 'id="username"' in form.text
        back = await provider.post(f"{issuer.url}/authorize", data={**params, "username": person})
    assert back.status_code == 302
    done = await browser.get(back.headers["location"])
    assert done.status_code == 200 and "Signed in" in done.text, done.text
    return browser


async def test_each_person_sees_and_answers_only_their_questions(
    served: tuple[str, str, Path], issuer: Issuer
) -> None:
    url, origin, root = served
    alice = await sign_in(origin, issuer, "alice")
    bob = await sign_in(origin, issuer, "bob")
    try:
        arguments = {"path": "alice.txt", "content": "hers"}
        async with agent(url, issuer.token("alice", url, scope="mcp:tools")) as session:
            alices = approval_id_of(await session.call_tool("fs.write", arguments))
        async with agent(url, issuer.token("bob", url, scope="mcp:tools")) as session:
            bobs = approval_id_of(
                await session.call_tool("fs.write", {"path": "bob.txt", "content": "his"})
            )
        alice_page = (await alice.get("/inbox")).text
        assert "alice (" in alice_page  # signed in as herself
        assert f'id="q-{alices}"' in alice_page and f'id="q-{bobs}"' not in alice_page
        bob_page = (await bob.get("/inbox")).text
        assert f'id="q-{bobs}"' in bob_page and f'id="q-{alices}"' not in bob_page

        # Bob, with his own valid session and CSRF token, tries to approve alice's question.
        across = await bob.post(
            "/inbox/decide",
            data={"csrf": csrf_of(bob_page), "id": alices, "action": "once"},
            headers={"Origin": origin},
        )
        assert across.status_code == 403
        assert "asked by someone else" in across.text
        assert (await bob.get(f"/inbox/audit/{alices}")).status_code == 404
        assert f'id="q-{alices}"' in (await alice.get("/inbox")).text  # still hers, waiting

        mine = await alice.post(
            "/inbox/decide",
            data={"csrf": csrf_of(alice_page), "id": alices, "action": "once"},
            headers={"Origin": origin},
        )
        assert mine.status_code == 200 and "approved once: fs.write" in mine.text
        async with agent(url, issuer.token("alice", url, scope="mcp:tools")) as session:
            ran = await session.call_tool("fs.write", arguments)
        assert ran.is_error is False and (root / "alice.txt").read_text() == "hers"
    finally:
        await alice.aclose()
        await bob.aclose()


async def test_a_callback_without_the_login_cookie_or_with_another_state_is_refused(
    served: tuple[str, str, Path],
) -> None:
    _, origin, _ = served
    async with httpx.AsyncClient(base_url=origin, timeout=30) as browser:
        stray = await browser.get("/inbox/callback", params={"code": "x", "state": "y"})
        assert stray.status_code == 400 and "sign-in failed" in stray.text
        await browser.get("/inbox/login")
        forged = await browser.get("/inbox/callback", params={"code": "x", "state": "y"})
        assert forged.status_code == 400 and "state does not match" in forged.text
        assert (await browser.get("/inbox/fragment")).status_code == 401
