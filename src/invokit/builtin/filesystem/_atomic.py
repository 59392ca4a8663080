"""Atomic file replacement: readers see the old content or the new, never a mix or nothing.

The new content goes to a file in the same directory that has no name yet (``O_TMPFILE``), so
if the process dies mid-write, the kernel reclaims it and nothing is left behind. Once the data
is flushed it is given a short-lived name and renamed over the target in one step. Where the
file system cannot make nameless files, a named temporary file is used and removed on any error
or cancellation. Every name is relative to an open directory handle from the jail.
"""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import suppress

from invokit.builtin.filesystem._cancel import StopSignal

__all__ = ["CHUNK_SIZE", "TEMP_PREFIX", "write_atomic"]

CHUNK_SIZE = 1 << 20
"""Bytes written between two checks of the stop signal."""
TEMP_PREFIX = ".invokit-"
"""Start of every temporary name, so a leftover (after a crash on a file system without
nameless files) is easy to recognise."""

_PROC_FD = "/proc/self/fd"
_NAMELESS_UNSUPPORTED = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT}


def write_atomic(
    dir_fd: int,
    name: str,
    data: bytes,
    *,
    mode: int | None = None,
    stop: StopSignal | None = None,
    chunk_size: int = CHUNK_SIZE,
    nameless: bool = True,
) -> bool:
    """Replace ``name`` in the directory ``dir_fd`` with ``data``.

    Args:
        dir_fd: the open directory that holds (or will hold) the file.
        name: a single file name in it.
        data: the whole new content.
        mode: permission bits for the new file (those of the file it replaces, usually);
            ``None`` keeps the default of a new file.
        stop: checked between chunks; when raised the write is abandoned.
        chunk_size: bytes per ``write`` call.
        nameless: try ``O_TMPFILE`` first (turned off only to test the named fallback).

    Returns:
        ``True`` once the new content is in place; ``False`` if ``stop`` was raised first, in
        which case the old file is untouched and no temporary file remains.
    """
    fd, temp = _create_temp(dir_fd, nameless=nameless)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            if stop is not None and stop.is_set():
                return False
            written = os.write(fd, view[:chunk_size])
            view = view[written:]
        os.fsync(fd)
        if stop is not None and stop.is_set():
            return False
        if temp is None:
            temp = _give_name(fd, dir_fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        temp = None
    finally:
        os.close(fd)
        if temp is not None:
            with suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
    # Make the rename itself durable; a failure here does not undo a completed write.
    with suppress(OSError):
        os.fsync(dir_fd)
    return True


def _create_temp(dir_fd: int, *, nameless: bool) -> tuple[int, str | None]:
    """Open a new empty file in ``dir_fd``: nameless when possible, else with a fresh name."""
    if nameless and hasattr(os, "O_TMPFILE") and os.path.isdir(_PROC_FD):
        try:
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
        except OSError as error:
            if error.errno not in _NAMELESS_UNSUPPORTED:
                raise
        else:
            return fd, None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        temp = _temp_name()
        try:
            return os.open(temp, flags, 0o666, dir_fd=dir_fd), temp
        except FileExistsError:
            continue


def _give_name(fd: int, dir_fd: int) -> str:
    """Link a nameless file into ``dir_fd`` under a fresh temporary name."""
    while True:
        temp = _temp_name()
        try:
            os.link(f"{_PROC_FD}/{fd}", temp, dst_dir_fd=dir_fd, follow_symlinks=True)
        except FileExistsError:
            continue
        return temp


def _temp_name() -> str:
    return f"{TEMP_PREFIX}{secrets.token_hex(8)}.tmp"
