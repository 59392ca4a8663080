"""Who may answer, and who answered, survive every store (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from invokit.approvals import ApprovalDecision, ApprovalStore
from invokit.permissions import Deciders, Person

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio


async def test_deciders_and_person_round_trip(store: ApprovalStore, clock: Clock) -> None:
    """A request's deciders and a decision's person come back from the store as they went in."""
    deciders = Deciders(rule="fs.write", approvers=("group:sre",), four_eyes=True)
    request = replace(make_request(clock), deciders=deciders)
    await store.put(request)
    assert (await store.get(request.id)).request.deciders == deciders
    person = Person(sub="carol", iss="https://idp", groups=("sre",))
    await store.resolve(request.id, ApprovalDecision.approve(by="carol", person=person))
    decision = (await store.get(request.id)).decision
    assert decision is not None and decision.person == person
