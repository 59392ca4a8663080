"""The JSON Lines audit log: buffered emits, background writes, whole lines, private file."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from invokit.execution._audit_jsonl import JsonlAuditSink, read_jsonl
from invokit.execution._events import Event, EventSink
from invokit.permissions import FileWrite


def event(call_id: str = "c1", type_: str = "received", **data: object) -> Event:
    """An event of one call at the current time."""
    return Event(type=type_, call_id=call_id, tool="fs.write", time=time.time(), data=dict(data))  # type: ignore[arg-type]


def wait_for(condition: object, timeout: float = 30.0) -> None:
    """Poll ``condition()`` until it is true or the timeout passes."""
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_is_an_event_sink(tmp_path: Path) -> None:
    """The sink satisfies the executor's EventSink protocol."""
    with JsonlAuditSink(tmp_path / "a.jsonl") as sink:
        assert isinstance(sink, EventSink)
        assert sink.types is None


def test_flush_writes_one_object_per_line(tmp_path: Path) -> None:
    """After flush each event is one JSON line with its call, tool, time, type and data."""
    sink = JsonlAuditSink(tmp_path / "logs" / "audit.jsonl", flush_interval=60)
    first = event("c1", "approval_resolved", id="a1", approved=True, by="ana", scope="once")
    second = event("c2", "completed", is_error=False, arguments={"path": "a"})
    sink.emit(first)
    sink.emit(second)
    sink.flush()
    lines = sink.path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [first.to_dict(), second.to_dict()]
    assert json.loads(lines[0])["data"]["by"] == "ana"
    assert sink.records("c2")[0]["data"] == {"is_error": False, "arguments": {"path": "a"}}
    sink.close()


def test_file_is_private(tmp_path: Path) -> None:
    """The log file is created 0600 in a 0700 directory."""
    sink = JsonlAuditSink(tmp_path / "new" / "audit.jsonl")
    assert stat.S_IMODE(os.stat(sink.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o700
    sink.close()


def test_background_thread_writes(tmp_path: Path) -> None:
    """Without flush, buffered events reach the file within the flush interval."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl", flush_interval=0.05)
    sink.emit(event())
    wait_for(lambda: sink.path.read_text().count("\n") == 1)
    sink.close()


def test_full_buffer_wakes_writer(tmp_path: Path) -> None:
    """Passing max_buffer writes early, long before the flush interval."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl", flush_interval=60, max_buffer=10)
    for n in range(10):
        sink.emit(event(f"c{n}"))
    wait_for(lambda: sink.path.read_text().count("\n") == 10)
    sink.close()


def test_close_writes_the_rest_and_stops(tmp_path: Path) -> None:
    """Close writes what is buffered; later emits are dropped; closing twice is fine."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl", flush_interval=60)
    sink.emit(event())
    sink.close()
    sink.emit(event("late"))
    sink.close()
    assert [r["call_id"] for r in read_jsonl(sink.path)] == ["c1"]


def test_types_filter(tmp_path: Path) -> None:
    """A sink made for some event types keeps only those."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl", types=["completed"])
    sink.emit(event(type_="received"))
    sink.emit(event(type_="completed"))
    assert [r["type"] for r in sink.records()] == ["completed"]
    assert sink.types == frozenset({"completed"})
    sink.close()


def test_values_are_made_json_safe(tmp_path: Path) -> None:
    """Requests, sets, bytes and odd objects are written; credentials never are."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl")
    sink.emit(
        event(
            requests=[FileWrite(path="a")],
            tags={"b", "a"},
            blob=b"\x00\x01",
            thing=object,
            decision={"approved": True, "credentials": {"token": "secret"}},
        )
    )
    (record,) = sink.records()
    data = record["data"]
    assert data["requests"] == [{"kind": "file_write", "path": "a"}]
    assert data["tags"] == ["a", "b"]
    assert data["blob"] == "AAE="
    assert data["thing"] == repr(object)
    assert data["decision"] == {"approved": True, "credentials": "[redacted]"}
    assert "secret" not in sink.path.read_text()
    sink.close()


def test_concurrent_writers_keep_lines_whole(tmp_path: Path) -> None:
    """Two sinks appending to one file from two threads leave only whole, valid lines."""
    path = tmp_path / "shared.jsonl"
    sinks = [JsonlAuditSink(path, flush_interval=0.01, max_buffer=7) for _ in range(2)]

    def produce(sink: JsonlAuditSink, name: str) -> None:
        for n in range(500):
            sink.emit(event(f"{name}-{n}", note="x" * 200))

    threads = [threading.Thread(target=produce, args=(s, str(i))) for i, s in enumerate(sinks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sink in sinks:
        sink.close()
    ids = [json.loads(line)["call_id"] for line in path.read_text().splitlines()]
    assert len(ids) == 1000
    assert len(set(ids)) == 1000


def test_emit_is_cheap(tmp_path: Path) -> None:
    """Emitting does no I/O: ten thousand emits leave the file unwritten until the sink
    flushes (how fast they are: bench_executor.py)."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl", flush_interval=60, max_buffer=1_000_000)
    events = [event(f"c{n}") for n in range(10_000)]
    for item in events:
        sink.emit(item)
    assert not sink.path.exists() or sink.path.stat().st_size == 0
    sink.close()
    assert sink.path.read_text().count("\n") == 10_000


def test_io_failure_warns(tmp_path: Path) -> None:
    """A write that fails is a warning, never an exception into the executor."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl", flush_interval=60)
    sink.path.unlink()
    sink.path.mkdir()
    sink.emit(event())
    with pytest.warns(RuntimeWarning, match="could not write 1 event"):
        sink.flush()
    sink.close()


def test_refuses_tool_roots(tmp_path: Path) -> None:
    """The log cannot live where a tool may write."""
    with pytest.raises(ValueError, match="tools may write"):
        JsonlAuditSink(tmp_path / "root" / "audit.jsonl", forbidden_roots=[tmp_path / "root"])


def test_default_path_in_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a path the log is `audit.jsonl` in the user's state directory."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path))
    sink = JsonlAuditSink()
    assert sink.path == tmp_path / "audit.jsonl"
    assert repr(sink) == f"JsonlAuditSink({str(tmp_path / 'audit.jsonl')!r})"
    sink.close()


def test_reader_skips_torn_last_line(tmp_path: Path) -> None:
    """A reader tailing the log ignores a last line that is still being written."""
    path = tmp_path / "a.jsonl"
    path.write_text('{"call_id": "c1"}\n{"call_id": "c')
    assert [r["call_id"] for r in read_jsonl(path)] == ["c1"]


def test_plain_records_read_back_as_written(tmp_path: Path) -> None:
    """The fast serializer writes what the careful walk would: text, numbers, nesting."""
    from invokit.execution._audit_encoding import encode_event, encode_record, jsonable

    completed = event(
        type_="completed",
        arguments={"city": "Málaga ☀", "days": 3, "ratio": 0.1, "nested": [1, {"a": None}]},
        is_error=False,
        duration=1.5e-05,
    )
    record = completed.to_dict()
    expected = json.loads(json.dumps(jsonable(record)))
    assert json.loads(encode_record(record)) == expected
    assert json.loads(encode_event(completed)) == expected


def test_secrets_and_broken_text_take_the_careful_path(tmp_path: Path) -> None:
    """Credentials nested in plain data are redacted; a lone surrogate is escaped, not lost."""
    sink = JsonlAuditSink(tmp_path / "a.jsonl")
    sink.emit(event("c1", arguments={"credentials": {"token": "secret"}, "x": 1}))
    sink.emit(event("c2", text="half a pair: \ud800"))
    one, two = sink.records()
    assert one["data"]["arguments"] == {"credentials": "[redacted]", "x": 1}
    assert two["data"]["text"] == "half a pair: \ud800"
    assert "secret" not in sink.path.read_text()
    sink.close()


def test_what_json_cannot_hold_takes_the_careful_path(tmp_path: Path) -> None:
    """Nested objects are written through their to_dict (which may mask secrets), sets sorted,
    NaN as NaN, keys as JSON names them, whichever path a record takes."""
    from invokit.execution._audit_encoding import dumps_record

    class ApiKey:
        def to_dict(self) -> dict[str, str]:
            return {"value": "***"}

    sink = JsonlAuditSink(tmp_path / "a.jsonl")
    data = {
        "arguments": {"key": {"inner": ApiKey()}, "tags": {"c", "a", "b"}},
        "ratio": float("nan"),
        "keys": {None: 1, True: 2},
    }
    sink.emit(Event(type="received", call_id="c1", tool="t", time=1.0, data=data))
    sink.flush()
    text = sink.path.read_text()
    assert '"value":"***"' in text and "ApiKey" not in text
    assert '"tags":["a","b","c"]' in text
    assert '"ratio":NaN' in text
    assert '"keys":{"null":1,"true":2}' in text
    assert dumps_record(data) == text.strip()[text.index('"data":') + 7 : -1]
    sink.close()


@pytest.mark.anyio
async def test_a_malformed_call_name_never_reaches_the_log(tmp_path: Path) -> None:
    """A call whose name is an object (as parsed from a model's output) fails as not_found;
    neither the log nor the message holds more than the name's type."""
    from invokit import Executor, ToolCall

    sink = JsonlAuditSink(tmp_path / "a.jsonl")
    call = ToolCall.from_json('{"id": "c1", "name": {"credentials": {"token": "s3cret"}}}')
    outcome = await Executor([], events=[sink]).execute(call)
    assert outcome.result.error is not None and outcome.result.error.kind == "not_found"
    assert "s3cret" not in outcome.result.text
    sink.flush()
    text = sink.path.read_text()
    assert "s3cret" not in text and '"tool":"<dict>"' in text
    sink.close()


def test_an_event_that_cannot_be_written_does_not_lose_its_batch(tmp_path: Path) -> None:
    """A cyclic value makes one line that says so; the other events of the batch are written."""
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    sink = JsonlAuditSink(tmp_path / "a.jsonl")
    sink.emit(event("c1"))
    sink.emit(event("c2", arguments=cyclic))
    sink.emit(event("c3"))
    records = sink.records()
    assert [r["call_id"] for r in records] == ["c1", "c2", "c3"]
    assert "unencodable" in records[1]["data"]
    sink.close()
