"""The Python search engine's matching process: Python ``re``, outside the server process.

Python's ``re`` backtracks, and a match runs while holding the interpreter lock: a pattern such as
``(a|a)*b`` against one long line would freeze every task of the process for minutes, and no
timeout could fire. So the server never runs a model's pattern itself. It starts this script
(``python -I -S``, standard library only) and streams it the files it opened through the jail;
the script matches line by line and prints the best matches. The tool's timeout or cancellation
kills it. This is also the only place the model's pattern is compiled with ``re``: compiling can
cost seconds of CPU too (thousands of case-insensitive Unicode classes), and a compile in the
server could not be interrupted.

Protocol (stdin): one JSON line ``{"pattern", "ignore_case", "max_results"}``, then per file a
frame ``<u32 length><path UTF-8>`` followed by content frames ``<u32 length><bytes>`` ending with a
zero-length frame. Output (stdout): one JSON object, ``{"matches": [[path, line, text], ...],
"total": n}`` or ``{"error": message}`` when the pattern does not compile.

Each line is matched on its first :data:`MAX_LINE_BYTES` bytes; the rules for what counts as a
line and which lines are shown are those of :mod:`._search`.
"""

from __future__ import annotations

import heapq
import json
import re
import struct
import sys
import warnings
from typing import BinaryIO

MAX_LINE_BYTES = 1 << 20
"""The part of a very long line that is matched (memory stays bounded whatever the file)."""
MAX_LINE_CHARS = 500
"""Longest line text returned (as in ``_search``)."""

_HEADER = struct.Struct(">I")


def main(source: BinaryIO, sink: BinaryIO) -> int:
    """Run one search: read the query and the files from ``source``, write the result."""
    query = json.loads(source.readline())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flags = re.IGNORECASE if query["ignore_case"] else 0
            regex = re.compile(query["pattern"], flags)
    except (re.error, ValueError) as error:  # ValueError: (?L) on text
        sink.write(json.dumps({"error": str(error)}).encode())
        return 0
    except (RecursionError, OverflowError, MemoryError) as error:
        # Nested too deeply (hundreds of groups), or a repeat count or expression too large.
        reason = "nested too deeply" if isinstance(error, RecursionError) else "too large"
        sink.write(json.dumps({"error": f"the expression is {reason}"}).encode())
        return 0
    limit = int(query["max_results"])
    heap: list[tuple[tuple[str, int], tuple[str, int, str]]] = []
    total = 0
    while True:
        path_bytes = _frame(source)
        if path_bytes is None:
            break
        path = path_bytes.decode("utf-8", "surrogateescape")
        for number, line in _LineStream(source):
            text = line.decode("utf-8", "surrogateescape")
            if regex.search(text) is None:
                continue
            shown = _shown(line)
            if shown is None:
                continue
            total += 1
            key = (path, number)
            item = (_Reverse(key), (path, number, shown))
            if len(heap) < limit:
                heapq.heappush(heap, item)  # type: ignore[misc]
            elif key < heap[0][0].key:  # type: ignore[attr-defined]
                heapq.heapreplace(heap, item)  # type: ignore[misc]
    matches = sorted((entry for _, entry in heap), key=lambda entry: (entry[0], entry[1]))
    sink.write(json.dumps({"matches": matches, "total": total}).encode())
    return 0


class _Reverse:
    """Orders keys in reverse, so a min-heap keeps the largest on top."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[str, int]) -> None:
        self.key = key

    def __lt__(self, other: _Reverse) -> bool:
        return self.key > other.key


def _frame(source: BinaryIO) -> bytes | None:
    """The next frame's bytes; ``None`` at the end of the input."""
    header = source.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = source.read(size)
    return data if len(data) == size else None


class _LineStream:
    """The lines of one file's content frames (each cut to :data:`MAX_LINE_BYTES`)."""

    def __init__(self, source: BinaryIO) -> None:
        self.source = source

    def __iter__(self) -> _LineStream:
        self.pending = b""
        self.overlong = False
        self.number = 0
        self.ready: list[bytes] = []
        self.done = False
        return self

    def __next__(self) -> tuple[int, bytes]:
        while not self.ready:
            if self.done:
                raise StopIteration
            self._fill()
        self.number += 1
        return self.number, self.ready.pop()

    def _fill(self) -> None:
        chunk = _frame(self.source)
        if not chunk:
            self.done = True
            if self.pending or self.overlong:
                self.ready.append(self.pending)
            self.pending, self.overlong = b"", False
            return
        parts = chunk.split(b"\n")
        lines: list[bytes] = []
        for part in parts[:-1]:
            lines.append(self._add(part))
            self.pending, self.overlong = b"", False
        self._add(parts[-1])
        self.ready = lines[::-1]

    def _add(self, part: bytes) -> bytes:
        room = MAX_LINE_BYTES - len(self.pending)
        if len(part) > room:
            self.overlong = True
            part = part[: max(room, 0)]
        self.pending += part
        return self.pending


def _shown(line: bytes) -> str | None:
    """The text shown for a matching line; ``None`` for binary content (NUL, invalid UTF-8)."""
    if b"\x00" in line:
        return None
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removesuffix("\r")
    return text[:MAX_LINE_CHARS] + "…" if len(text) > MAX_LINE_CHARS else text


if __name__ == "__main__":
    sys.exit(main(sys.stdin.buffer, sys.stdout.buffer))
