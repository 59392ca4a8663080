"""A local server standing in for the search backends, and their recorded payloads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builtin.http.server import RecordingServer

DATA = Path(__file__).parent / "data"


@pytest.fixture
def backend() -> Iterator[RecordingServer]:
    """A real HTTP server on 127.0.0.1 that records each request."""
    with RecordingServer("127.0.0.1").running() as server:
        yield server


def payload(name: str) -> bytes:
    """A response body in the backend's real format."""
    return (DATA / name).read_bytes()
