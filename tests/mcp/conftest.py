"""MCP tests share one server subprocess per module: importing the SDK takes seconds."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module-scoped, so a module's async fixtures (a running server, a session) are shared."""
    return "asyncio"
