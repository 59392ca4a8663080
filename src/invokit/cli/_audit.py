"""``invokit audit [--follow]``: read the audit log that ``serve`` and ``call`` write."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.text import Text

from invokit.cli._livelog import Narrator, inert
from invokit.cli._output import stdout


def audit_path() -> Path:
    """The JSONL audit log in the user's state directory."""
    from invokit._state import state_dir
    from invokit.execution._audit_jsonl import DEFAULT_FILE

    return state_dir() / DEFAULT_FILE


def _records(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.endswith("\n"):
            return  # a torn last line: a writer is mid-way
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
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
        as_json: Annotated[
            bool, typer.Option("--json", help="One JSON object per line (JSON Lines).")
        ] = False,
    ) -> None:
        """Show the audit log: every call, its decision, approvals and results."""
        path = audit_path()
        console = stdout()
        narrator = Narrator()

        def line(record: dict[str, Any]) -> str | Text | None:
            if as_json:
                # ASCII JSON: no control, C1 or bidi character a model wrote reaches the terminal.
                return json.dumps(record, sort_keys=True, ensure_ascii=True)
            return narrator.line(record)

        records: list[dict[str, Any]] = []
        if path.exists():
            with open(path, encoding="utf-8") as file:
                records = [r for r in _records(iter(file)) if _wanted(r, call_id, tool)]
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


def _print(console: Console, shown: str | Text) -> None:
    if isinstance(shown, str):
        print(shown, flush=True)  # JSON Lines: plain, unwrapped
    else:
        console.print(shown)
