"""Every approval store: the life of an approval, expiry, single use, grants and rules."""

from __future__ import annotations

import dataclasses
import math

import anyio
import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore
from invokit.exceptions import (
    ApprovalAlreadyUsed,
    ApprovalError,
    ApprovalExpired,
    ApprovalNotFound,
    PolicyError,
)

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio


async def test_put_get_round_trip(store: ApprovalStore, clock: Clock) -> None:
    """A stored request comes back equal and pending."""
    request = make_request(clock)
    await store.put(request)
    record = await store.get(request.id)
    assert record.request == request
    assert record.status == "pending"
    assert record.decision is None


async def test_put_twice_is_an_error(store: ApprovalStore, clock: Clock) -> None:
    """The same id cannot be stored twice."""
    request = make_request(clock)
    await store.put(request)
    with pytest.raises(ValueError, match="already stored"):
        await store.put(request)


async def test_unknown_id(store: ApprovalStore) -> None:
    """Every operation on an unknown id raises ApprovalNotFound."""
    with pytest.raises(ApprovalNotFound):
        await store.get("nope")
    with pytest.raises(ApprovalNotFound):
        await store.resolve("nope", ApprovalDecision.approve())
    with pytest.raises(ApprovalNotFound):
        await store.consume("nope")


async def test_approve_then_consume_once(store: ApprovalStore, clock: Clock) -> None:
    """An approval is consumed once; a second consume raises ApprovalAlreadyUsed."""
    request = make_request(clock)
    await store.put(request)
    decision = ApprovalDecision.approve(by="ana", arguments={"path": "src/b.py", "text": "y"})
    resolved = await store.resolve(request.id, decision)
    assert resolved.status == "approved"
    assert resolved.decision == decision
    assert resolved.resolved_at == clock.now
    clock.now += 5
    consumed = await store.consume(request.id)
    assert consumed.status == "consumed"
    assert consumed.consumed_at == clock.now
    assert consumed.arguments == {"path": "src/b.py", "text": "y"}
    with pytest.raises(ApprovalAlreadyUsed):
        await store.consume(request.id)
    assert (await store.get(request.id)).status == "consumed"


async def test_resolved_cannot_be_resolved_again(store: ApprovalStore, clock: Clock) -> None:
    """A resolved approval refuses a second decision, whichever way it went."""
    request = make_request(clock)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.deny("not now", by="ana"))
    with pytest.raises(ApprovalAlreadyUsed):
        await store.resolve(request.id, ApprovalDecision.approve())
    record = await store.get(request.id)
    assert record.status == "denied"
    assert record.decision is not None
    assert record.decision.reason == "not now"


async def test_denied_cannot_be_consumed(store: ApprovalStore, clock: Clock) -> None:
    """Consuming a denied or undecided approval raises and never runs the call."""
    denied, pending = make_request(clock), make_request(clock)
    await store.put(denied)
    await store.put(pending)
    await store.resolve(denied.id, ApprovalDecision.deny())
    for approval_id in (denied.id, pending.id):
        with pytest.raises(ApprovalError) as info:
            await store.consume(approval_id)
        assert type(info.value) is ApprovalError
    assert (await store.get(pending.id)).status == "pending"


async def test_unresolved_expires_as_denied(store: ApprovalStore, clock: Clock) -> None:
    """A request no one resolves expires; it can then be neither approved nor used."""
    request = make_request(clock, ttl=60)
    await store.put(request)
    clock.now += 60
    assert (await store.get(request.id)).status == "expired"
    assert await store.list_pending() == []
    with pytest.raises(ApprovalExpired):
        await store.resolve(request.id, ApprovalDecision.approve())
    with pytest.raises(ApprovalExpired):
        await store.consume(request.id)


async def test_approved_but_unused_expires(store: ApprovalStore, clock: Clock) -> None:
    """An approval not used before its expiry can no longer be consumed."""
    request = make_request(clock, ttl=60)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve())
    clock.now += 61
    with pytest.raises(ApprovalExpired):
        await store.consume(request.id)
    assert (await store.get(request.id)).status == "expired"


async def test_list_pending_oldest_first(store: ApprovalStore, clock: Clock) -> None:
    """Pending, unexpired requests are listed oldest first; resolved ones are not."""
    first = make_request(clock, path="a")
    clock.now += 1
    second = make_request(clock, path="b")
    clock.now += 1
    third = make_request(clock, path="c")
    for request in (third, first, second):
        await store.put(request)
    await store.resolve(second.id, ApprovalDecision.approve())
    assert [r.id for r in await store.list_pending()] == [first.id, third.id]


async def test_session_grants(store: ApprovalStore) -> None:
    """A session grant covers one session, tool and spec version until revoked."""
    await store.grant_session("s1", "fs.write", "f1")
    await store.grant_session("s1", "fs.write", "f1")
    assert await store.has_session_grant("s1", "fs.write", "f1")
    assert not await store.has_session_grant("s2", "fs.write", "f1")
    assert not await store.has_session_grant("s1", "fs.write", "f2")
    assert not await store.has_session_grant("s1", "fs.delete", "f1")
    await store.revoke_session("s1")
    assert not await store.has_session_grant("s1", "fs.write", "f1")


async def test_always_rules(store: ApprovalStore) -> None:
    """Standing rules are kept in order without duplicates per scope, and can be removed."""
    first = await store.add_always_rule("fs.write(write:src/a.py)", project="/p", by="ana")
    await store.add_always_rule("shell(exec:git status)", project="/p")
    again = await store.add_always_rule("fs.write(write:src/a.py)", project="/p", by="bo")
    assert again == first
    assert first.by == "ana" and first.project == "/p" and first.id.startswith("rul_")
    assert [r.rule for r in await store.always_rules("/p")] == [
        "fs.write(write:src/a.py)",
        "shell(exec:git status)",
    ]
    removed = await store.remove_always_rule("shell(exec:git status)", project="/p")
    assert [r.rule for r in removed] == ["shell(exec:git status)"]
    assert not await store.remove_always_rule("shell(exec:git status)")
    assert await store.always_rules("/p") == [first]


async def test_always_rules_are_scoped_to_a_project(store: ApprovalStore) -> None:
    """A rule recorded in one project is not one of another project's rules."""
    mine = await store.add_always_rule("fs.write(write:a.txt)", project="/one")
    theirs = await store.add_always_rule("fs.write(write:a.txt)", project="/two")
    assert mine.id != theirs.id
    assert await store.always_rules("/one") == [mine]
    assert await store.always_rules("/two") == [theirs]
    assert await store.always_rules() == [mine, theirs]


async def test_remote_rules_keep_server_and_fingerprint(store: ApprovalStore) -> None:
    """A rule for a remote tool keeps its server and pinned fingerprint; each version is its own."""
    v1 = await store.add_always_rule("gh.search", project="/p", server="gh", fingerprint="f1")
    v2 = await store.add_always_rule("gh.search", project="/p", server="gh", fingerprint="f2")
    assert (v1.server, v1.fingerprint) == ("gh", "f1")
    assert (v2.server, v2.fingerprint) == ("gh", "f2")
    assert v1.id != v2.id
    with pytest.raises(ValueError, match="both its server and its pinned fingerprint"):
        await store.add_always_rule("gh.search", project="/p", server="gh")
    with pytest.raises(ValueError, match="needs a project"):
        await store.add_always_rule("gh.search", project="")


async def test_an_empty_server_or_fingerprint_is_refused(store: ApprovalStore) -> None:
    """A remote rule with an empty server and fingerprint is refused by every store: SQLite
    and PostgreSQL read it back as a local rule (no server), the memory store as a remote one,
    so the same call recorded a different scope depending on the store."""
    for server, fingerprint in (("", ""), ("gh", ""), ("", "f1")):
        with pytest.raises(ValueError, match="server"):
            await store.add_always_rule(
                "gh.search", project="/p", server=server, fingerprint=fingerprint
            )
    assert await store.always_rules() == []


async def test_remove_by_id_leaves_the_same_rule_elsewhere(store: ApprovalStore) -> None:
    """Revoking by id removes that record only; by text, only within the project given."""
    one = await store.add_always_rule("shell(exec:make)", project="/one")
    two = await store.add_always_rule("shell(exec:make)", project="/two")
    three = await store.add_always_rule("shell(exec:make)", project="/three")
    assert await store.remove_always_rule(one.id) == [one]
    assert await store.remove_always_rule("shell(exec:make)", project="/two") == [two]
    assert await store.always_rules() == [three]
    assert await store.remove_always_rule("shell(exec:make)") == [three]


async def test_bad_always_rule_is_refused(store: ApprovalStore) -> None:
    """A standing rule the policy could not parse is refused, not stored."""
    with pytest.raises(PolicyError):
        await store.add_always_rule("fs.write(", project="/p")
    assert await store.always_rules() == []


async def test_concurrent_consumers_one_wins(store: ApprovalStore, clock: Clock) -> None:
    """Of many tasks consuming one approval at once, exactly one succeeds."""
    request = make_request(clock)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve())
    outcomes: list[str] = []

    async def consume() -> None:
        try:
            await store.consume(request.id)
        except ApprovalAlreadyUsed:
            outcomes.append("lost")
        else:
            outcomes.append("won")

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(consume)
    assert sorted(outcomes) == ["lost"] * 19 + ["won"]


async def test_find_approved_matches_exactly(store: ApprovalStore, clock: Clock) -> None:
    """`find_approved` returns an approved, unused, unexpired request bound to the same call."""
    request = make_request(clock)
    other = make_request(clock, path="src/other.py")
    await store.put(request)
    await store.put(other)
    key = (request.tool, request.spec_fingerprint, request.arguments_hash, request.session_id)
    assert await store.find_approved(*key) is None
    await store.resolve(request.id, ApprovalDecision.approve())
    assert await store.find_approved(*key) == request
    assert await store.find_approved(request.tool, "other-version", *key[2:]) is None
    assert await store.find_approved(*key[:3], "another-session") is None
    assert await store.find_approved("fs.delete", *key[1:]) is None
    await store.consume(request.id)
    assert await store.find_approved(*key) is None


async def test_find_approved_ignores_expired(store: ApprovalStore, clock: Clock) -> None:
    """An approval past its expiry is never found for reuse."""
    request = make_request(clock, ttl=10)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve())
    clock.now += 10
    key = (request.tool, request.spec_fingerprint, request.arguments_hash, request.session_id)
    assert await store.find_approved(*key) is None


async def test_find_approved_picks_its_call_among_many_approved(
    store: ApprovalStore, clock: Clock
) -> None:
    """Among hundreds of approved, unused requests for other arguments and sessions, the one
    bound to this call (also without a session) is found, and only it."""
    for index in range(300):
        other = make_request(clock, path=f"src/{index}.py", session=None if index % 2 else "s1")
        await store.put(other)
        await store.resolve(other.id, ApprovalDecision.approve())
    request = make_request(clock, path="src/mine.py", session=None)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve())
    key = (request.tool, request.spec_fingerprint, request.arguments_hash, None)
    assert await store.find_approved(*key) == request
    assert await store.find_approved(*key[:3], "s1") is None


async def test_ids_with_a_nul_character_work_in_every_store(
    store: ApprovalStore, clock: Clock
) -> None:
    """A call id, session id or project may hold any text (a model or an MCP client chooses
    the first two): every store keeps and finds it, PostgreSQL (whose text cannot hold NUL)
    as well as memory and SQLite, and it never matches the same text without the NUL."""
    made = make_request(clock, session="s\x00")
    request = dataclasses.replace(
        made, call=dataclasses.replace(made.call, id="c\x00"), project="/p\x00"
    )
    await store.put(request)
    assert (await store.get(request.id)).request == request
    found = await store.find_by_call("c\x00", session_id="s\x00", project="/p\x00")
    assert found is not None and found.request.id == request.id
    assert await store.find_by_call("c", session_id="s", project="/p") is None
    assert await store.find_by_call("c", session_id="s\x00", project="/p\x00") is None
    assert await store.find_by_call("c\x00", session_id="s\x00", project="/p") is None
    await store.resolve(request.id, ApprovalDecision(approved=True, by="ana"))
    approved = await store.find_approved(
        request.tool,
        request.spec_fingerprint,
        request.arguments_hash,
        "s\x00",
        project="/p\x00",
    )
    assert approved == request
    await store.grant_session("s\x00", "fs.write", "f", project="/p\x00")
    assert await store.has_session_grant("s\x00", "fs.write", "f", project="/p\x00")
    assert not await store.has_session_grant("s", "fs.write", "f", project="/p")
    await store.revoke_session("s\x00")
    assert not await store.has_session_grant("s\x00", "fs.write", "f", project="/p\x00")
    assert await store.count_call("k\x00", limit=1, window=None, now=clock()) is None
    assert await store.count_call("k", limit=1, window=None, now=clock()) is None
    assert await store.count_call("k\x00", limit=1, window=None, now=clock()) == math.inf
    rule = await store.add_always_rule("fs.write", project="/p\x00")
    assert rule.project == "/p\x00"
    assert await store.always_rules("/p\x00") == [rule]
    assert await store.remove_always_rule("fs.write", project="/p\x00") == [rule]
    await store.put_interrupt("i\x00", {"a": "\x00"}, clock() + 60)
    assert await store.take_interrupt("i\x00") == {"a": "\x00"}
