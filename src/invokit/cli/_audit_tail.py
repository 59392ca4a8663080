"""The last events of an audit log, read from its end: ``invokit audit --last N`` costs what it
shows, not the size of a log that only grows.

Both logs are read newest first (a JSONL file block by block from its end, the database page
by page down its ids) until the window holds the ``N`` events to show. A line of the narrated
(text) view can need earlier records of its call: the arguments come from ``validated``, an
allowed call's decision from ``decided``. So the window also reaches back to the ``received``
record of every call it shows, and is widened while the narration gives fewer than ``N`` lines.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_BLOCK = 64 * 1024

Render = Callable[[list[dict[str, Any]]], int]
"""How many lines a window of records (oldest first) gives when narrated."""


def lines_from_end(path: Path, block: int = _BLOCK) -> Iterator[str]:
    """The complete lines of ``path``, last first; a torn last line (a writer mid-way) is
    left out. Reads ``block`` bytes at a time from the end; a line longer than a block is
    joined once, from its pieces (linear in its length)."""
    with open(path, "rb") as file:
        position = file.seek(0, os.SEEK_END)
        pieces: list[bytes] = []  # the end of a line whose start lies further back, last first
        past_end = False  # the text after the file's last newline has been dropped
        while position > 0:
            size = min(block, position)
            position -= size
            file.seek(position)
            chunk = file.read(size)
            parts = chunk.split(b"\n")
            if len(parts) == 1:  # no newline: all of it belongs to the line being read
                pieces.append(chunk)
                continue
            pieces.append(parts[-1])
            if past_end:
                yield b"".join(reversed(pieces)).decode("utf-8", errors="replace")
            past_end = True  # after the last newline: nothing, or a torn line
            for part in reversed(parts[1:-1]):
                yield part.decode("utf-8", errors="replace")
            pieces = [parts[0]]
        if past_end:
            yield b"".join(reversed(pieces)).decode("utf-8", errors="replace")


def parse_record(line: str) -> dict[str, Any] | None:
    """One line of a JSONL log as its record; ``None`` for a line that is not a JSON object."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def records_from_end(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON records of a JSONL log, newest first (lines that are not objects skipped)."""
    for line in lines_from_end(path):
        record = parse_record(line)
        if record is not None:
            yield record


def _may_show(record: dict[str, Any]) -> bool:
    """Whether the narrated view can give ``record`` a line of its own."""
    kind = record.get("type")
    if kind in ("received", "validated"):
        return False
    if kind == "decided":
        data = record.get("data")
        return not (isinstance(data, dict) and data.get("verdict") == "allow")
    return True


def window(
    newest_first: Iterator[dict[str, Any]], last: int, render: Render | None = None
) -> list[dict[str, Any]]:
    """The records, oldest first, that show the ``last`` newest lines.

    Without ``render`` every record is a line (the JSON view): the ``last`` newest records.
    With it, records are taken until the window holds ``last`` records that may show and the
    ``received`` record of each of their calls, and then while ``render`` gives fewer than
    ``last`` lines (a denied call's failure is not shown again, for instance). ``last`` of 0
    or less takes everything.
    """
    taken: list[dict[str, Any]] = []
    if last <= 0:
        taken.extend(newest_first)
        taken.reverse()
        return taken
    if render is None:
        for record in newest_first:
            taken.append(record)
            if len(taken) >= last:
                break
        taken.reverse()
        return taken
    wanted = last
    patience = 50 * last + 5_000  # past this many records, a call whose start never came is
    # shown without its arguments rather than the whole log read for it
    showing = 0
    unopened: set[str] = set()  # calls shown in the window whose start is not in it yet
    for record in newest_first:
        taken.append(record)
        call = str(record.get("call_id"))
        if record.get("type") == "received":
            unopened.discard(call)
        elif _may_show(record):
            showing += 1
            unopened.add(call)
        if showing >= wanted and (not unopened or len(taken) > patience):
            oldest_first = taken[::-1]
            if render(oldest_first) >= last:
                return oldest_first
            wanted += last  # some records gave no line: reach further back
    taken.reverse()
    return taken
