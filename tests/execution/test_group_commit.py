"""Group commit: a call's outcome is returned once its audit records are written."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from invokit import Executor, Policy, ToolCall, tool
from invokit.execution import Event, JsonlAuditSink, SqliteAuditSink
from invokit.execution._audit_jsonl import read_jsonl

pytestmark = pytest.mark.anyio

SERVER = textwrap.dedent(
    """
    import asyncio, sys
    from invokit import Executor, Policy, ToolCall, tool
    from invokit.execution import JsonlAuditSink, SqliteAuditSink

    state, mode = sys.argv[1], sys.argv[2]
    # "commit": each outcome waits for its records; "deferred": the executor returns at once
    # and the server awaits executor.commit() before it answers; "uncommitted": deferred, and
    # nobody commits; "buffered": no group commit at all.
    extra = {"group_commit": mode != "buffered"}

    @tool(read_only=True)
    async def echo(text: str) -> str:
        '''Echo.'''
        return text

    async def main() -> None:
        sinks = [
            # An hour between background writes: only group commit puts records on disk.
            JsonlAuditSink(state + "/audit.jsonl", flush_interval=3600, **extra),
            SqliteAuditSink(state + "/audit.sqlite3", flush_interval=3600, **extra),
        ]
        executor = Executor(
            [echo], policy=Policy.allow_all(), events=sinks, commit_on_return=mode == "commit"
        )
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        async def serve(line: bytes) -> None:
            call_id, count = line.decode().split()
            calls = [
                ToolCall(id=f"{call_id}-{i}", name="echo", arguments={"text": "hi"})
                for i in range(int(count))
            ]
            outcomes = await asyncio.gather(*(executor.execute(c) for c in calls))
            if mode == "deferred":
                await executor.commit()
            for outcome in outcomes:
                sys.stdout.write(outcome.result.call_id + "\\n")
            sys.stdout.flush()
        tasks = set()
        while line := await reader.readline():
            task = asyncio.ensure_future(serve(line))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    asyncio.run(main())
    """
)


def serve_and_kill(tmp_path: Path, mode: str) -> list[str]:
    """Send batches of concurrent calls to a serving child process, read every result it
    returns, and ``kill -9`` it right after the last one arrives. The ids returned."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    state = tmp_path / "state"
    state.mkdir()
    child = subprocess.Popen(
        [sys.executable, str(script), str(state), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    returned: list[str] = []
    try:
        assert child.stdin is not None and child.stdout is not None
        for batch, count in enumerate((1, 1, 5, 40, 3, 1, 17)):
            child.stdin.write(f"b{batch} {count}\n".encode())
            child.stdin.flush()
            for _ in range(count):
                line = child.stdout.readline()
                assert line, child.stderr.read() if child.stderr else b""
                returned.append(line.decode().strip())
        os.kill(child.pid, signal.SIGKILL)  # at once: no atexit, no close, no flush
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    return returned


def on_disk(state: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each call's record types in the JSONL log and in the SQLite log."""
    jsonl: dict[str, list[str]] = {}
    path = state / "audit.jsonl"
    for record in read_jsonl(path) if path.exists() else ():
        jsonl.setdefault(record["call_id"], []).append(record["type"])
    rows: dict[str, list[str]] = {}
    with sqlite3.connect(state / "audit.sqlite3") as db:
        for call_id, kind in db.execute("SELECT call_id, type FROM events ORDER BY id"):
            rows.setdefault(call_id, []).append(kind)
    db.close()
    return jsonl, rows


STEPS = ["received", "validated", "decided", "started", "completed"]


def test_kill_9_loses_no_record_of_a_returned_call(tmp_path: Path) -> None:
    """A process serving calls is killed with SIGKILL right after its results arrive: every
    returned call has all its records in the JSONL log and in the SQLite log."""
    returned = serve_and_kill(tmp_path, "commit")
    assert len(returned) == 68
    jsonl, rows = on_disk(tmp_path / "state")
    for call_id in returned:
        assert jsonl.get(call_id) == STEPS, call_id
        assert rows.get(call_id) == STEPS, call_id


def test_kill_9_loses_no_record_of_a_call_committed_before_its_answer(tmp_path: Path) -> None:
    """An executor that leaves the commit to its caller (``commit_on_return=False``), whose
    caller awaits ``executor.commit()`` before answering: as durable as committing on return."""
    returned = serve_and_kill(tmp_path, "deferred")
    assert len(returned) == 68
    jsonl, rows = on_disk(tmp_path / "state")
    for call_id in returned:
        assert jsonl.get(call_id) == STEPS, call_id
        assert rows.get(call_id) == STEPS, call_id


def test_a_deferred_commit_nobody_awaits_loses_returned_calls(tmp_path: Path) -> None:
    """The same executor whose caller answers without ``commit()``: the records of answered
    calls are lost (the deferred test above can fail)."""
    returned = serve_and_kill(tmp_path, "uncommitted")
    jsonl, rows = on_disk(tmp_path / "state")
    assert len(returned) == 68
    assert not any(call_id in jsonl for call_id in returned)
    assert not any(call_id in rows for call_id in returned)


def test_without_group_commit_kill_9_loses_returned_calls(tmp_path: Path) -> None:
    """The same run without group commit (and an hour between writes) loses the records of
    calls whose results were returned: the check above can fail."""
    returned = serve_and_kill(tmp_path, "buffered")
    jsonl, rows = on_disk(tmp_path / "state")
    assert len(returned) == 68
    assert not any(call_id in jsonl for call_id in returned)
    assert not any(call_id in rows for call_id in returned)


@tool(read_only=True)
async def echo(text: str) -> str:
    """Echo."""
    return text


async def test_the_outcome_waits_for_the_write(tmp_path: Path) -> None:
    """When execute returns, the call's records are in the file, though the sink's background
    writer waits an hour."""
    sink = JsonlAuditSink(tmp_path / "audit.jsonl", flush_interval=3600)
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "hi"}))
    assert [r["type"] for r in read_jsonl(sink.path)] == STEPS
    await executor.execute(ToolCall(id="c2", name="nope", arguments={}))
    assert [r["type"] for r in read_jsonl(sink.path)][-2:] == ["received", "failed"]
    sink.close()


class CountingSink(JsonlAuditSink):
    """Counts the batches it writes."""

    batches: list[int]

    def _write(self, events: list[Event]) -> None:
        self.batches.append(len(events))
        super()._write(events)


async def test_a_deferred_commit_writes_by_commit(tmp_path: Path) -> None:
    """``commit_on_return=False``: execute returns before the records are written (the
    background writer waits an hour); ``commit()`` writes them, and is a no-op after."""
    sink = CountingSink(tmp_path / "audit.jsonl", flush_interval=3600)
    sink.batches = []
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink], commit_on_return=False)
    for i in range(3):
        await executor.execute(ToolCall(id=f"c{i}", name="echo", arguments={"text": "hi"}))
    await executor.execute(ToolCall(id="c3", name="nope", arguments={}))
    assert not sink.path.exists() or not sink.path.read_text()
    await executor.commit()
    assert [r["type"] for r in read_jsonl(sink.path)] == STEPS * 3 + ["received", "failed"]
    assert sink.batches == [17]  # one write for all of them
    await executor.commit()
    assert sink.batches == [17]
    sink.close()


async def test_calls_ending_together_share_a_write(tmp_path: Path) -> None:
    """Concurrent calls are committed in a few batches, not one write per call."""
    sink = CountingSink(tmp_path / "audit.jsonl", flush_interval=3600)
    sink.batches = []
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    calls = [ToolCall(id=f"c{i}", name="echo", arguments={"text": "hi"}) for i in range(200)]
    outcomes = await executor.execute_many(calls)
    assert len(outcomes) == 200
    assert sum(sink.batches) == 1000
    assert len(sink.batches) < 50
    sink.close()


async def test_sqlite_outcome_waits_for_the_commit(tmp_path: Path) -> None:
    """With the SQLite sink, another connection sees a returned call's records at once."""
    sink = SqliteAuditSink(tmp_path / "audit.sqlite3", flush_interval=3600)
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "hi"}))
    with sqlite3.connect(tmp_path / "audit.sqlite3") as db:
        kinds = [k for (k,) in db.execute("SELECT type FROM events WHERE call_id = 'c1'")]
    db.close()
    assert kinds == STEPS
    sink.close()


class BrokenSink(JsonlAuditSink):
    """Cannot write."""

    def _write(self, events: list[Event]) -> None:
        raise OSError("disk full")


async def test_a_failing_write_does_not_hold_the_call(tmp_path: Path) -> None:
    """A batch that cannot be written warns and still releases the calls waiting on it."""
    sink = BrokenSink(tmp_path / "audit.jsonl", flush_interval=3600)
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    with pytest.warns(RuntimeWarning, match="disk full"), anyio.fail_after(10):
        outcome = await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "x"}))
    assert outcome.result.is_error is False
    sink.close()


async def test_fsync_option_writes_and_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fsync=True`` syncs the JSONL file after each batch written."""
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    sink = JsonlAuditSink(tmp_path / "audit.jsonl", flush_interval=3600, fsync=True)
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "x"}))
    assert synced
    assert json.loads((tmp_path / "audit.jsonl").read_text().splitlines()[-1])["type"] == (
        "completed"
    )
    sink.close()


async def test_tracing_sinks_do_not_hold_calls(tmp_path: Path) -> None:
    """A sink built with ``group_commit=False`` is not waited for: the call returns while its
    write is still blocked."""
    gate = threading.Event()

    class Blocked(JsonlAuditSink):
        def _write(self, events: list[Event]) -> None:
            gate.wait(60)
            super()._write(events)

    sink = Blocked(tmp_path / "audit.jsonl", flush_interval=0.001, group_commit=False)
    executor = Executor([echo], policy=Policy.allow_all(), events=[sink])
    with anyio.fail_after(30):
        outcome = await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "x"}))
    assert outcome.result.is_error is False
    assert list(read_jsonl(sink.path)) == []
    gate.set()
    sink.close()
    assert [r["type"] for r in read_jsonl(sink.path)] == STEPS


async def test_jsonl_commits_on_the_loop_and_sqlite_on_the_writer(tmp_path: Path) -> None:
    """The JSONL log's group commit is one write on the event loop per loop iteration; with
    ``fsync`` it is made by the writer thread, as the SQLite log's is."""
    here = threading.current_thread().name
    seen: dict[str, set[str]] = {}

    def recording(base: type[Any], key: str, **options: Any) -> Any:
        class Recording(base):  # type: ignore[misc]
            def _write(self, events: list[Event]) -> None:
                seen.setdefault(key, set()).add(threading.current_thread().name)
                super()._write(events)

        suffix = "sqlite3" if base is SqliteAuditSink else "jsonl"
        return Recording(tmp_path / f"{key}.{suffix}", flush_interval=3600, **options)

    sinks = [
        recording(JsonlAuditSink, "jsonl"),
        recording(JsonlAuditSink, "synced", fsync=True),
        recording(SqliteAuditSink, "sqlite"),
    ]
    executor = Executor([echo], policy=Policy.allow_all(), events=sinks)
    calls = [ToolCall(id=f"c{i}", name="echo", arguments={"text": "hi"}) for i in range(30)]
    await executor.execute_many(calls)
    assert seen["jsonl"] == {here}
    assert here not in seen["synced"] and here not in seen["sqlite"]
    for sink in sinks:
        sink.close()


async def test_a_write_under_way_is_waited_for(tmp_path: Path) -> None:
    """When the writer thread already took a call's records and is still writing them, the
    call's commit waits for that write instead of finding the buffer empty and going on."""
    gate, writing = threading.Event(), threading.Event()

    class Gated(JsonlAuditSink):
        def _write(self, events: list[Event]) -> None:
            writing.set()
            gate.wait(60)
            super()._write(events)

    for fsync in (False, True):  # committed on the loop, and by the writer thread
        gate.clear()
        writing.clear()
        sink = Gated(tmp_path / f"audit-{fsync}.jsonl", flush_interval=3600, fsync=fsync)
        put = sink.recorder("completed")
        assert put is not None
        put(("completed", ToolCall(id="c1", name="echo", arguments={}), 1.0, {}))
        flusher = threading.Thread(target=sink.flush)
        flusher.start()
        writing.wait(30)
        assert not sink._buffer  # the record is in the writer's hands, not yet written
        opener = threading.Timer(0.2, gate.set)
        opener.start()
        with anyio.fail_after(30):
            waiter = sink.committed()  # on the loop: waits for the write under way
            if fsync:
                assert waiter is not None
            if waiter is not None:
                await waiter
        assert [r["call_id"] for r in read_jsonl(sink.path)] == ["c1"]
        opener.join()
        flusher.join()
        sink.close()


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_group_commit_on_either_backend(tmp_path: Path) -> None:
    """On asyncio and on trio, a returned call's records are in both logs."""
    jsonl = JsonlAuditSink(tmp_path / "audit.jsonl", flush_interval=3600)
    sinks = [jsonl, SqliteAuditSink(tmp_path / "audit.sqlite3", flush_interval=3600)]
    executor = Executor([echo], policy=Policy.allow_all(), events=sinks)
    outcome = await executor.execute(ToolCall(id="c1", name="echo", arguments={"text": "hi"}))
    assert outcome.result.is_error is False
    assert [r["type"] for r in read_jsonl(jsonl.path)] == STEPS
    with sqlite3.connect(tmp_path / "audit.sqlite3") as db:
        kinds = [k for (k,) in db.execute("SELECT type FROM events ORDER BY id")]
    db.close()
    assert kinds == STEPS
    for sink in sinks:
        sink.close()
