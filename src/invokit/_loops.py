"""Which event loop is running, without importing asyncio to find out."""

from __future__ import annotations

import sys
from typing import Any


def running_asyncio() -> tuple[Any, Any] | None:
    """``(asyncio, loop)`` when an asyncio loop runs in this thread, else ``None`` (trio, or
    no loop). asyncio not yet imported means it is not running, so ``import invokit`` never
    imports it."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        return asyncio, asyncio.get_running_loop()
    except RuntimeError:
        return None
