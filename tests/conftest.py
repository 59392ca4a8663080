"""Shared test configuration: anyio backend, hypothesis profile, a real PostgreSQL."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from ._postgres import postgres_server, postgres_url

__all__ = ["postgres_server", "postgres_url"]  # the PostgreSQL fixtures, for every test

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
