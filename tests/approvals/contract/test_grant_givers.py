"""Every store: a session grant keeps who gave it, when and by answering which approval."""

from __future__ import annotations

import pytest

from invokit.approvals import ApprovalStore, SessionGrant

from ..helpers import Clock

pytestmark = pytest.mark.anyio


async def test_a_grant_names_its_giver(store: ApprovalStore, clock: Clock) -> None:
    """The grant reads back with its giver, time and approval; granting it again keeps the
    first giver; another session, tool version or project has no grant."""
    await store.grant_session(
        "s1", "fs.write", "f1", project="/p", by="ann", at=clock.now - 5, approval_id="apr_1"
    )
    await store.grant_session(
        "s1", "fs.write", "f1", project="/p", by="bob", at=clock.now, approval_id="apr_2"
    )
    assert await store.session_grant("s1", "fs.write", "f1", project="/p") == SessionGrant(
        session_id="s1",
        tool="fs.write",
        spec_fingerprint="f1",
        project="/p",
        at=clock.now - 5,
        by="ann",
        approval_id="apr_1",
    )
    assert await store.session_grant("s2", "fs.write", "f1", project="/p") is None
    assert await store.session_grant("s1", "fs.write", "f2", project="/p") is None
    assert await store.session_grant("s1", "fs.write", "f1", project="/q") is None
    assert await store.session_grant("s1", "fs.write", "f1") is None
    await store.revoke_session("s1")
    assert await store.session_grant("s1", "fs.write", "f1", project="/p") is None


async def test_a_grant_without_a_giver(store: ApprovalStore, clock: Clock) -> None:
    """A grant given with no giver is dated by the store's clock and names nobody."""
    await store.grant_session("s1", "fs.write", "f1")
    found = await store.session_grant("s1", "fs.write", "f1")
    assert found is not None
    assert (found.at, found.by, found.approval_id, found.project) == (clock.now, None, None, None)


async def test_a_giver_with_nul_and_controls(store: ApprovalStore, clock: Clock) -> None:
    """A giver's name is kept as given (a NUL too, which PostgreSQL text cannot hold as is)."""
    await store.grant_session("s\x00", "fs.write", "f", project="/p", by="ann\x00\x1b[2J")
    found = await store.session_grant("s\x00", "fs.write", "f", project="/p")
    assert found is not None and found.by == "ann\x00\x1b[2J"


async def test_another_connection_names_the_giver(
    twins: tuple[ApprovalStore, ApprovalStore], clock: Clock
) -> None:
    """A grant given through one connection to the database names its giver through another
    (another replica, or the process after a restart)."""
    one, two = twins
    await one.grant_session(
        "s1", "fs.write", "f1", project="/p", by="ann", at=clock.now, approval_id="apr_1"
    )
    found = await two.session_grant("s1", "fs.write", "f1", project="/p")
    assert found is not None
    assert (found.by, found.at, found.approval_id) == ("ann", clock.now, "apr_1")
    assert await two.has_session_grant("s1", "fs.write", "f1", project="/p")
