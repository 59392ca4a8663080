"""Closing an executor: every tool it set up torn down once, each within a bound, then the
event sinks and the approval store, whatever any one of them does."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from invokit.approvals import ApprovalStore
    from invokit.execution._events import EventSink
    from invokit.tools import Tool


async def close_all(
    tools: Iterable[Tool],
    sinks: Iterable[EventSink],
    approvals: ApprovalStore,
    *,
    bound: float,
) -> None:
    """Tear down ``tools`` (each given ``bound`` seconds), then close ``sinks`` and
    ``approvals``. A teardown that fails or does not finish in time is reported as a
    ``RuntimeWarning`` and the rest still close: one tool never keeps the others, the audit
    log or the store open."""
    for tool in tools:
        with anyio.move_on_after(bound) as scope:
            try:
                await tool.close()
            except Exception as exc:  # a close of its own (a view, an adapter) that raised
                _report(f"teardown of tool {tool.name!r} failed: {exc!r}")
        if scope.cancelled_caught:
            _report(f"teardown of tool {tool.name!r} did not finish within {bound:g} s; left")
    for sink in sinks:
        try:
            sink.close()
        except Exception as exc:
            _report(f"closing the event sink {sink!r} failed: {exc!r}")
    try:
        await approvals.close()
    except Exception as exc:
        _report(f"closing the approval store failed: {exc!r}")


def _report(message: str) -> None:
    # Warnings turned into errors (-W error) still never stop the rest from closing.
    with contextlib.suppress(Warning):
        warnings.warn(message, RuntimeWarning, stacklevel=3)
