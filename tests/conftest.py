"""Shared test configuration: anyio backend and hypothesis profile."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "invokit",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    max_examples=100,
)
settings.load_profile("invokit")


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio unless a test parametrizes the backend."""
    return "asyncio"
