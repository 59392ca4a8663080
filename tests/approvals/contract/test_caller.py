"""Every store keeps who asked: the caller's principal travels with the request."""

from __future__ import annotations

import dataclasses

import pytest

from invokit._calls import PRINCIPAL
from invokit.approvals import ApprovalDecision, ApprovalStore

from ..helpers import Clock, make_request

pytestmark = pytest.mark.anyio

ANA = {"iss": "https://id.example", "sub": "ana\x00"}


async def test_the_callers_principal_comes_back(store: ApprovalStore, clock: Clock) -> None:
    """A request asked by a verified caller (its call's ``invokit.principal``) comes back with
    that principal from ``get``, ``list_pending``, ``find_by_call`` and ``find_approved``, even
    with text PostgreSQL cannot keep as it is."""
    made = make_request(clock)
    call = dataclasses.replace(made.call, metadata={PRINCIPAL: ANA})
    request = dataclasses.replace(made, call=call)
    await store.put(request)
    assert (await store.get(request.id)).request.call.metadata[PRINCIPAL] == ANA
    assert (await store.list_pending())[0].call.metadata[PRINCIPAL] == ANA
    found = await store.find_by_call("c1", session_id="s1", project=None)
    assert found is not None and found.request == request
    await store.resolve(request.id, ApprovalDecision.approve(by="ana"))
    key = (request.tool, request.spec_fingerprint, request.arguments_hash, request.session_id)
    approved = await store.find_approved(*key)
    assert approved is not None and approved.call.metadata[PRINCIPAL] == ANA
