"""An append-only JSON Lines audit log: one event per line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from invokit._state import store_file
from invokit.execution._audit_buffer import DURABLE_EVENTS, BufferedSink
from invokit.execution._audit_encoding import encode_event, encode_record, jsonable, unencodable
from invokit.execution._events import Event, text_field

DEFAULT_FILE = "audit.jsonl"


def event_record(event: Event) -> dict[str, Any]:
    """The JSON form an audit log stores for one event."""
    return jsonable(event.to_dict())  # type: ignore[no-any-return]


class JsonlAuditSink(BufferedSink):
    """Appends each event as one JSON object per line to a private (0600) file.

    Each batch is one ``write`` to a file opened with ``O_APPEND``, so several processes may
    share a log and ``tail -f`` (or ``invokit audit --follow``) sees whole lines.

    Args:
        path: the log file; ``None`` is ``audit.jsonl`` in the user's state directory.
        forbidden_roots: directories tools may write; a log inside one is refused.
        types: the event types to log; ``None`` logs all.
        flush_interval: seconds between background writes: the longest an event not in
            ``durable`` waits before it is written.
        max_buffer: this many waiting events trigger an early write.
        durable: the event types written before the executor goes on (by default the
            approval decisions, :data:`DURABLE_EVENTS`); every type (``ALL_EVENT_TYPES``) makes every
            record durable at the cost of one write per event.
        group_commit: a call's outcome is returned only once its records are written, so a
            caller never holds a result whose record a crash (``kill -9``) could lose.
        fsync: also ``fsync`` the file after each batch, so a written batch survives power loss too (slower:
            one disk flush per batch).

    Raises:
        ValueError: ``path`` is inside one of ``forbidden_roots``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        forbidden_roots: Iterable[str | os.PathLike[str]] = (),
        types: Iterable[str] | None = None,
        flush_interval: float = 0.05,
        max_buffer: int = 256,
        durable: Iterable[str] = DURABLE_EVENTS,
        group_commit: bool = True,
        fsync: bool = False,
    ) -> None:
        self.path = store_file(path, DEFAULT_FILE, forbidden_roots, "the audit log")
        self.fsync = fsync
        # One O_APPEND write to the page cache is quicker than a trip to the writer thread and
        # back; an fsync is not, and stays on the writer thread.
        self._commit_on_loop = not fsync
        super().__init__(
            types=types,
            flush_interval=flush_interval,
            max_buffer=max_buffer,
            durable=durable,
            group_commit=group_commit,
        )

    def _write(self, events: list[Event]) -> None:
        data = b"\n".join([_encoded(e) for e in events]) + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            while data:
                written = os.write(fd, data)
                data = data[written:]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def records(self, call_id: str | None = None) -> list[dict[str, Any]]:
        """Flush, then read the log back (only ``call_id``'s events when given)."""
        self.flush()
        return [r for r in read_jsonl(self.path) if call_id is None or r.get("call_id") == call_id]

    def __repr__(self) -> str:
        return f"JsonlAuditSink({str(self.path)!r})"


def _encoded(event: Event) -> bytes:
    """One line of the log; an event that cannot be written (a cycle, runaway nesting) becomes
    a line that says so, and the rest of its batch is still written."""
    try:
        return encode_event(event)
    except Exception as exc:
        return encode_record(
            {
                "type": text_field(event.type),
                "call_id": text_field(event.call_id),
                "tool": text_field(event.tool),
                "time": event.time if type(event.time) is float else None,
                "session_id": text_field(event.session_id),
                "data": unencodable(exc),
            }
        )


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The records of a JSONL audit log, skipping a torn last line."""
    with open(path, encoding="utf-8") as file:
        for line in file:
            if not line.endswith("\n"):
                return
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue
