"""Every approval store keeps what runs an execution surface a call changes."""

from __future__ import annotations

import pytest

from invokit._calls import ToolCall
from invokit.approvals import ApprovalRequest, ApprovalStore
from invokit.permissions import Decision, FileWrite

from ..helpers import SPEC, Clock

pytestmark = pytest.mark.anyio

RUNS = "git runs its hooks and obeys its config"


async def test_protected_round_trips(store: ApprovalStore, clock: Clock) -> None:
    """A request asked about an opted-in surface comes back with its warning, and with its
    marked permission request; one without comes back without."""
    path = ".git/hooks/pre-commit"
    call = ToolCall(id="c1", name="fs.write", arguments={"path": path}, session_id="s1")
    decision = Decision(verdict="ask", reason="surface", targeted=True, protected=RUNS)
    request = ApprovalRequest.create(
        call=call,
        spec=SPEC,
        arguments={"path": path},
        requests=[FileWrite(path=path, surface=RUNS)],
        decision=decision,
        now=clock(),
    )
    assert request.protected == RUNS
    await store.put(request)
    record = await store.get(request.id)
    assert record.request == request
    assert record.request.protected == RUNS
    assert (await store.list_pending())[0].protected == RUNS
    plain = ApprovalRequest.from_dict({**request.to_dict(), "protected": None})
    assert plain.protected is None and "protected" not in plain.to_dict()
