"""Every store: approvals and session grants carry a project, and match only in it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio


async def test_find_approved_matches_the_project(store: ApprovalStore, clock: Clock) -> None:
    """An approved request of project /one is found from /one only; one without a project only
    by a caller without one."""
    request = replace(make_request(clock), project="/one")
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve())
    key = (request.tool, request.spec_fingerprint, request.arguments_hash, request.session_id)
    assert await store.find_approved(*key, project="/one") == request
    assert await store.find_approved(*key, project="/two") is None
    assert await store.find_approved(*key) is None

    unscoped = make_request(clock, path="src/b.py")
    await store.put(unscoped)
    await store.resolve(unscoped.id, ApprovalDecision.approve())
    other = (unscoped.tool, unscoped.spec_fingerprint, unscoped.arguments_hash, "s1")
    assert await store.find_approved(*other) == unscoped
    assert await store.find_approved(*other, project="/one") is None


async def test_session_grants_are_per_project(store: ApprovalStore) -> None:
    """A session grant in /one does not answer for /two or for no project; granting it in /two
    too is recorded separately, and revoking the session drops both."""
    await store.grant_session("s1", "fs.write", "f1", project="/one")
    await store.grant_session("s1", "fs.write", "f1", project="/one")
    assert await store.has_session_grant("s1", "fs.write", "f1", project="/one")
    assert not await store.has_session_grant("s1", "fs.write", "f1", project="/two")
    assert not await store.has_session_grant("s1", "fs.write", "f1")
    await store.grant_session("s1", "fs.write", "f1", project="/two")
    assert await store.has_session_grant("s1", "fs.write", "f1", project="/two")
    await store.revoke_session("s1")
    assert not await store.has_session_grant("s1", "fs.write", "f1", project="/one")
    assert not await store.has_session_grant("s1", "fs.write", "f1", project="/two")
