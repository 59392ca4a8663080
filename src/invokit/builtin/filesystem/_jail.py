"""The jail: every path is resolved one component at a time below an open root directory.

String checks on paths are what broke the MCP reference filesystem server (a prefix match let
``/root-evil`` pass as inside ``/root``; a symlink check raced the open). Here nothing is
compared as text. The root is opened once, and each component is opened relative to the handle
of the one before it with ``O_NOFOLLOW``, so a symbolic link anywhere on the path, even one
swapped in between a check and a use, makes the open fail instead of leading elsewhere. Content
is only read from or written to regular files with one link; FIFOs, devices and sockets are
refused before they are opened, and a hard-linked file is refused because it may be the very
same file as one outside the root.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Literal

from invokit.builtin.filesystem._paths import denied, display
from invokit.exceptions import ToolFailed

__all__ = ["DIR_FLAGS", "FILE_FLAGS", "EntryKind", "Jail", "entry_kind", "os_errors"]

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""Open a directory, never through a link."""
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""Open a file for reading, never through a link; a FIFO swapped in cannot block the open."""

EntryKind = Literal["file", "directory", "symlink", "other"]


def entry_kind(mode: int) -> EntryKind:
    """What a directory entry is, from its ``lstat`` mode."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


def _special_name(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def not_found(shown: str) -> ToolFailed:
    """The error for a path that does not exist."""
    return ToolFailed(
        f"No such file or directory: {shown!r}", kind="not_found", data={"path": shown}
    )


class Jail:
    """An open handle on a root directory and safe ways to reach what is below it.

    The root may itself be given as a symbolic link: it is resolved once, when the handle is
    first needed (lazily, so defining a toolset does no I/O), and never again. All methods are
    blocking and thread-safe; call them from a worker thread.

    Args:
        root: the directory every path is relative to.
        allow_hard_links: read and write regular files that have more than one link. Off by
            default, since a hard link may be the same file as one outside the root.
    """

    def __init__(self, root: str | os.PathLike[str], *, allow_hard_links: bool = False) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.allow_hard_links = allow_hard_links
        self._fd: int | None = None
        self._resolved: str | None = None
        self._lock = threading.Lock()
        self._closer: weakref.finalize[[int], Jail] | None = None

    def __repr__(self) -> str:
        return f"Jail(root={self.root!r})"

    # -- the root handle -------------------------------------------------------------------

    def root_fd(self) -> int:
        """The open root directory, opened on first use (single-flight)."""
        fd = self._fd
        if fd is not None:
            return fd
        with self._lock:
            if self._fd is None:
                resolved = os.path.realpath(self.root)
                try:
                    self._fd = os.open(resolved, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError as error:
                    raise ToolFailed(
                        f"The root directory {self.root} cannot be opened: {error.strerror}",
                        kind="root_unavailable",
                        data={"root": self.root},
                    ) from None
                self._resolved = resolved
                # A toolset that is dropped without being closed still gives its handle back.
                self._closer = weakref.finalize(self, os.close, self._fd)
            return self._fd

    @property
    def resolved_root(self) -> str:
        """The root's real path, as resolved when it was opened."""
        self.root_fd()
        assert self._resolved is not None
        return self._resolved

    def close(self) -> None:
        """Close the root handle; the next use opens it again."""
        with self._lock:
            if self._closer is not None:
                self._closer()
                self._closer = None
            self._fd = None

    # -- walking down ----------------------------------------------------------------------

    def open_dir(self, parts: tuple[str, ...], *, create: bool = False) -> int:
        """Open the directory ``parts`` names; the caller closes the returned handle.

        Args:
            parts: components below the root (empty for the root itself).
            create: make missing directories on the way, as ``mkdir -p`` does.

        Raises:
            AccessDenied: a component is a symbolic link.
            ToolFailed: a component is missing (``not_found``) or not a directory.
        """
        current = self.root_fd()
        owned = False
        try:
            for index in range(len(parts)):
                opened = self._open_child_dir(current, parts, index, create)
                if owned:
                    os.close(current)
                current, owned = opened, True
        except BaseException:
            if owned:
                os.close(current)
            raise
        return current if owned else os.dup(current)

    def _open_child_dir(self, parent: int, parts: tuple[str, ...], index: int, create: bool) -> int:
        # The path an error shows is joined only on failure: a slice per level would make a
        # walk quadratic in the depth.
        name = parts[index]
        try:
            return _open_or_make_dir(parent, name, create)
        except FileNotFoundError:
            raise not_found(display(parts[: index + 1])) from None
        except OSError as error:
            raise explain(parent, name, display(parts[: index + 1]), error, want_dir=True) from None

    @contextmanager
    def directory(self, parts: tuple[str, ...], *, create: bool = False) -> Iterator[int]:
        """:meth:`open_dir` as a context manager that closes the handle."""
        fd = self.open_dir(parts, create=create)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def parent(self, parts: tuple[str, ...], *, create: bool = False) -> Iterator[tuple[int, str]]:
        """The open parent directory of ``parts`` and the final name in it."""
        if not parts:
            raise ToolFailed(
                "The root directory itself cannot be used here", kind="is_root", data={"path": "."}
            )
        with self.directory(parts[:-1], create=create) as fd:
            yield fd, parts[-1]

    # -- the final component ---------------------------------------------------------------

    def lstat(self, parts: tuple[str, ...]) -> os.stat_result:
        """Status of the entry ``parts`` names, without following a final link."""
        if not parts:
            return os.fstat(self.root_fd())
        with self.parent(parts) as (fd, name):
            try:
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                raise not_found(display(parts)) from None

    def open_file(self, parts: tuple[str, ...]) -> tuple[int, os.stat_result]:
        """Open a regular, singly linked file for reading; the caller closes the handle."""
        shown = display(parts)
        with self.parent(parts) as (dir_fd, name):
            return self.open_file_at(dir_fd, name, shown)

    def open_file_at(self, dir_fd: int, name: str, shown: str) -> tuple[int, os.stat_result]:
        """Like :meth:`open_file`, for ``name`` in an already open directory."""
        try:
            before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise not_found(shown) from None
        # Checked before opening: opening a device can have effects of its own.
        self.require_content_file(before, shown)
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
        except OSError as error:
            raise explain(dir_fd, name, shown, error, want_dir=False) from None
        try:
            after = os.fstat(fd)
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
                raise denied(shown, "changed", f"{shown!r} was replaced while it was opened")
            self.require_content_file(after, shown)
        except BaseException:
            os.close(fd)
            raise
        return fd, after

    def require_content_file(self, status: os.stat_result, shown: str) -> None:
        """Refuse anything whose content must not be read or replaced.

        Raises:
            AccessDenied: a link, a special file, or a file with several hard links.
            ToolFailed: a directory (``is_a_directory``).
        """
        mode = status.st_mode
        if stat.S_ISLNK(mode):
            raise symlink_denied(shown)
        if stat.S_ISDIR(mode):
            raise ToolFailed(
                f"{shown!r} is a directory", kind="is_a_directory", data={"path": shown}
            )
        if not stat.S_ISREG(mode):
            raise denied(
                shown,
                "special_file",
                f"{shown!r} is {_special_name(mode)}; only regular files are read or written",
            )
        if status.st_nlink > 1 and not self.allow_hard_links:
            raise denied(
                shown,
                "hard_link",
                f"{shown!r} has {status.st_nlink} hard links and may be the same file as one "
                "outside the root, so its content is not used",
            )


def _open_or_make_dir(parent: int, name: str, create: bool) -> int:
    """Open the directory ``name`` in ``parent``, first making it when missing and ``create``."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with suppress(FileExistsError):  # made by someone else meanwhile; the open checks what
        os.mkdir(name, 0o777, dir_fd=parent)
    return os.open(name, DIR_FLAGS, dir_fd=parent)


def symlink_denied(shown: str) -> Exception:
    """The refusal for a path that goes through a symbolic link."""
    return denied(
        shown,
        "symlink",
        f"{shown!r} is a symbolic link; links are never followed, so that no path leads "
        "outside the root",
    )


def explain(dir_fd: int, name: str, shown: str, error: OSError, *, want_dir: bool) -> Exception:
    """Turn a failed open of ``name`` into the error that says why, looking at what is there."""
    try:
        status = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return not_found(shown)
    except OSError:
        status = None
    if status is not None and stat.S_ISLNK(status.st_mode):
        return symlink_denied(shown)
    if error.errno == errno.ELOOP:
        return symlink_denied(shown)
    if want_dir and status is not None and not stat.S_ISDIR(status.st_mode):
        return ToolFailed(
            f"{shown!r} is not a directory", kind="not_a_directory", data={"path": shown}
        )
    if error.errno == errno.ENAMETOOLONG:
        return denied(shown, "too_long", f"{shown!r} is too long a name")
    return ToolFailed(
        f"Cannot open {shown!r}: {error.strerror}",
        kind="os_error",
        data={"path": shown, "errno": errno.errorcode.get(error.errno or 0, "")},
    )


@contextmanager
def os_errors(shown: str) -> Iterator[None]:
    """Report an unexpected OS failure on ``shown`` as a tool failure that names it.

    The one place where a failing system call (a directory removed under us, a full disk,
    no permission) becomes a result the model can read.
    """
    try:
        yield
    except OSError as error:
        code = errno.errorcode.get(error.errno or 0, "")
        raise ToolFailed(
            f"Cannot complete the operation on {shown!r}: {error.strerror or error}",
            kind="os_error",
            data={"path": shown, "errno": code},
        ) from None
