"""The operations that change the tree: write, edit, move, delete, make a directory.

Blocking functions over a :class:`~._jail.Jail`; the tools run them in worker threads. Writes
and edits replace files atomically (:mod:`._atomic`); moves and deletes act on directory
entries relative to open parent handles, so they never reach through a link.
"""

from __future__ import annotations

import difflib
import errno
import os
import shutil
import stat

from invokit.builtin.filesystem._atomic import write_atomic
from invokit.builtin.filesystem._cancel import StopSignal
from invokit.builtin.filesystem._jail import Jail, entry_kind, not_found, os_errors
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.builtin.filesystem._results import (
    DeleteResult,
    EditResult,
    MkdirResult,
    MoveResult,
    WriteResult,
)
from invokit.exceptions import RetryWithFeedback, ToolFailed

__all__ = [
    "MAX_DIFF_CHARS",
    "MAX_DIFF_LINES",
    "MAX_EDIT_BYTES",
    "delete_entry",
    "edit_file",
    "make_directory",
    "move_entry",
    "write_file",
]

MAX_EDIT_BYTES = 32 << 20
"""Largest file ``edit`` rewrites, before and after the change."""
MAX_DIFF_LINES = 1000
"""Changed lines (old and new together) above which the diff is not searched for the smallest
change: the changed region is shown as removed, then added (a line-matching diff is quadratic)."""
MAX_DIFF_CHARS = 40_000
"""Longest diff returned; a longer one is cut at a line and says how much was left out. Even
JSON-escaped, it fits the executor's default output limit (100,000 characters), so the model
reads the edit's whole result, counts included, instead of a cut one."""
_CONTEXT = 3


def write_file(
    jail: Jail, path: str, content: str, *, create_parents: bool, stop: StopSignal
) -> WriteResult:
    """Replace (or create) the file at ``path`` with ``content``, atomically."""
    parts = split_relative(path)
    shown = display(parts)
    data = _encode(content, "content")
    try:
        with jail.parent(parts, create=create_parents) as (dir_fd, name):
            existing = _lstat_or_none(dir_fd, name)
            if existing is not None:
                jail.require_content_file(existing, shown)
            mode = stat.S_IMODE(existing.st_mode) if existing is not None else None
            with os_errors(shown):
                write_atomic(dir_fd, name, data, mode=mode, stop=stop)
    except ToolFailed as error:
        if error.kind != "not_found" or create_parents:
            raise
        raise ToolFailed(
            f"{error.message}; pass create_parents=true to make the missing directories",
            kind="not_found",
            data=error.data,
        ) from None
    return WriteResult(path=shown, bytes_written=len(data), created=existing is None)


def edit_file(
    jail: Jail, path: str, old_text: str, new_text: str, *, replace_all: bool, stop: StopSignal
) -> EditResult:
    """Replace ``old_text`` with ``new_text`` in a file; ``old_text`` must be unique unless
    ``replace_all``. Returns the unified diff of the change."""
    parts = split_relative(path)
    shown = display(parts)
    if not old_text:
        raise RetryWithFeedback("old_text is empty; give the exact text to replace")
    if old_text == new_text:
        raise RetryWithFeedback("old_text and new_text are the same; nothing would change")
    with jail.parent(parts) as (dir_fd, name):
        fd, before = jail.open_file_at(dir_fd, name, shown)
        with os_errors(shown), open(fd, "rb") as handle:
            data = handle.read(MAX_EDIT_BYTES + 1)
        if len(data) > MAX_EDIT_BYTES:
            raise ToolFailed(
                f"{shown!r} is larger than {MAX_EDIT_BYTES} bytes; edit refuses it",
                kind="too_large",
                data={"path": shown},
            )
        if b"\x00" in data:
            raise ToolFailed(f"{shown!r} is binary; edit works on text", kind="binary_file")
        # surrogateescape keeps bytes that are not UTF-8 exactly as they were
        text = data.decode("utf-8", "surrogateescape")
        old, new = old_text, new_text
        count = text.count(old)
        if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count = text.count(old)
        if count == 0:
            raise RetryWithFeedback(
                f"old_text was not found in {shown!r}; read the file and copy the text exactly, "
                "including whitespace and indentation",
                data={"path": shown},
            )
        if count > 1 and not replace_all:
            raise RetryWithFeedback(
                f"old_text occurs {count} times in {shown!r}; include more surrounding text to "
                "make it unique, or pass replace_all=true",
                data={"path": shown, "occurrences": count},
            )
        grows = (count if replace_all else 1) * (len(new) - len(old))
        if len(text) + grows > MAX_EDIT_BYTES:
            raise _too_large_result(shown)
        changed = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        current = _lstat_or_none(dir_fd, name)
        if current is None or _version(current) != _version(before):
            raise ToolFailed(
                f"{shown!r} changed while it was being edited; read it again and retry",
                kind="conflict",
                data={"path": shown},
            )
        payload = changed.encode("utf-8", "surrogateescape")
        if len(payload) > MAX_EDIT_BYTES:
            raise _too_large_result(shown)
        with os_errors(shown):
            write_atomic(dir_fd, name, payload, mode=stat.S_IMODE(before.st_mode), stop=stop)
    return EditResult(
        path=shown, replacements=count if replace_all else 1, diff=_diff(shown, text, changed)
    )


def _version(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _too_large_result(shown: str) -> ToolFailed:
    return ToolFailed(
        f"The edit would make {shown!r} larger than {MAX_EDIT_BYTES} bytes; nothing was "
        "written. Replace fewer occurrences or use shorter text.",
        kind="too_large",
        data={"path": shown, "max_bytes": MAX_EDIT_BYTES},
    )


def _diff(shown: str, before: str, after: str) -> str:
    """The unified diff of ``before`` to ``after``, in time linear in their size.

    The lines both share at the start and at the end are skipped first; what is left is
    compared line by line (``difflib``) only when it is small, and otherwise shown whole as
    removed then added. The text is cut at :data:`MAX_DIFF_CHARS`.
    """
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    shortest = min(len(a), len(b))
    lo = 0
    while lo < shortest and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < shortest - lo and a[len(a) - 1 - hi] == b[len(b) - 1 - hi]:
        hi += 1
    start = max(0, lo - _CONTEXT)
    a_seg = a[start : len(a) - hi + min(hi, _CONTEXT)]
    b_seg = b[start : len(b) - hi + min(hi, _CONTEXT)]
    middle = (len(a) - lo - hi) + (len(b) - lo - hi)
    groups: list[list[tuple[str, int, int, int, int]]]
    if middle == 0:
        groups = []
    elif middle <= MAX_DIFF_LINES:
        matcher = difflib.SequenceMatcher(None, a_seg, b_seg, autojunk=False)
        groups = list(matcher.get_grouped_opcodes(_CONTEXT))
    else:
        head, a_end, b_end = lo - start, len(a) - hi - start, len(b) - hi - start
        group = [("equal", 0, head, 0, head)] if head else []
        group.append(("replace", head, a_end, head, b_end))
        if a_end < len(a_seg):
            group.append(("equal", a_end, len(a_seg), b_end, len(b_seg)))
        groups = [group]
    out = _Capped(MAX_DIFF_CHARS)
    if groups:
        out.add(f"--- a/{shown}\n")
        out.add(f"+++ b/{shown}\n")
    for group in groups:
        first, last = group[0], group[-1]
        old_range = _range(first[1] + start, last[2] - first[1])
        new_range = _range(first[3] + start, last[4] - first[3])
        out.add(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.lines(" ", a_seg[i1:i2])
                continue
            out.lines("-", a_seg[i1:i2])
            out.lines("+", b_seg[j1:j2])
    text = out.text()
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _range(start: int, length: int) -> str:
    """A hunk range as ``unified_diff`` writes it."""
    beginning = start + 1
    if length == 1:
        return str(beginning)
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


class _Capped:
    """Collects diff lines up to a number of characters, then counts what it leaves out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.parts: list[str] = []
        self.left_out = 0

    def add(self, line: str) -> None:
        if self.left_out or self.size + len(line) > self.limit:
            self.left_out += 1
            return
        self.parts.append(line)
        self.size += len(line)

    def lines(self, prefix: str, lines: list[str]) -> None:
        for line in lines:
            if self.left_out:
                self.left_out += 1  # counting only: nothing more is kept
                continue
            self.add(prefix + (line if line.endswith("\n") else line + "\n"))

    def text(self) -> str:
        if self.left_out:
            self.parts.append(
                f"[diff cut: {self.left_out} more lines not shown; the edit was made, "
                "read the file to see it]\n"
            )
        return "".join(self.parts)


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise RetryWithFeedback(f"{what} holds characters that are not valid Unicode") from None


def _lstat_or_none(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def move_entry(
    jail: Jail, source: str, destination: str, *, overwrite: bool, create_parents: bool
) -> MoveResult:
    """Rename ``source`` to ``destination`` (both below the root); links are moved, not followed."""
    src_parts, dst_parts = split_relative(source), split_relative(destination)
    src_shown, dst_shown = display(src_parts), display(dst_parts)
    if not src_parts or not dst_parts:
        raise ToolFailed("The root directory itself cannot be moved or replaced", kind="is_root")
    if dst_parts[: len(src_parts)] == src_parts:
        raise ToolFailed(
            f"Cannot move {src_shown!r} into itself ({dst_shown!r})", kind="invalid_move"
        )
    with jail.parent(src_parts) as (src_fd, src_name):
        status = _lstat_or_none(src_fd, src_name)
        if status is None:
            raise not_found(src_shown)
        # Parents of the destination are made only once the source is known to exist.
        with jail.parent(dst_parts, create=create_parents) as (dst_fd, dst_name):
            if _lstat_or_none(dst_fd, dst_name) is not None and not overwrite:
                raise ToolFailed(
                    f"{dst_shown!r} already exists; pass overwrite=true to replace it",
                    kind="exists",
                    data={"path": dst_shown},
                )
            try:
                os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
            except OSError as error:
                raise _entry_error(error, dst_shown) from None
    return MoveResult(source=src_shown, destination=dst_shown, type=entry_kind(status.st_mode))


def delete_entry(jail: Jail, path: str, *, recursive: bool) -> DeleteResult:
    """Remove the entry at ``path``: a file, a link (not what it points to), or a directory."""
    parts = split_relative(path)
    shown = display(parts)
    if not parts:
        raise ToolFailed("The root directory itself cannot be deleted", kind="is_root")
    with jail.parent(parts) as (dir_fd, name):
        status = _lstat_or_none(dir_fd, name)
        if status is None:
            raise not_found(shown)
        kind = entry_kind(status.st_mode)
        try:
            if kind != "directory":
                os.unlink(name, dir_fd=dir_fd)
            elif recursive:
                # The fd-based rmtree never follows a link, even one swapped in meanwhile.
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.rmdir(name, dir_fd=dir_fd)
        except OSError as error:
            if error.errno == errno.ENOTEMPTY:
                raise ToolFailed(
                    f"{shown!r} is a directory that is not empty; pass recursive=true to delete "
                    "it with everything in it",
                    kind="not_empty",
                    data={"path": shown},
                ) from None
            raise _entry_error(error, shown) from None
    return DeleteResult(path=shown, type=kind)


def make_directory(jail: Jail, path: str) -> MkdirResult:
    """Make the directory at ``path`` and any missing parents; an existing one is fine."""
    parts = split_relative(path)
    shown = display(parts)
    try:
        jail.lstat(parts)
        existed = True
    except ToolFailed as error:
        if error.kind != "not_found":
            raise
        existed = False
    with os_errors(shown), jail.directory(parts, create=True):
        pass
    return MkdirResult(path=shown, created=not existed)


def _entry_error(error: OSError, shown: str) -> ToolFailed:
    kinds = {errno.EXDEV: "cross_device", errno.ENOTDIR: "not_a_directory"}
    return ToolFailed(
        f"Cannot change {shown!r}: {error.strerror}",
        kind=kinds.get(error.errno or 0, "os_error"),
        data={"path": shown},
    )
