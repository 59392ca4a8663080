"""``count_call``: the atomic quota counter every approval store keeps."""

from __future__ import annotations

import math

import pytest

from invokit.approvals import ApprovalStore

pytestmark = pytest.mark.anyio


async def test_records_up_to_the_limit_then_refuses_for_ever(store: ApprovalStore) -> None:
    """Without a window, the limit's calls are recorded and every later one is refused for ever."""
    answers = [await store.count_call("k", limit=2, window=None, now=100.0) for _ in range(3)]
    assert answers == [None, None, math.inf]


async def test_window_says_when_the_next_call_is_allowed(store: ApprovalStore) -> None:
    """With a window, a refusal names the time the oldest counted call leaves the window."""
    assert await store.count_call("k", limit=2, window=10.0, now=100.0) is None
    assert await store.count_call("k", limit=2, window=10.0, now=103.0) is None
    assert await store.count_call("k", limit=2, window=10.0, now=105.0) == 110.0
    assert await store.count_call("k", limit=2, window=10.0, now=110.5) is None
    assert await store.count_call("k", limit=2, window=10.0, now=111.0) == 113.0


async def test_keys_are_counted_apart(store: ApprovalStore) -> None:
    """A call under one key does not use another key's quota."""
    assert await store.count_call("a", limit=1, window=None, now=1.0) is None
    assert await store.count_call("b", limit=1, window=None, now=1.0) is None
    assert await store.count_call("a", limit=1, window=None, now=2.0) == math.inf


async def test_a_zero_limit_refuses_the_first_call(store: ApprovalStore) -> None:
    """A quota of zero calls refuses every call, for ever."""
    assert await store.count_call("k", limit=0, window=5.0, now=1.0) == math.inf
