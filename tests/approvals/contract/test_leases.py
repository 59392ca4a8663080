"""Every store: a question held by a lease lives only as long as the lease is renewed."""

from __future__ import annotations

import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore
from invokit.approvals._lease import LeasedStore
from invokit.exceptions import ApprovalAlreadyUsed, ApprovalError

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio

YES = ApprovalDecision.approve(by="cli", channel="cli")


def leased(store: ApprovalStore) -> LeasedStore:
    assert isinstance(store, LeasedStore)
    return store


async def test_a_lease_that_runs_out_withdraws_the_question(
    store: ApprovalStore, clock: Clock
) -> None:
    """Past its lease the question is withdrawn by the executor, says why, is no longer
    listed, and no channel can approve it; the sweep records it once."""
    request = make_request(clock)
    await store.put(request)
    assert (await leased(store).renew_lease(request.id, clock.now + 10)).status == "pending"
    clock.now += 11
    record = await store.get(request.id)
    assert record.status == "denied"
    assert record.decision is not None and record.decision.by == "executor"
    assert "its caller went away at" in (record.decision.reason or "")
    assert await store.list_pending() == []
    with pytest.raises(ApprovalAlreadyUsed) as refused:
        await store.resolve(request.id, YES)
    assert refused.value.detail.startswith("withdrawn: its caller went away at")
    with pytest.raises(ApprovalError):
        await store.consume(request.id)
    swept = await leased(store).withdraw_lapsed()
    assert [r.request.id for r in swept] == [request.id]
    assert swept[0].decision == record.decision
    assert await leased(store).withdraw_lapsed() == []
    assert (await store.get(request.id)).decision == record.decision


async def test_a_renewed_lease_keeps_the_question(store: ApprovalStore, clock: Clock) -> None:
    """Renewed before it runs out, the lease holds: the question waits and can be approved."""
    request = make_request(clock)
    await store.put(request)
    for _ in range(5):
        await leased(store).renew_lease(request.id, clock.now + 10)
        clock.now += 8
    assert await leased(store).withdraw_lapsed() == []
    assert [r.id for r in await store.list_pending()] == [request.id]
    assert (await store.resolve(request.id, YES)).status == "approved"


async def test_a_lease_that_ran_out_is_not_renewed(store: ApprovalStore, clock: Clock) -> None:
    """A late renewal does not bring a withdrawn question back; nor does a release."""
    request = make_request(clock)
    await store.put(request)
    await leased(store).renew_lease(request.id, clock.now + 10)
    clock.now += 10
    assert (await leased(store).renew_lease(request.id, clock.now + 10)).status == "denied"
    assert (await leased(store).renew_lease(request.id, None)).status == "denied"
    await leased(store).withdraw_lapsed()
    clock.now -= 5  # recorded: even a clock read earlier again finds it withdrawn
    assert (await store.get(request.id)).status == "denied"


async def test_a_released_lease_leaves_the_question_waiting(
    store: ApprovalStore, clock: Clock
) -> None:
    """Released (nobody waits, the model was told to call again), the question stays pending
    until it expires, and can be approved long after the lease would have run out."""
    request = make_request(clock)
    await store.put(request)
    await leased(store).renew_lease(request.id, clock.now + 10)
    assert (await leased(store).renew_lease(request.id, None)).status == "pending"
    clock.now += 600
    assert await leased(store).withdraw_lapsed() == []
    assert (await store.resolve(request.id, YES)).status == "approved"


async def test_a_withdrawal_after_the_lease_ran_out_keeps_the_first_no(
    store: ApprovalStore, clock: Clock
) -> None:
    """The lease ran out: a later "no" changes nothing, and a decided question has no lease
    to renew."""
    request = make_request(clock)
    await store.put(request)
    await leased(store).renew_lease(request.id, clock.now + 10)
    clock.now += 20
    lapsed = (await store.get(request.id)).decision
    record = await store.withdraw(request.id, ApprovalDecision.deny("no", by="cli"))
    assert record.decision == lapsed
    other = make_request(clock, path="src/b.py")
    await store.put(other)
    await store.resolve(other.id, YES)
    assert (await leased(store).renew_lease(other.id, clock.now + 10)).status == "approved"


async def test_another_process_sees_the_lease_run_out(
    twins: tuple[ApprovalStore, ApprovalStore], clock: Clock
) -> None:
    """Two connections to one database (a replica that died, and the CLI): the second sees the
    question withdrawn once the first stops renewing, and cannot approve it."""
    holder, cli = twins
    request = make_request(clock)
    await holder.put(request)
    await leased(holder).renew_lease(request.id, clock.now + 10)
    clock.now += 5
    assert [r.id for r in await cli.list_pending()] == [request.id]
    clock.now += 6
    with pytest.raises(ApprovalAlreadyUsed, match="withdrawn: its caller went away"):
        await cli.resolve(request.id, YES)
    assert [r.request.id for r in await leased(cli).withdraw_lapsed()] == [request.id]


async def test_a_question_born_leased_lapses_without_a_renewal(
    twins: tuple[ApprovalStore, ApprovalStore], clock: Clock
) -> None:
    """A question stored with its lease in one step (its process then died before renewing
    it): another connection sees it pending, then withdrawn once the lease runs out."""
    holder, cli = twins
    request = make_request(clock)
    await leased(holder).put_leased(request, clock.now + 10)
    assert [r.id for r in await cli.list_pending()] == [request.id]
    clock.now += 11
    with pytest.raises(ApprovalAlreadyUsed, match="withdrawn: its caller went away"):
        await cli.resolve(request.id, YES)
    assert [r.request.id for r in await leased(cli).withdraw_lapsed()] == [request.id]


async def test_a_question_born_leased_is_a_question_like_any_other(
    store: ApprovalStore, clock: Clock
) -> None:
    """Stored leased, the question waits, is renewed and approved as one stored by ``put``;
    its id cannot be stored twice, either way."""
    request = make_request(clock)
    await leased(store).put_leased(request, clock.now + 10)
    with pytest.raises(ValueError, match="already stored"):
        await leased(store).put_leased(request, clock.now + 10)
    with pytest.raises(ValueError, match="already stored"):
        await store.put(request)
    clock.now += 8
    assert (await leased(store).renew_lease(request.id, clock.now + 10)).status == "pending"
    clock.now += 8
    assert await leased(store).withdraw_lapsed() == []
    assert (await store.resolve(request.id, YES)).status == "approved"
