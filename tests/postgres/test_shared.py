"""Spilled outputs and MCP pins behind their protocols: the memory/file stores and PostgreSQL
behave alike, and in PostgreSQL what one replica keeps every replica reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from invokit import OutputLimit, ToolCall, tool
from invokit.execution import ArtifactStore, Completed, Executor, SpillStore
from invokit.execution._limits import READER_NAME
from invokit.mcp import PinStorage, PinStore
from invokit.postgres import PostgresArtifactStore, PostgresPinStore

BIG = "".join(f"line {i:05d} \x00 \udc80 é\n" for i in range(2000))


@pytest.fixture(params=["memory", "postgres"])
def spills(request: pytest.FixtureRequest) -> Iterator[SpillStore]:
    """The memory store, and PostgreSQL on a fresh database, each keeping three outputs."""
    if request.param == "memory":
        yield ArtifactStore(capacity=3)
        return
    store = PostgresArtifactStore(request.getfixturevalue("postgres_url"), capacity=3)
    yield store
    store.close()


@pytest.fixture(params=["file", "postgres"])
def pins(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PinStorage]:
    """The JSON file, and PostgreSQL on a fresh database."""
    if request.param == "file":
        yield PinStore(tmp_path / "pins.json")
        return
    store = PostgresPinStore(request.getfixturevalue("postgres_url"))
    yield store
    store.close()


def test_spills_round_trip_any_text_and_keep_the_newest(spills: SpillStore) -> None:
    """Any text (NUL, a lone surrogate, accents) comes back equal; only the newest
    ``capacity`` outputs are kept; an unknown handle is None."""
    assert isinstance(spills, SpillStore)
    handles = [spills.put(f"{n}:{BIG}") for n in range(4)]
    assert len(set(handles)) == 4
    assert spills.get(handles[0]) is None
    assert [spills.get(h) for h in handles[1:]] == [f"{n}:{BIG}" for n in (1, 2, 3)]
    assert spills.get("art_unknown") is None
    assert spills.reader() is spills.reader()
    assert spills.reader().name == READER_NAME


def test_pins_trust_forget_and_list(pins: PinStorage) -> None:
    """Trusted fingerprints are read back, replaced, listed in order and forgotten."""
    assert isinstance(pins, PinStorage)
    assert pins.get("gh", "search") is None
    pin = pins.trust("gh", "search", "f1")
    assert (pin.server, pin.tool, pin.fingerprint) == ("gh", "search", "f1")
    pins.trust_many("gh", {"search": "f2", "issues": "f3"})
    pins.trust_many("fs", {"read": "f4"})
    pins.trust_many("fs", {})
    assert pins.snapshot("gh") == {"search": "f2", "issues": "f3"}
    assert [(p.server, p.tool, p.fingerprint) for p in pins.list()] == [
        ("fs", "read", "f4"),
        ("gh", "issues", "f3"),
        ("gh", "search", "f2"),
    ]
    assert [p.tool for p in pins.list("gh")] == ["issues", "search"]
    assert pins.forget("gh", "search") == 1
    assert pins.forget("gh", "search") == 0
    assert pins.forget("gh") == 1
    assert pins.snapshot("gh") == {}
    assert [p.server for p in pins.list()] == ["fs"]


@pytest.mark.anyio
async def test_a_spill_of_one_replica_is_read_through_another(postgres_url: str) -> None:
    """An executor spills a large output into PostgreSQL; a second executor on another store
    object (another replica) pages through all of it with tool_result_read."""

    @tool(read_only=True, output_limit=OutputLimit(max_chars=1000, mode="spill"))
    async def big() -> str:
        """Big output."""
        return BIG

    mine = PostgresArtifactStore(postgres_url)
    first = Executor([big], artifacts=mine)
    outcome = await first.execute(ToolCall(id="1", name="big"))
    assert isinstance(outcome, Completed) and outcome.result.truncated
    handle = outcome.result.metadata["artifact"]
    other = PostgresArtifactStore(postgres_url)
    second = Executor([big], artifacts=other)
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await second.execute(
            ToolCall(
                id="r",
                name=READER_NAME,
                arguments={"handle": handle, "offset": offset, "length": 20_000},
            )
        )
        assert isinstance(page, Completed) and not page.result.is_error
        pieces.append(page.result.structured["text"])
        offset = page.result.structured["next_offset"]
    assert "".join(pieces) == BIG
    mine.close()
    other.close()


def test_a_pin_of_one_replica_is_seen_by_another(postgres_url: str) -> None:
    """A tool trusted through one store object is pinned for another on the same database."""
    one, two = PostgresPinStore(postgres_url), PostgresPinStore(postgres_url)
    one.trust("gh", "search", "f1")
    assert two.snapshot("gh") == {"search": "f1"}
    assert two.forget("gh") == 1
    assert one.get("gh", "search") is None
    one.close()
    two.close()


def test_spills_and_pins_survive_a_dropped_connection(postgres_url: str) -> None:
    """The server ended the stores' idle connections (a restart, a failover, an idle timeout):
    the next spill, read and pin lookup work on a new connection instead of failing once."""
    import psycopg

    spills = PostgresArtifactStore(postgres_url)
    pins = PostgresPinStore(postgres_url)
    handle = spills.put("kept")
    pins.trust("srv", "read", "f1")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    assert spills.get(handle) == "kept"
    assert spills.get(spills.put("new")) == "new"
    pin = pins.get("srv", "read")
    assert pin is not None and pin.fingerprint == "f1"
    spills.close()
    pins.close()
