"""``invokit audit [--follow]``: read the audit log that ``serve`` and ``call`` write."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from invokit.cli._audit_tail import parse_record, records_from_end, window
from invokit.cli._livelog import Line, Narrator, inert
from invokit.cli._options import StateOption
from invokit.cli._output import reported, stdout
from invokit.cli._stores import State, audit_file, command_state, open_audit


def audit_path() -> Path:
    """The JSONL audit log in the user's state directory."""
    from invokit._state import state_dir
    from invokit.execution.internal import AUDIT_FILE

    return state_dir() / AUDIT_FILE


def _records(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.endswith("\n"):
            return  # a torn last line: a writer is mid-way
        record = parse_record(line)
        if record is not None:
            yield record


def follow(
    path: Path, *, poll: float = 0.2, start_at_end: bool = False
) -> Iterator[dict[str, Any]]:
    """Records of ``path`` as they are appended, forever (waits for the file to appear)."""
    position = 0
    if start_at_end and path.exists():
        position = path.stat().st_size
    pending = ""
    while True:
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            time.sleep(poll)
            continue
        if size < position:
            position = 0  # the log was rotated or truncated: start again
        if size > position:
            with open(path, encoding="utf-8") as file:
                file.seek(position)
                chunk = file.read()
                position = file.tell()
            pending += chunk
            *complete, pending = pending.split("\n")
            yield from _records(line + "\n" for line in complete)
        else:
            time.sleep(poll)


def _wanted(record: dict[str, Any], call_id: str | None, tool: str | None) -> bool:
    return (call_id is None or record.get("call_id") == call_id) and (
        tool is None or record.get("tool") == tool
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def audit(
        follow_: Annotated[
            bool, typer.Option("--follow", "-f", help="Keep printing new events (Ctrl-C stops).")
        ] = False,
        call_id: Annotated[
            Optional[str], typer.Option("--call", help="Only this call's events.")  # noqa: UP045
        ] = None,
        tool: Annotated[
            Optional[str], typer.Option("--tool", help="Only this tool's events.")  # noqa: UP045
        ] = None,
        last: Annotated[int, typer.Option("--last", "-n", help="Show the last N events.")] = 50,
        state: StateOption = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="One JSON object per line (JSON Lines).")
        ] = False,
    ) -> None:
        """Show the audit log: every call, its decision, approvals and results."""
        console = stdout()
        narrator = Narrator()

        def line(record: dict[str, Any]) -> str | Text | Line | None:
            if as_json:
                # ASCII JSON: no control, C1 or bidi character a model wrote reaches the terminal.
                return json.dumps(record, sort_keys=True, ensure_ascii=True)
            if _died(record):
                return _died_line(record)
            return narrator.line(record)

        with reported(as_json=as_json):
            chosen = command_state(state)
        if chosen.kind == "postgresql":
            with reported(as_json=as_json):
                _database_log(chosen, line, console, call_id, tool, last, follow_, as_json)
            return
        path = audit_file(chosen) if chosen.directory is not None else audit_path()
        records: list[dict[str, Any]] = []
        if path.exists():
            newest_first = (r for r in records_from_end(path) if _wanted(r, call_id, tool))
            records = window(newest_first, last, None if as_json else _narrated_count)
        lines = [text for text in map(line, records) if text is not None]
        for text in lines[-last:] if last > 0 else lines:
            _print(console, text)
        if not follow_:
            if not records and not as_json:
                console.print(inert(f"No events in {path} yet."))
            return
        try:
            for record in follow(path, start_at_end=True):
                shown = line(record) if _wanted(record, call_id, tool) else None
                if shown is not None:
                    _print(console, shown)
        except KeyboardInterrupt:
            return


def _print(console: Console, shown: str | Text | Line) -> None:
    if isinstance(shown, str):
        print(shown, flush=True)  # JSON Lines: plain, unwrapped
    else:
        console.print(shown)


def _died(record: dict[str, Any]) -> bool:
    data = record.get("data")
    return (
        record.get("type") == "interrupted"
        and isinstance(data, dict)
        and data.get("reason") == "replica died"
    )


def _died_line(record: dict[str, Any]) -> Text:
    """A call that was running on a replica that died: it may have done part of its work."""
    data = record.get("data") or {}
    text = Text("interrupted: replica died  ", style="bold red")
    text.append_text(inert(f"{record.get('tool')} (call {record.get('call_id')}, replica "))
    text.append_text(
        inert(f"{data.get('replica')}); it may have run in part, and nothing re-ran it")
    )
    return text


def _database_log(
    state: State,
    line: Callable[[dict[str, Any]], str | Text | Line | None],
    console: Console,
    call_id: str | None,
    tool: str | None,
    last: int,
    follow_: bool,
    as_json: bool,
) -> None:
    """The audit log of a PostgreSQL state, with the calls whose replica died. The last
    events are read down the table's ids a page at a time; ``--follow`` then asks only for
    events after the newest one seen."""
    import anyio

    from invokit.cli._journal import died_calls

    assert state.url is not None
    sink: Any = open_audit(state)
    try:
        records = window(
            _pages_down(sink, call_id, tool), last, None if as_json else _narrated_count
        )
        newest = max((int(r["id"]) for r in records), default=None)
        oldest = min((float(r.get("time") or 0.0) for r in records), default=None)

        def died(after: float | None) -> list[dict[str, Any]]:
            found = anyio.run(died_calls, state.url or "")
            return [
                r
                for r in found
                if _wanted(r, call_id, tool)
                and (after is None or float(r.get("time") or 0.0) >= after)
            ]

        seen_died = {_key(r) for r in died(None)}
        # The died calls the window covers (all of them when the window is the whole log).
        covered = died(oldest if last > 0 and len(records) >= last else None)
        records = sorted(records + covered, key=lambda r: float(r.get("time") or 0.0))
        lines = [text for text in map(line, records) if text is not None]
        for text in lines[-last:] if last > 0 else lines:
            _print(console, text)
        if not follow_:
            if not records and not as_json:
                console.print(inert(f"No events in {state.shown()} yet."))
            return
        try:
            while True:
                time.sleep(0.5)
                fresh = sink.records(call_id, tool=tool, after=newest)
                if fresh:
                    newest = int(fresh[-1]["id"])
                for record in died(None):
                    key = _key(record)
                    if key not in seen_died:
                        seen_died.add(key)
                        fresh.append(record)
                for record in sorted(fresh, key=lambda r: float(r.get("time") or 0.0)):
                    shown = line(record)
                    if shown is not None:
                        _print(console, shown)
        except KeyboardInterrupt:
            return
    finally:
        sink.close()


def _pages_down(
    sink: Any, call_id: str | None, tool: str | None, page: int = 500
) -> Iterator[dict[str, Any]]:
    """The database's events, newest first, read ``page`` rows at a time."""
    before: int | None = None
    while True:
        rows = sink.records(call_id, tool=tool, before=before, limit=page, newest_first=True)
        yield from rows
        if len(rows) < page:
            return
        before = int(rows[-1]["id"])


def _narrated_count(records: list[dict[str, Any]]) -> int:
    """How many lines the text view gives for ``records`` (oldest first)."""
    narrator = Narrator()
    return sum(1 for record in records if _died(record) or narrator.line(record) is not None)


def _key(record: dict[str, Any]) -> str:
    return json.dumps(
        [
            record.get("id"),
            record.get("type"),
            record.get("call_id"),
            record.get("time"),
            (record.get("data") or {}).get("execution"),
        ],
        default=str,
    )
