"""`invokit audit --last N` reads the log from its end: it shows what a whole read shows, and its
cost follows N, not the size of the log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import Executor, Policy, ToolCall, tool
from invokit.cli._audit_tail import lines_from_end, records_from_end, window
from invokit.cli._livelog import Narrator
from invokit.execution import JsonlAuditSink
from tests.cli.conftest import Cli


@given(
    text=st.text(alphabet="ab\né", max_size=200),
    block=st.integers(min_value=1, max_value=16),
)
@settings(max_examples=300, deadline=None)
def test_lines_from_end_are_the_complete_lines_last_first(
    tmp_path_factory: pytest.TempPathFactory, text: str, block: int
) -> None:
    """Whatever the block size, the lines read from the end are the file's complete lines in
    reverse order; text after the last newline (a writer mid-way) is left out."""
    path = tmp_path_factory.mktemp("tail") / "log"
    path.write_bytes(text.encode("utf-8"))
    complete = text.split("\n")[:-1]
    assert list(lines_from_end(path, block=block)) == complete[::-1]


@tool(read_only=True)
async def look(n: int) -> str:
    """Look at something."""
    return f"saw {n}"


@tool
async def change(n: int) -> str:
    """Change something."""
    return f"changed {n}"


@tool(read_only=True)
async def broken(n: int) -> str:
    """Fail."""
    raise RuntimeError(f"broken {n}")


def _write_log(path: Path | str, calls: int) -> None:
    """A real audit log (a JSONL file, or a PostgreSQL URL): allowed, failing, denied, asked
    and invalid calls, interleaved."""
    policy = Policy(deny=["change(n=7)"])

    async def run() -> None:
        if isinstance(path, Path):
            sink: Any = JsonlAuditSink(path)
        else:
            from invokit.postgres import PostgresAuditSink

            sink = PostgresAuditSink(path)
        executor = Executor([look, change, broken], policy=policy, events=[sink])
        kinds = ("look", "change", "broken", "look")
        for i in range(calls):
            name = kinds[i % len(kinds)]
            arguments = json.dumps({"n": 7 if i % 5 == 0 else i}) if i % 11 else '{"n": "x"}'
            await executor.execute(ToolCall(id=f"c{i % 9}", name=name, arguments=arguments))
        sink.close()

    anyio.run(run)


def _shown(records: list[dict[str, Any]]) -> list[str]:
    narrator = Narrator()
    return [line.plain for r in records if (line := narrator.line(r)) is not None]


def test_the_last_lines_are_those_of_a_whole_read(tmp_path: Path) -> None:
    """For every N, the narrated window read from the end ends in the same N lines as the
    narration of the whole log, and the JSON window is the last N records."""
    path = tmp_path / "audit.jsonl"
    _write_log(path, 60)
    everything = [json.loads(line) for line in path.read_text().splitlines()]
    whole = _shown(everything)
    assert len(whole) > 40
    for last in range(1, len(whole) + 2):
        narrated = window(records_from_end(path), last, lambda r: len(_shown(r)))
        assert _shown(narrated)[-last:] == whole[-last:], last
        assert window(records_from_end(path), last) == everything[-last:]
    assert window(records_from_end(path), 0) == everything


def test_the_window_reads_only_the_end_of_a_large_log(tmp_path: Path) -> None:
    """Showing the last 5 lines of a log of 2,000 calls reads a few dozen records, not all."""
    path = tmp_path / "audit.jsonl"
    _write_log(path, 2_000)
    read = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal read
        for record in records_from_end(path):
            read += 1
            yield record

    shown = _shown(window(counted(), 5, lambda r: len(_shown(r))))
    assert len(shown) >= 5
    assert read < 60, read


def test_the_database_log_shows_its_last_lines_read_in_pages(cli: Cli, postgres_url: str) -> None:
    """``invokit audit --last N --state URL`` shows what a whole read of the table shows, the
    table read down in pages from its newest event."""
    from invokit.postgres import PostgresAuditSink

    _write_log(postgres_url, 150)  # more events than one page
    reader = PostgresAuditSink(postgres_url)
    everything = reader.records()
    reader.close()
    assert len(everything) > 500
    code, out, err = cli("audit", "--state", postgres_url, "--last", "3", "--json")
    assert code == 0, err
    shown = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in shown] == [r["id"] for r in everything[-3:]]
    code, out, err = cli("audit", "--state", postgres_url, "--last", "4")
    assert code == 0, err
    tail = _shown(everything)[-4:]
    assert len(tail) == 4
    printed = " ".join(out.split())
    assert printed.endswith(" ".join(tail[-1].split())), out
    for line in tail:
        assert " ".join(line.split()) in printed, (line, out)
