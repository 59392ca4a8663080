"""Waiting, bounded, for a person to decide a call that nobody here can ask about.

When ``invokit serve`` has no one to ask inline (no terminal, and a client that cannot elicit),
the call may wait a while on the store's ``wait_decided``: ``invokit approvals approve ID`` in
any process, on any replica's store, wakes it and it runs at once (the store's ``consume``
still decides that it runs at most once). At the end of the wait nothing was decided and the
model reads the usual "approval required" result.
"""

from __future__ import annotations

import logging
import time

from invokit.approvals import ApprovalRequest, ApprovalStore
from invokit.approvals.internal import current_lease

logger = logging.getLogger("invokit.mcp")


async def wait_for_decision(store: ApprovalStore, request: ApprovalRequest, wait: float) -> bool:
    """Whether ``request`` was decided (approved, denied, or it expired) within ``wait`` seconds
    (never past its lifetime). ``False`` at once when ``wait`` is not positive or the store
    cannot wait; a store that fails while waiting counts as nothing decided."""
    timeout = min(wait, request.expires_at - time.time())
    waiter = getattr(store, "wait_decided", None)
    if timeout <= 0 or waiter is None:
        return False
    lease = current_lease()
    if lease is not None:
        # Waited on for a caller (a stateless retry asked by an earlier request, too): leased
        # while it waits, so it goes with the caller or with this process.
        await lease.hold(request.id)
    try:
        record = await waiter(request.id, timeout)
    except Exception as exc:  # the request stays pending: the model is told to call again
        logger.warning("waiting for approval %s failed: %r", request.id, exc)
        return False
    return bool(record.status != "pending")
