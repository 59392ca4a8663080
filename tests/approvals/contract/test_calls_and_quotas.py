"""Every store: the approval of a call found by its id, and quotas counted atomically."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio


async def test_find_by_call_is_the_newest_of_the_call(store: ApprovalStore, clock: Clock) -> None:
    """The newest approval for a call id in the session and project is found, in any status;
    another session, project or call id never finds it."""
    found_by = store.find_by_call
    first = replace(make_request(clock), project="/p")
    clock.now += 1
    second = replace(make_request(clock, path="src/b.py"), project="/p")
    await store.put(first)
    await store.put(second)
    await store.resolve(second.id, ApprovalDecision.deny("no"))
    found = await found_by("c1", session_id="s1", project="/p")
    assert found is not None
    assert found.request == second and found.status == "denied"
    assert await found_by("c1", session_id="s2", project="/p") is None
    assert await found_by("c1", session_id="s1", project="/q") is None
    assert await found_by("c1", session_id="s1", project=None) is None
    assert await found_by("c2", session_id="s1", project="/p") is None
    bare = make_request(clock, session=None)
    await store.put(bare)
    found = await found_by("c1", session_id=None, project=None)
    assert found is not None and found.request == bare


async def test_count_call_ever_or_within_a_window(store: ApprovalStore) -> None:
    """Without a window a key allows ``limit`` calls ever (then never: inf); with one, the
    next call is allowed when the oldest leaves it; keys are counted apart."""
    count = store.count_call
    assert await count("ever", limit=2, window=None, now=100.0) is None
    assert await count("ever", limit=2, window=None, now=101.0) is None
    assert await count("ever", limit=2, window=None, now=5000.0) == math.inf

    assert await count("w", limit=2, window=10.0, now=100.0) is None
    assert await count("w", limit=2, window=10.0, now=104.0) is None
    assert await count("w", limit=2, window=10.0, now=105.0) == 110.0
    assert await count("w", limit=2, window=10.0, now=110.0) is None
    assert await count("w", limit=2, window=10.0, now=111.0) == 114.0
    assert await count("other", limit=1, window=10.0, now=111.0) is None
