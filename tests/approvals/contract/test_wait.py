"""Every store: ``wait_decided`` returns once a decision is made, or at the timeout."""

from __future__ import annotations

import time

import anyio
import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore
from invokit.exceptions import ApprovalNotFound

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio

HOUR = 3600.0
"""A wait's own timeout: far past the test's deadline, so only the decision can end it."""
DEADLINE = 60.0
"""Seconds a test waits for the store at most: a bound on a hang, not a speed."""


async def test_a_decision_wakes_the_waiter(store: ApprovalStore, clock: Clock) -> None:
    """A waiter gets the approved record when another task resolves it: woken by the
    decision (its own timeout is an hour; the test's deadline a minute)."""
    request = make_request(clock)
    await store.put(request)
    woken: list[str] = []

    async def wait() -> None:
        record = await store.wait_decided(request.id, HOUR)
        woken.append(record.status)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.sleep(0.2)
            await store.resolve(request.id, ApprovalDecision.approve(by="ana"))
    assert woken == ["approved"]


async def test_a_withdrawal_wakes_the_waiter(store: ApprovalStore, clock: Clock) -> None:
    """A "no" that withdraws the request ends the wait with the denied record."""
    request = make_request(clock)
    await store.put(request)
    async with anyio.create_task_group() as group:

        async def withdraw() -> None:
            await anyio.sleep(0.1)
            await store.withdraw(request.id, ApprovalDecision.deny("gone"))

        group.start_soon(withdraw)
        record = await store.wait_decided(request.id, 10.0)
    assert record.status == "denied"


async def test_an_earlier_decision_returns_at_once(store: ApprovalStore, clock: Clock) -> None:
    """A request decided before the wait began is returned without waiting."""
    request = make_request(clock)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.deny())
    with anyio.fail_after(DEADLINE):
        record = await store.wait_decided(request.id, HOUR)
    assert record.status == "denied"


async def test_the_timeout_returns_the_pending_record(store: ApprovalStore, clock: Clock) -> None:
    """Nobody decides: after the timeout the record comes back still pending."""
    request = make_request(clock)
    await store.put(request)
    started = time.monotonic()
    with anyio.fail_after(DEADLINE):
        record = await store.wait_decided(request.id, 0.3)
    assert record.status == "pending"
    assert time.monotonic() - started >= 0.25  # not before its timeout (never early)


async def test_an_expired_request_is_not_waited_for(store: ApprovalStore, clock: Clock) -> None:
    """A request past its expiry is returned as expired at once."""
    request = make_request(clock, ttl=10)
    await store.put(request)
    clock.now += 10
    record = await store.wait_decided(request.id, 30.0)
    assert record.status == "expired"


async def test_waiting_for_an_unknown_id(store: ApprovalStore) -> None:
    """Waiting for an approval that was never stored raises ApprovalNotFound."""
    with pytest.raises(ApprovalNotFound):
        await store.wait_decided("nope", 1.0)


async def test_many_waiters_on_many_requests(store: ApprovalStore, clock: Clock) -> None:
    """Each of several waiters is woken by its own request's decision, and only by it."""
    requests = [make_request(clock, path=f"f{n}") for n in range(5)]
    for request in requests:
        await store.put(request)
    results: dict[str, str] = {}

    async def wait(approval_id: str, seconds: float) -> None:
        results[approval_id] = (await store.wait_decided(approval_id, seconds)).status

    async with anyio.create_task_group() as group:
        for request in requests[:4]:
            group.start_soon(wait, request.id, 10.0)
        group.start_soon(wait, requests[4].id, 0.5)
        await anyio.sleep(0.1)
        for request in requests[:4]:
            await store.resolve(request.id, ApprovalDecision.approve())
    assert [results[r.id] for r in requests] == ["approved"] * 4 + ["pending"]


async def test_a_decision_of_another_connection_wakes_the_waiter(
    twins: tuple[ApprovalStore, ApprovalStore], clock: Clock
) -> None:
    """A decision through another store on the same database (another process's connection)
    ends the wait: SQLite sees it by polling, PostgreSQL is told by ``NOTIFY``."""
    waiting, deciding = twins
    request = make_request(clock)
    await deciding.put(request)
    woken: list[str] = []

    async def wait() -> None:
        record = await waiting.wait_decided(request.id, HOUR)
        woken.append(record.status)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.sleep(0.1)
            await deciding.resolve(request.id, ApprovalDecision.approve())
    assert woken == ["approved"]
