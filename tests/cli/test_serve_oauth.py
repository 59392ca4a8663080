"""``invokit serve --http`` with ``[serve.auth]``, end to end: a real issuer on 127.0.0.1, the
server as a subprocess, raw HTTP and the SDK's client sending the bearer token.

Covers the resource server (metadata, 401/403 answers and why) and identity: approvals and
"no"s are the caller's own, an identity is its issuer and subject (a refreshed token keeps
it), and the audit log names who called.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.cli.conftest import invokit_bin, subprocess_env, trust_config
from tests.cli.serving import (
    approval_id_of,
    approve_in_another_process,
    audit_events,
    error_kind,
    http_server,
)
from tests.mcp.oauth_issuer import Issuer, SigningKey, running_issuer

pytestmark = pytest.mark.anyio

STATELESS = "2026-07-28"


def config(issuer: str) -> str:
    return f"""\
[policy]
allow = ["tag:read & category:filesystem"]
ask = ["tag:write"]
default = "ask"

[[policy.quota]]
tool = "fs.stat"
calls = 1
per = "session"

[serve.auth]
issuer = "{issuer}"
scopes = ["mcp:tools"]
"""


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


@pytest.fixture(scope="module")
def served(
    issuer: Issuer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path, Path]]:
    """The server's URL, root and state directory."""
    base = tmp_path_factory.mktemp("oauth")
    root, state = base / "root", base / "state"
    root.mkdir()
    (root / "README.md").write_text("# Served\n")
    (root / "invokit.toml").write_text(config(issuer.url))
    trust_config(root / "invokit.toml", state)
    with http_server(root, state) as (url, _log):
        yield url, root, state


def token(issuer: Issuer, url: str, sub: str, **extra: Any) -> str:
    extra.setdefault("scope", "mcp:tools openid")
    return issuer.token(sub, url, **extra)


def post(url: str, bearer: str | None) -> httpx.Response:
    """An initialize request, with ``bearer`` as its token."""
    headers = {"accept": "application/json, text/event-stream"}
    if bearer is not None:
        headers["authorization"] = f"Bearer {bearer}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return httpx.post(url, json=body, headers=headers, timeout=30)


def metadata_url(url: str) -> str:
    origin = url.partition("/mcp")[0]
    return f"{origin}/.well-known/oauth-protected-resource/mcp"


@asynccontextmanager
async def client(
    url: str, bearer: str, *, mode: str = STATELESS, client_id: str | None = None
) -> AsyncIterator[Client]:
    """The SDK's client, sending ``bearer`` (and a client id) with every request."""
    headers = {"authorization": f"Bearer {bearer}"}
    if client_id is not None:
        headers["invokit-client-id"] = client_id
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as session,
    ):
        yield session


def test_a_request_without_a_token_is_told_where_the_metadata_is(
    served: tuple[str, Path, Path],
) -> None:
    """No token: 401, a WWW-Authenticate header naming the protected resource metadata, and
    a body that says a token is needed."""
    url = served[0]
    answer = post(url, None)
    assert answer.status_code == 401
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{metadata_url(url)}"' in challenge
    assert "error=" not in challenge  # RFC 6750 §3.1: no error code without a token
    assert "access token" in answer.json()["error_description"]


@pytest.mark.parametrize("suffix", ["", "/mcp"])
def test_the_protected_resource_metadata_names_the_issuer_and_resource(
    served: tuple[str, Path, Path], issuer: Issuer, suffix: str
) -> None:
    """The RFC 9728 document, at the root and the path-suffixed well-known URL, without a
    token: this server's URL as the resource, the issuer, the scopes."""
    url = served[0]
    origin = url.partition("/mcp")[0]
    answer = httpx.get(f"{origin}/.well-known/oauth-protected-resource{suffix}", timeout=30)
    assert answer.status_code == 200
    document = answer.json()
    assert document["resource"] == url
    assert document["authorization_servers"] == [issuer.url]
    assert document["scopes_supported"] == ["mcp:tools"]
    assert document["bearer_methods_supported"] == ["header"]


def _expired(issuer: Issuer, url: str) -> str:
    return token(issuer, url, "alice", expires_in=-600)


def _wrong_audience(issuer: Issuer, url: str) -> str:
    return token(issuer, url.replace("/mcp", "/other"), "alice")


def _bad_signature(issuer: Issuer, url: str) -> str:
    # Signed by a key nobody published, under the published key's id.
    return SigningKey.new().sign(
        issuer.claims("alice", url, scope="mcp:tools"), kid=issuer.current.kid
    )


def _unknown_kid(issuer: Issuer, url: str) -> str:
    return SigningKey.new().sign(issuer.claims("alice", url, scope="mcp:tools"))


def _other_issuer(issuer: Issuer, url: str) -> str:
    claims = {**issuer.claims("alice", url, scope="mcp:tools"), "iss": "http://127.0.0.1:1"}
    return issuer.current.sign(claims)


def _not_a_jwt(issuer: Issuer, url: str) -> str:
    return "not-a-token"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        pytest.param(_expired, "expired", id="expired"),
        pytest.param(_wrong_audience, "audience", id="wrong-audience"),
        pytest.param(_bad_signature, "signature", id="bad-signature"),
        pytest.param(_unknown_kid, "does not publish", id="unknown-kid"),
        pytest.param(_other_issuer, "another issuer", id="other-issuer"),
        pytest.param(_not_a_jwt, "not a signed JWT", id="not-a-jwt"),
    ],
)
def test_a_refused_token_gets_401_saying_why(
    served: tuple[str, Path, Path], issuer: Issuer, make: Any, says: str
) -> None:
    """A token that is expired, for another audience or issuer, badly signed or signed with
    an unpublished key is refused with 401 invalid_token, the reason in the body."""
    url = served[0]
    answer = post(url, make(issuer, url))
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_token"
    assert says in answer.json()["error_description"]
    challenge = answer.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{metadata_url(url)}"' in challenge


def test_a_session_is_refused_to_another_person(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """An MCP session opened with alice's token cannot be used with bob's (404, as if it did
    not exist); alice's next token, from the same client, keeps using it."""
    url = served[0]
    opened = post(url, token(issuer, url, "alice"))
    assert opened.status_code == 200
    session_id = opened.headers["mcp-session-id"]

    def notify(bearer: str) -> int:
        headers = {
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {bearer}",
            "mcp-session-id": session_id,
            "mcp-protocol-version": "2025-06-18",
        }
        body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        return httpx.post(url, json=body, headers=headers, timeout=30).status_code

    assert notify(token(issuer, url, "bob")) == 404
    assert notify(token(issuer, url, "alice")) == 202


def test_a_token_without_the_scope_gets_403_insufficient_scope(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """A good token without the required scope: 403 insufficient_scope naming the scope."""
    url = served[0]
    answer = post(url, token(issuer, url, "alice", scope="openid"))
    assert answer.status_code == 403
    assert answer.json()["error"] == "insufficient_scope"
    assert "mcp:tools" in answer.json()["error_description"]
    assert 'scope="mcp:tools"' in answer.headers["www-authenticate"]


@pytest.mark.parametrize("mode", ["legacy", STATELESS])
async def test_a_valid_token_lists_and_calls_tools(
    served: tuple[str, Path, Path], issuer: Issuer, mode: str
) -> None:
    """With a valid token the SDK client lists tools and calls them, in both protocols."""
    url = served[0]
    async with client(url, token(issuer, url, "alice"), mode=mode) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        read = await session.call_tool("fs.read", {"path": "README.md"})
    assert "fs.read" in names
    assert read.is_error is False


async def test_a_rotated_key_is_fetched_when_a_token_names_it(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """After the issuer rotates its key, a token signed with the new key is accepted once
    the server fetches the key set again (on the unknown key id)."""
    url = served[0]
    # The old set is cached.
    assert (
        await anyio.to_thread.run_sync(post, url, token(issuer, url, "alice"))
    ).status_code == 200
    before = issuer.jwks_fetches
    issuer.rotate()
    fresh = token(issuer, url, "alice")
    with anyio.fail_after(30):
        # A refetch is allowed once every few seconds: until then the key is unknown.
        while (answer := await anyio.to_thread.run_sync(post, url, fresh)).status_code != 200:
            assert answer.status_code == 401, answer.text
            await anyio.sleep(0.5)
    assert issuer.jwks_fetches > before


async def test_one_persons_approval_does_not_run_anothers_call(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """Over the stateless protocol (no session), alice's approved request is hers (the stored
    request names her): bob's identical call is asked about anew and does not run on it, while
    alice's retry, with a refreshed token, runs."""
    url, root, state = served
    arguments = {"path": "alice.txt", "content": "from alice"}
    async with client(url, token(issuer, url, "alice")) as session:
        approval_id = approval_id_of(await session.call_tool("fs.write", arguments))
    shown = await anyio.run_process(
        [invokit_bin(), "approvals", "show", approval_id, "--json"], env=subprocess_env(state)
    )
    assert json.loads(shown.stdout)["caller"] == {"iss": issuer.url, "sub": "alice"}
    await approve_in_another_process(state, approval_id)
    async with client(url, token(issuer, url, "bob")) as session:
        bobs = await session.call_tool("fs.write", arguments)
    assert error_kind(bobs) == "approval_required"
    assert approval_id_of(bobs) != approval_id
    assert not (root / "alice.txt").exists()
    async with client(url, token(issuer, url, "alice")) as session:  # a new token: same person
        alices = await session.call_tool("fs.write", arguments)
    assert alices.is_error is False
    assert (root / "alice.txt").read_text() == "from alice"


async def test_one_persons_no_does_not_refuse_anothers_call(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """A "no" given to carol's call refuses carol's retry of it, but not dave's call that
    happens to have the same request id (each client numbers its requests from 1)."""
    url, root, state = served
    arguments = {"path": "shared.txt", "content": "x"}
    async with client(url, token(issuer, url, "carol")) as session:
        approval_id = approval_id_of(await session.call_tool("fs.write", arguments))
    denied = await anyio.run_process(
        [invokit_bin(), "approvals", "deny", approval_id, "--reason", "not you"],
        env=subprocess_env(state),
        check=False,
    )
    assert denied.returncode == 0, denied.stderr.decode()
    async with client(url, token(issuer, url, "dave")) as session:
        daves = await session.call_tool("fs.write", arguments)
    assert error_kind(daves) == "approval_required"
    async with client(url, token(issuer, url, "carol")) as session:
        carols = await session.call_tool("fs.write", arguments)
    assert error_kind(carols) == "approval_denied"
    assert not (root / "shared.txt").exists()


async def test_a_quota_counts_each_persons_calls_apart(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """A per-session quota over the stateless protocol counts per person: henry's used-up
    quota does not refuse ivy's call."""
    url = served[0]
    async with client(url, token(issuer, url, "henry")) as session:
        first = await session.call_tool("fs.stat", {"path": "README.md"})
        second = await session.call_tool("fs.stat", {"path": "README.md"})
    assert first.is_error is False
    assert error_kind(second) == "quota_exceeded"
    async with client(url, token(issuer, url, "ivy")) as session:
        ivys = await session.call_tool("fs.stat", {"path": "README.md"})
    assert ivys.is_error is False


async def test_a_client_id_names_the_person_not_the_token(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """With an Invokit-Client-Id, a person's identity survives a token refresh (the same
    session through a new token), and another person naming the same id has another."""
    url, root, state = served
    arguments = {"path": "erin.txt", "content": "from erin"}
    async with client(url, token(issuer, url, "erin"), mode="legacy", client_id="laptop") as s:
        approval_id = approval_id_of(await s.call_tool("fs.write", arguments))
    await approve_in_another_process(state, approval_id)
    async with client(url, token(issuer, url, "frank"), mode="legacy", client_id="laptop") as s:
        franks = await s.call_tool("fs.write", arguments)
    assert error_kind(franks) == "approval_required"
    async with client(url, token(issuer, url, "erin"), mode="legacy", client_id="laptop") as s:
        erins = await s.call_tool("fs.write", arguments)
    assert erins.is_error is False
    assert (root / "erin.txt").read_text() == "from erin"


async def test_the_audit_log_names_who_called(
    served: tuple[str, Path, Path], issuer: Issuer
) -> None:
    """Every call's received record carries the caller's issuer and subject, and `invokit
    audit` shows the subject."""
    url, _root, state = served
    async with client(url, token(issuer, url, "grace")) as session:
        await session.call_tool("fs.read", {"path": "README.md"})
    found = await audit_events(
        state,
        lambda r: (
            r["type"] == "received" and (r["data"].get("principal") or {}).get("sub") == "grace"
        ),
    )
    assert found[0]["data"]["principal"] == {"iss": issuer.url, "sub": "grace"}
    shown = await anyio.run_process(
        [invokit_bin(), "audit", "--last", "200"], env=subprocess_env(state)
    )
    assert "by grace" in shown.stdout.decode()
    as_json = await anyio.run_process(
        [invokit_bin(), "audit", "--json", "--last", "400"], env=subprocess_env(state)
    )
    records = [json.loads(line) for line in as_json.stdout.decode().splitlines()]
    assert any((r["data"].get("principal") or {}).get("sub") == "grace" for r in records)
