"""Servers for the fetch tests: a victim on 127.0.0.1 and a reachable site on 127.0.0.2."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.builtin.http.server import RecordingServer


@pytest.fixture
def victim() -> Iterator[RecordingServer]:
    """A server on 127.0.0.1 that must receive nothing while the guard is on."""
    with RecordingServer("127.0.0.1").running() as server:
        yield server


@pytest.fixture
def site() -> Iterator[RecordingServer]:
    """A server on 127.0.0.2 that tests allow explicitly (``allow_networks``)."""
    with RecordingServer("127.0.0.2").running() as server:
        yield server
