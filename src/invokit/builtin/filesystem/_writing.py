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
    "MAX_EDIT_BYTES",
    "delete_entry",
    "edit_file",
    "make_directory",
    "move_entry",
    "write_file",
]

MAX_EDIT_BYTES = 32 << 20
"""Largest file ``edit`` rewrites."""


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
        changed = text.replace(old, new) if replace_all else text.replace(old, new, 1)
        current = _lstat_or_none(dir_fd, name)
        if current is None or _version(current) != _version(before):
            raise ToolFailed(
                f"{shown!r} changed while it was being edited; read it again and retry",
                kind="conflict",
                data={"path": shown},
            )
        payload = changed.encode("utf-8", "surrogateescape")
        with os_errors(shown):
            write_atomic(dir_fd, name, payload, mode=stat.S_IMODE(before.st_mode), stop=stop)
    return EditResult(
        path=shown, replacements=count if replace_all else 1, diff=_diff(shown, text, changed)
    )


def _version(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns)


def _diff(shown: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{shown}",
        tofile=f"b/{shown}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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
