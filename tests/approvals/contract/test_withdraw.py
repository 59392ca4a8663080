"""Every store: a "no" withdraws an unused "yes" atomically; interrupts are taken once."""

from __future__ import annotations

import anyio
import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore
from invokit.exceptions import (
    ApprovalAlreadyUsed,
    ApprovalError,
    ApprovalExpired,
    ApprovalNotFound,
)

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio

NO = ApprovalDecision.deny("changed my mind", by="client")


async def test_withdraw_turns_an_unused_approval_into_a_denial(
    store: ApprovalStore, clock: Clock
) -> None:
    """Approved in one channel, withdrawn in another: the record is denied with the "no",
    and it can no longer be consumed."""
    request = make_request(clock)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve(by="cli"))
    record = await store.withdraw(request.id, NO)
    assert record.status == "denied" and record.decision == NO
    with pytest.raises(ApprovalError):
        await store.consume(request.id)
    assert (await store.get(request.id)).status == "denied"


async def test_withdraw_a_pending_request(store: ApprovalStore, clock: Clock) -> None:
    """A pending request withdrawn is denied; a later "yes" cannot resolve it."""
    request = make_request(clock)
    await store.put(request)
    assert (await store.withdraw(request.id, NO)).status == "denied"
    with pytest.raises(ApprovalAlreadyUsed):
        await store.resolve(request.id, ApprovalDecision.approve())


async def test_withdraw_after_the_call_ran_raises(store: ApprovalStore, clock: Clock) -> None:
    """A "no" after the approval was consumed says it came too late; the record stays."""
    request = make_request(clock)
    await store.put(request)
    await store.resolve(request.id, ApprovalDecision.approve())
    await store.consume(request.id)
    with pytest.raises(ApprovalAlreadyUsed):
        await store.withdraw(request.id, NO)
    assert (await store.get(request.id)).status == "consumed"


async def test_withdraw_a_denied_request_keeps_the_first_no(
    store: ApprovalStore, clock: Clock
) -> None:
    """Withdrawing what is already denied changes nothing."""
    request = make_request(clock)
    await store.put(request)
    first = ApprovalDecision.deny("first", by="cli")
    await store.resolve(request.id, first)
    assert (await store.withdraw(request.id, NO)).decision == first
    with pytest.raises(ApprovalNotFound):
        await store.withdraw("nope", NO)


async def test_withdraw_and_consume_race_one_wins(store: ApprovalStore, clock: Clock) -> None:
    """A "no" and a run racing for one approval: either the call runs (consumed) and the no is
    refused, or the no wins and the consume is refused; never both, never neither."""
    for _ in range(10):
        request = make_request(clock)
        await store.put(request)
        await store.resolve(request.id, ApprovalDecision.approve())
        won: list[str] = []

        async def consume(approval_id: str = request.id, won: list[str] = won) -> None:
            try:
                await store.consume(approval_id)
                won.append("consume")
            except ApprovalError:
                pass

        async def withdraw(approval_id: str = request.id, won: list[str] = won) -> None:
            try:
                await store.withdraw(approval_id, NO)
                won.append("withdraw")
            except ApprovalAlreadyUsed:
                pass

        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            group.start_soon(withdraw)
        assert len(won) == 1
        status = (await store.get(request.id)).status
        assert status == ("consumed" if won == ["consume"] else "denied")


async def test_withdraw_wins_across_connections(
    twins: tuple[ApprovalStore, ApprovalStore], clock: Clock
) -> None:
    """Two connections to one database (two processes' stores): after one withdraws, the
    other's consume finds the request denied."""
    one, two = twins
    request = make_request(clock)
    await one.put(request)
    await one.resolve(request.id, ApprovalDecision.approve(by="cli"))
    await two.withdraw(request.id, NO)
    with pytest.raises(ApprovalError):
        await one.consume(request.id)


async def test_interrupt_is_taken_once(store: ApprovalStore, clock: Clock) -> None:
    """A stored interrupt is handed out once; then it is used; an unknown one is not found."""
    data = {"kind": "external", "id": "ext_1", "arguments": {"x": 1}}
    await store.put_interrupt("ext_1", data, clock.now + 60)
    with pytest.raises(ValueError, match="already stored"):
        await store.put_interrupt("ext_1", data, clock.now + 60)
    taken = await store.take_interrupt("ext_1")
    assert taken == data
    taken["arguments"] = {"x": 2}  # the caller's copy; the record does not change
    with pytest.raises(ApprovalAlreadyUsed):
        await store.take_interrupt("ext_1")
    with pytest.raises(ApprovalNotFound):
        await store.take_interrupt("ext_unknown")


async def test_interrupt_expires(store: ApprovalStore, clock: Clock) -> None:
    """An interrupt past its lifetime is refused as expired."""
    await store.put_interrupt("auth_1", {"kind": "auth"}, clock.now + 60)
    clock.now += 61
    with pytest.raises(ApprovalExpired):
        await store.take_interrupt("auth_1")


async def test_concurrent_takers_one_wins(store: ApprovalStore, clock: Clock) -> None:
    """Of many tasks taking one interrupt at once, exactly one gets it."""
    await store.put_interrupt("ext_2", {"kind": "external"}, clock.now + 60)
    got: list[bool] = []

    async def take() -> None:
        try:
            await store.take_interrupt("ext_2")
            got.append(True)
        except ApprovalAlreadyUsed:
            got.append(False)

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(take)
    assert sorted(got) == [False] * 19 + [True]
