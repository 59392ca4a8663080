"""Fixtures shared by the approval tests: a settable clock."""

from __future__ import annotations

import pytest

from .helpers import Clock


@pytest.fixture
def clock() -> Clock:
    """A hand-moved clock starting at a fixed time."""
    return Clock()
