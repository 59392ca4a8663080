"""`[[policy.approvers]]` at a real `invokit serve --http` with `[serve.auth]`: the person behind
an MCP client who answers the elicitation is the verified caller, with the groups its token
names, and only a caller the rule names (as a user or through a group) can approve their own
call there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.streamable_http import streamable_http_client

from mcp import Client
from tests.cli.conftest import trust_config
from tests.cli.serving import error_kind, http_server
from tests.mcp.oauth_issuer import Issuer, running_issuer

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


@pytest.fixture(scope="module")
def served(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    issuer.groups.update({"carol": ["sre"], "bob": ["dev"]})
    base = tmp_path_factory.mktemp("approvers")
    root, state = base / "root", base / "state"
    root.mkdir()
    (root / "invokit.toml").write_text(
        f"""\
[policy]
allow = ["tag:read & category:filesystem"]
ask = ["tag:write"]
default = "ask"

[[policy.approvers]]
rule = "tag:write"
approvers = ["user:alice", "group:sre"]

[serve.auth]
issuer = "{issuer.url}"
scopes = ["mcp:tools"]
"""
    )
    trust_config(root / "invokit.toml", state)
    with http_server(root, state) as (url, _log):
        yield url, root


async def approves(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": True})


async def write_as(url: str, issuer: Issuer, sub: str, path: str) -> Any:
    """``sub``'s agent writes ``path``; ``sub`` approves in their client when asked."""
    bearer = issuer.token(sub, url, scope="mcp:tools")
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {bearer}"}, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="legacy",
            elicitation_callback=approves,
        ) as session,
    ):
        return await session.call_tool("fs.write", {"path": path, "content": sub})


async def test_a_named_approver_approves_in_their_client(
    served: tuple[str, Path], issuer: Issuer
) -> None:
    """alice, whom the rule names, approves her call in her client: it runs."""
    url, root = served
    result = await write_as(url, issuer, "alice", "alice.txt")
    assert result.is_error is False, result
    assert (root / "alice.txt").read_text() == "alice"


async def test_someone_else_cannot_approve_in_their_client(
    served: tuple[str, Path], issuer: Issuer
) -> None:
    """bob's "yes" in his client is not taken (the rule names only alice): nothing is written."""
    url, root = served
    result = await write_as(url, issuer, "bob", "bob.txt")
    assert result.is_error is True
    assert error_kind(result) == "approval_not_permitted"
    assert not (root / "bob.txt").exists()


async def test_a_member_of_a_named_group_approves_in_their_client(
    served: tuple[str, Path], issuer: Issuer
) -> None:
    """carol is in no rule by name, but her token says she is in ``sre``, which the rule
    names: her "yes" is taken and the call runs."""
    url, root = served
    result = await write_as(url, issuer, "carol", "carol.txt")
    assert result.is_error is False, result
    assert (root / "carol.txt").read_text() == "carol"
