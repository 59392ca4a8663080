"""Issue 25's "done when": three ``invokit serve --http`` replicas on one PostgreSQL, behind
one OpenID Connect issuer; two people, alice (in ``sre``) and bob, whose agents (real SDK
clients with bearer tokens) call through different replicas and wait. Each person's inbox
(signed in by OpenID Connect, on any replica) shows their own questions and those the policy
routes to them; bob cannot answer alice's; four eyes holds for deploys; every decision's
audit record names its person; each approved call runs exactly once."""

from __future__ import annotations

import json
import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.cli.conftest import trust_config
from tests.cli.serving import approval_id_of
from tests.cli.test_replicas import replica
from tests.inbox.support import csrf_of
from tests.inbox.team_tools import EFFECTS
from tests.inbox.test_inbox_oidc import agent, sign_in
from tests.mcp.oauth_issuer import Issuer, running_issuer

pytestmark = pytest.mark.anyio

CHROMIUM = "/usr/bin/chromium"
AUDIENCE = "https://team.invokit.test/mcp"
"""The public URL of the fleet: every replica's audience (behind a load balancer)."""


def config(issuer: str) -> str:
    return f"""\
[tools.python]
import = ["tests.inbox.team_tools:registry"]

[policy]
ask = ["team.note", "team.deploy"]
default = "ask"

[[policy.approvers]]
rule = "team.deploy"
approvers = ["group:sre"]
four_eyes = true

[serve.auth]
issuer = "{issuer}"
audience = "{AUDIENCE}"
scopes = ["mcp:tools"]
inbox_client_id = "invokit-inbox"
"""


def pending_ids(page: str, ids: dict[str, str]) -> set[str]:
    """Which of the named questions ``page`` lists."""
    return {name for name, approval_id in ids.items() if f'id="q-{approval_id}"' in page}


def audit_decisions(database: str) -> dict[str, dict[str, Any]]:
    """Each decided question's ``approval_resolved`` record, by approval id (a retry that
    uses an approval records it again, as consumed: those name the same person)."""
    import psycopg

    with psycopg.connect(database) as connection:
        rows = connection.execute(
            "SELECT data FROM invokit_audit_events WHERE type = 'approval_resolved' ORDER BY id"
        ).fetchall()
    found: dict[str, dict[str, Any]] = {}
    for (data,) in rows:
        record = json.loads(data)
        if record["consumed_by_retry"]:
            assert record["person"] == found[record["id"]]["person"]
            continue
        assert record["id"] not in found, "a decision recorded twice"
        found[record["id"]] = record
    return found


async def test_three_replicas_two_people_one_inbox(tmp_path: Path, postgres_url: str) -> None:
    with running_issuer() as issuer, ExitStack() as stack:
        issuer.groups.update({"alice": ["sre"], "bob": ["dev"]})
        root, state = tmp_path / "root", tmp_path / "state"
        root.mkdir()
        (root / "invokit.toml").write_text(config(issuer.url))
        trust_config(root / "invokit.toml", state)
        urls = [
            stack.enter_context(replica(root, state, postgres_url, n, wait="300"))[0]
            for n in range(3)
        ]
        origins = [u.partition("/mcp")[0] for u in urls]
        await _scenario(issuer, urls, origins, root, postgres_url)


async def _scenario(
    issuer: Issuer, urls: list[str], origins: list[str], root: Path, database: str
) -> None:
    tokens = {p: issuer.token(p, AUDIENCE, scope="mcp:tools") for p in ("alice", "bob")}
    calls = {
        "team.note alice": ("alice", "team.note", {"text": "alice"}),
        "team.note bob": ("bob", "team.note", {"text": "bob"}),
        "team.deploy bob": ("bob", "team.deploy", {"target": "bob"}),
        "team.deploy alice": ("alice", "team.deploy", {"target": "alice"}),
    }

    async def call(name: str, replica: int) -> Any:
        person, tool, arguments = calls[name]
        async with agent(urls[replica], tokens[person]) as session:
            return await session.call_tool(tool, arguments)

    # Each agent asks through another replica than the one before; nothing runs yet.
    ids = {name: approval_id_of(await call(name, n % 3)) for n, name in enumerate(calls)}
    alice = await sign_in(origins[2], issuer, "alice")  # on replica C
    bob = await sign_in(origins[0], issuer, "bob")  # on replica A
    # alice's sign-in on C holds on B: the sign-in key is kept in the shared state.
    alice_b = httpx.AsyncClient(base_url=origins[1], cookies=dict(alice.cookies), timeout=30)
    try:
        await _answer(ids, alice_b, origins[1], bob, origins[0])
        await _approve_in_the_browser(issuer, origins[0], ids["team.deploy bob"])
        # alice cannot approve her own deploy (four eyes), but she may stop it.
        denied = await alice.post(
            "/inbox/decide",
            data={
                "csrf": csrf_of((await alice.get("/inbox")).text),
                "id": ids["team.deploy alice"],
                "action": "deny",
                "reason": "not today",
            },
            headers={"Origin": origins[2]},
        )
        assert denied.status_code == 200 and "denied: team.deploy" in denied.text
    finally:
        for client in (alice, bob, alice_b):
            await client.aclose()

    # The agents call again, each through other replicas; alice's note twice at once.
    results: dict[str, list[Any]] = {name: [] for name in calls}

    async def again(name: str, replica: int) -> None:
        results[name].append(await call(name, replica))

    async with anyio.create_task_group() as group:
        group.start_soon(again, "team.note alice", 1)
        group.start_soon(again, "team.note alice", 2)
        group.start_soon(again, "team.note bob", 2)
        group.start_soon(again, "team.deploy bob", 0)
        group.start_soon(again, "team.deploy alice", 2)
    ran = {name: sorted(r.is_error is False for r in found) for name, found in results.items()}
    assert ran == {
        "team.note alice": [False, True],  # one of the two ran; the other asks anew
        "team.note bob": [True],
        "team.deploy bob": [True],
        "team.deploy alice": [False],
    }
    effects = (root / EFFECTS).read_text().splitlines()
    assert sorted(effects) == ["deploy bob", "note alice", "note bob"]  # each once, no more

    decisions = audit_decisions(database)
    by_question = {
        name: (decisions[i]["approved"], decisions[i]["person"]["sub"], decisions[i]["channel"])
        for name, i in ids.items()
    }
    assert by_question == {
        "team.note alice": (True, "alice", "inbox"),
        "team.note bob": (True, "bob", "inbox"),
        "team.deploy bob": (True, "alice", "inbox"),
        "team.deploy alice": (False, "alice", "inbox"),
    }
    assert all(d["person"]["iss"] == issuer.url for d in decisions.values())


async def _answer(
    ids: dict[str, str],
    alice: httpx.AsyncClient,
    alice_at: str,
    bob: httpx.AsyncClient,
    bob_at: str,
) -> None:
    """What each person sees, the answers refused, and the notes approved over HTTP."""
    alice_page, bob_page = (await alice.get("/inbox")).text, (await bob.get("/inbox")).text
    # alice: her own two, and bob's deploy (routed to sre); bob: only his own two.
    assert pending_ids(alice_page, ids) == {
        "team.note alice",
        "team.deploy alice",
        "team.deploy bob",
    }
    assert pending_ids(bob_page, ids) == {"team.note bob", "team.deploy bob"}

    async def decide(client: Any, page: str, origin: str, name: str) -> httpx.Response:
        form = {"csrf": csrf_of(page), "id": ids[name], "action": "once"}
        answer: httpx.Response = await client.post(
            "/inbox/decide", data=form, headers={"Origin": origin}
        )
        return answer

    across = await decide(bob, bob_page, bob_at, "team.note alice")
    assert across.status_code == 403 and "asked by someone else" in across.text
    across = await decide(bob, bob_page, bob_at, "team.deploy alice")
    assert across.status_code == 403
    own = await decide(bob, bob_page, bob_at, "team.deploy bob")  # bob is not in sre
    assert own.status_code == 403 and "only group:sre may answer" in own.text
    four_eyes = await decide(alice, alice_page, alice_at, "team.deploy alice")
    assert four_eyes.status_code == 403 and "four eyes" in four_eyes.text

    for client, page, origin, name in (
        (alice, alice_page, alice_at, "team.note alice"),
        (bob, bob_page, bob_at, "team.note bob"),
    ):
        done = await decide(client, page, origin, name)
        assert done.status_code == 200 and f"approved once: {name.split()[0]}" in done.text
    again = await decide(bob, bob_page, bob_at, "team.note bob")  # answered already
    assert again.status_code == 409


async def _approve_in_the_browser(issuer: Issuer, origin: str, approval_id: str) -> None:
    """alice signs in in chromium (on replica A) and approves bob's deploy, which the policy
    routes to her group; without chromium, over HTTP with a real session instead."""
    if shutil.which(CHROMIUM) is None:  # pragma: no cover - make test installs chromium
        alice = await sign_in(origin, issuer, "alice")
        listing = (await alice.get("/inbox")).text
        done = await alice.post(
            "/inbox/decide",
            data={"csrf": csrf_of(listing), "id": approval_id, "action": "once"},
            headers={"Origin": origin},
        )
        await alice.aclose()
        assert done.status_code == 200
        return
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            await page.goto(f"{origin}/inbox")
            await page.click("#oidc")
            await page.fill("#username", "alice")
            await page.click("#login")
            await page.wait_for_selector("#who", timeout=30_000)
            assert (await page.text_content("#who") or "").startswith("alice (")
            card = await page.wait_for_selector(f"#q-{approval_id}", timeout=30_000)
            assert card is not None and "asked by\tbob" in await card.inner_text()
            button = await card.query_selector("button.approve")
            assert button is not None
            await button.click()
            await page.wait_for_selector("#notice")
            notice = await page.text_content("#notice") or ""
            assert notice.startswith("approved once: team.deploy"), notice
        finally:
            await browser.close()
