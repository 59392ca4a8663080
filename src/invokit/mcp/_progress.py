"""MCP progress notifications for one call: the tool's reports and the heartbeats between."""

from __future__ import annotations

import time
from typing import Any

from invokit.tools import Progress

__all__ = ["ProgressReporter"]


class ProgressReporter:
    """Sends each executor progress report, and each heartbeat, as an MCP progress
    notification. MCP requires the numbers to grow with every notification, and a value never
    exceeds its total.

    The numbers sent are the tool's own plus an offset: each heartbeat raises the offset by one
    (and the total with it), so a tool's ``1 of 10`` after three heartbeats is sent as ``4 of
    13``. A report that would not grow (the tool went back, or repeated a value) or would pass
    its total is not sent. A total, once known, stays known.
    """

    def __init__(self, ctx: Any) -> None:
        self._session = ctx.session
        self._offset = 0.0
        self._tool_last = 0.0
        self._total: float | None = None
        self._last: float | None = None
        self._sent = time.monotonic()

    def idle(self) -> float:
        """Seconds since the last notification."""
        return time.monotonic() - self._sent

    async def __call__(self, progress: Progress) -> None:
        if progress.total is not None:
            # A total below what was already sent cannot be met without going back: the
            # numbers stop where they are instead (a value never passes its total).
            self._total = max(float(progress.total), self._tool_last)
        # A streaming tool's plain yields carry data, not numbers: count them on.
        value = float(progress.progress) if progress.progress is not None else self._tool_last + 1
        if self._total is not None:
            value = min(value, self._total)
        if value <= self._tool_last and self._last is not None:
            return  # not growing: MCP would reject it, and a client would show it going back
        self._tool_last = value
        await self._send(value + self._offset, progress.message)

    async def beat(self, message: str) -> None:
        self._offset += 1
        await self._send(self._tool_last + self._offset, message)

    async def _send(self, value: float, message: str | None) -> None:
        total = self._total + self._offset if self._total is not None else None
        if self._last is not None and value <= self._last:  # pragma: no cover - kept by design
            return
        self._last = value
        self._sent = time.monotonic()
        await self._session.report_progress(_number(value), _number(total), message)


def _number(value: float | None) -> float | int | None:
    """Whole numbers as ``int`` on the wire (``4``, not ``4.0``)."""
    if value is not None and value.is_integer():
        return int(value)
    return value
