"""The read-only operations: read a file, list a directory, match a glob, stat an entry.

Blocking functions over a :class:`~._jail.Jail`; the tools run them in worker threads.
"""

from __future__ import annotations

import base64
import codecs
import io
import json
import os
import stat
from datetime import UTC, datetime

from invokit.builtin.filesystem._globbing import compile_glob
from invokit.builtin.filesystem._jail import Jail, entry_kind, os_errors
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.builtin.filesystem._results import (
    FileContent,
    FileStat,
    GlobMatch,
    GlobResult,
    Listing,
    ListingEntry,
)
from invokit.builtin.filesystem._walk import VCS_DIRS, walk
from invokit.exceptions import RetryWithFeedback, ToolFailed

__all__ = ["RESULT_OVERHEAD_CHARS", "glob_paths", "list_directory", "read_file", "stat_entry"]

_SKIP_CHUNK = 1 << 20
_CHAR_BYTES = 4
"""The most bytes one UTF-8 character takes: read past a page's byte cap so a character that
straddles it can be kept whole."""
RESULT_OVERHEAD_CHARS = 300
"""Room kept for the result's other fields (numbers, flags, keys) beside the path and content."""


INLINE_READ_BYTES = 64 * 1024
"""A regular file up to this size is read on the event loop: the read takes microseconds,
less than handing it to a worker thread and back."""


def small_file(jail: Jail, path: object) -> bool:
    """Whether ``path`` names a regular file of at most :data:`INLINE_READ_BYTES`. A hint
    only, for where to read: ``read_file`` checks the path in the jail itself and never reads
    more than its ``max_bytes``."""
    if type(path) is not str or "\x00" in path:
        return False
    try:
        status = os.stat(os.path.join(jail.root, path), follow_symlinks=False)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(status.st_mode) and status.st_size <= INLINE_READ_BYTES


def read_file(
    jail: Jail,
    path: str,
    *,
    offset: int = 1,
    column: int = 1,
    limit: int | None = None,
    max_bytes: int,
    max_chars: int | None = None,
    binary: bool = False,
) -> FileContent:
    """Read lines ``offset`` … ``offset + limit - 1`` of a text file, at most ``max_bytes`` of them,
    the first from character ``column`` (1-based) on.

    With ``max_chars``, the result as JSON (what the executor's output limit measures: quotes,
    backslashes and line breaks escaped) fits in that many characters: fewer whole lines are
    returned, with ``truncated`` and ``next_offset`` saying where to continue, so the output
    limit never cuts a page the result calls complete. A line longer than a page is cut inside
    (never inside a UTF-8 character); ``next_offset`` then names that line and ``next_column``
    the character to go on from, so following them yields every character exactly once.
    Columns count characters as the page shows them (an invalid UTF-8 sequence is one U+FFFD).

    Raises:
        RetryWithFeedback: the file holds NUL bytes and ``binary`` was not asked for, or the
            offset or column is past the end.
    """
    parts = split_relative(path)
    shown = display(parts)
    budget = None
    if max_chars is not None:
        budget = max(1, max_chars - RESULT_OVERHEAD_CHARS - _json_size(shown))
        if binary:  # base64 takes 4 characters for every 3 bytes
            max_bytes = max(1, min(max_bytes, budget // 4 * 3))
    fd, status = jail.open_file(parts)
    with os_errors(shown), open(fd, "rb") as handle:
        if binary:
            if offset != 1 or column != 1 or limit is not None:
                raise RetryWithFeedback(
                    "offset, column and limit count text; leave them out with binary"
                )
            data = handle.read(max_bytes)
            return FileContent(
                path=shown,
                content=base64.b64encode(data).decode("ascii"),
                encoding="base64",
                start_line=1,
                end_line=1,
                total_lines=None,
                truncated=status.st_size > len(data),
                next_offset=None,
                size=status.st_size,
            )
        head, skipped, partial = _skip_lines(handle, offset - 1)
        if skipped < offset - 1 or (offset > 1 and not head and not handle.peek(1)):
            lines = skipped + partial
            raise RetryWithFeedback(
                f"offset {offset} is past the end of {shown!r}, which has {_lines(lines)}",
                data={"path": shown, "lines": lines},
            )
        if column > 1:
            head, length = _skip_chars(handle, head, column - 1)
            if length < column - 1:
                raise RetryWithFeedback(
                    f"column {column} is past the end of line {offset} of {shown!r}, which has "
                    f"{length} characters",
                    data={"path": shown, "line": offset, "characters": length},
                )
        want = max(min(status.st_size, max_bytes) + _CHAR_BYTES - len(head), 0)
        data = head[: max_bytes + _CHAR_BYTES] + handle.read(want)
        at_end = not handle.peek(1) if len(data) <= max_bytes else False
    if b"\x00" in data:
        raise RetryWithFeedback(
            f"{shown!r} looks binary (it holds NUL bytes); pass binary=true to get it as base64",
            data={"path": shown},
        )
    truncated = len(data) > max_bytes
    if truncated:
        cut = data.rfind(b"\n", 0, max_bytes)
        # Whole lines only, unless one line is longer than the cap: then whole characters.
        data = data[: cut + 1] if cut >= 0 else data[: _char_boundary(data, max_bytes)]
    if limit is not None:
        data, more_in_data = _first_lines(data, limit)
        if more_in_data:
            truncated, at_end = False, False
    text = data.decode("utf-8", "replace")
    if budget is not None and len(text) + 2 > budget // 6 and _json_size(text) > budget:
        text = _fit(text, budget)
        truncated, at_end = True, False
    breaks = text.count("\n")
    last = text[text.rfind("\n") + 1 :]  # what follows the last line end: part of a line
    count = breaks + (1 if last or (column > 1 and not breaks) else 0)
    end_line = offset + count - 1
    finished = at_end and not truncated
    next_offset = next_column = None
    if not finished:
        if last:  # the page stopped inside line end_line, which goes on
            next_offset = end_line
            next_column = (column if not breaks else 1) + len(last)
        else:
            next_offset = end_line + 1
    return FileContent(
        path=shown,
        content=text,
        start_line=offset,
        end_line=end_line,
        total_lines=end_line if finished else None,
        truncated=truncated,
        next_offset=next_offset,
        next_column=next_column,
        size=status.st_size,
    )


def _lines(count: int) -> str:
    return "1 line" if count == 1 else f"{count} lines"


def _char_boundary(data: bytes, limit: int) -> int:
    """The longest prefix of ``data[:limit]`` that ends between UTF-8 characters (at least one
    character, so a page always moves on, even when ``limit`` is less than a character)."""
    ends: list[int] = [limit, *range(1, min(len(data), _CHAR_BYTES) + 1)]
    for end in ends:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        decoder.decode(data[:end])
        pending: bytes = decoder.getstate()[0]  # the start of a character cut at ``end``
        cut = min(end, len(data)) - len(pending)
        if cut > 0:
            return cut
    return len(data)


def _json_size(text: str) -> int:
    """Characters ``text`` takes in the JSON the model reads (quotes and escapes included)."""
    return len(json.dumps(text, ensure_ascii=False))


def _fit(text: str, budget: int) -> str:
    """The whole lines at the start of ``text`` that fit in ``budget`` JSON characters; the
    start of the first line when not even that one fits."""
    kept = 2  # the quotes
    end = 0
    while end < len(text):
        stop = text.find("\n", end)
        stop = len(text) if stop < 0 else stop + 1
        size = _json_size(text[end:stop]) - 2
        if kept + size > budget:
            break
        kept += size
        end = stop
    if end:
        return text[:end]
    line = text[: text.find("\n") + 1 or len(text)]
    low, high = 0, min(len(line), budget)
    while low < high:  # the longest prefix of the first line that fits
        middle = (low + high + 1) // 2
        if _json_size(line[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return line[: max(low, 1)]  # at least one character, so a page always moves on


def _skip_lines(handle: io.BufferedReader, count: int) -> tuple[bytes, int, bool]:
    """Consume ``count`` lines; return the bytes read past them, how many were skipped and,
    when the file ended first, whether it ended inside a line (one more, with no line end)."""
    skipped = 0
    last = b""
    while skipped < count:
        chunk = handle.read(_SKIP_CHUNK)
        if not chunk:
            return b"", skipped, last[-1:] not in (b"", b"\n")
        last = chunk
        found = chunk.count(b"\n")
        if skipped + found < count:
            skipped += found
            continue
        position = -1
        for _ in range(count - skipped):
            position = chunk.index(b"\n", position + 1)
        return chunk[position + 1 :], count, False
    return b"", skipped, False


def _skip_chars(handle: io.BufferedReader, head: bytes, count: int) -> tuple[bytes, int]:
    """Consume ``count`` characters of the current line, ``head`` being its first bytes; return
    what follows them and how many were skipped (fewer when the line ends first).

    Characters are counted as a page shows them: an invalid UTF-8 sequence is one U+FFFD, and
    the rest of the chunk it was decoded with comes back re-encoded, so it reads the same."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    skipped = 0
    chunk = head
    while True:
        if not chunk:
            chunk = handle.read(_SKIP_CHUNK)
        newline = chunk.find(b"\n")
        piece = chunk if newline < 0 else chunk[:newline]
        line_ends = not chunk or newline >= 0
        text = decoder.decode(piece, final=line_ends)
        if skipped + len(text) >= count:
            pending: bytes = decoder.getstate()[0]
            rest = text[count - skipped :].encode("utf-8")
            return rest + pending + chunk[len(piece) :], count
        skipped += len(text)
        if line_ends:
            return b"", skipped
        chunk = b""


def _first_lines(data: bytes, limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` lines of ``data``, and whether anything was left over."""
    position = -1
    for _ in range(limit):
        position = data.find(b"\n", position + 1)
        if position < 0:
            return data, False
    rest = data[position + 1 :]
    return data[: position + 1], bool(rest)


def list_directory(
    jail: Jail, path: str, *, recursive: bool, max_depth: int, max_entries: int
) -> Listing:
    """The entries of a directory, sorted, descending ``max_depth`` levels when recursive."""
    parts = split_relative(path)
    entries: list[ListingEntry] = []
    truncated = False
    with os_errors(display(parts)):
        for found in walk(jail, parts, max_depth=max_depth if recursive else 1):
            if len(entries) == max_entries:
                truncated = True
                break
            size = found.entry.stat(follow_symlinks=False).st_size if found.kind == "file" else None
            entries.append(ListingEntry(path=found.path, type=found.kind, size=size))
    return Listing(path=display(parts), entries=tuple(entries), truncated=truncated)


def glob_paths(
    jail: Jail, pattern: str, path: str, *, max_results: int, include_ignored: bool = False
) -> GlobResult:
    """Every entry below ``path`` whose root-relative path matches ``pattern``, sorted; what the
    ignore files leave out (and ``.git``, ``.hg``, ``.svn``) only with ``include_ignored``."""
    base = split_relative(path)
    if not _is_directory(jail, base):
        raise ToolFailed(f"{display(base)!r} is not a directory", kind="not_a_directory")
    glob = compile_glob(pattern, base)
    matches: list[GlobMatch] = []
    try:
        found_entries = walk(
            jail,
            glob.start,
            max_depth=glob.max_depth,
            ignores=not include_ignored,
            skip=() if include_ignored else VCS_DIRS,
        )
        for found in found_entries:
            if glob.matches(found.path):
                matches.append(GlobMatch(path=found.path, type=found.kind))
    except ToolFailed as error:
        # A literal directory in the pattern that is missing just matches nothing.
        if error.kind not in ("not_found", "not_a_directory"):
            raise
    matches.sort(key=lambda match: match.path)
    return GlobResult(
        pattern=pattern, matches=tuple(matches[:max_results]), truncated=len(matches) > max_results
    )


def _is_directory(jail: Jail, parts: tuple[str, ...]) -> bool:
    return entry_kind(jail.lstat(parts).st_mode) == "directory"


def stat_entry(jail: Jail, path: str) -> FileStat:
    """What the entry at ``path`` is; a final link is described, not followed."""
    parts = split_relative(path)
    status = jail.lstat(parts)
    return FileStat(
        path=display(parts),
        type=entry_kind(status.st_mode),
        size=status.st_size,
        modified=datetime.fromtimestamp(status.st_mtime, UTC).isoformat(),
        mode=oct(status.st_mode & 0o7777),
        links=status.st_nlink,
    )
