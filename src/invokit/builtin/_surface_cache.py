"""A small cache of :func:`~invokit.builtin._surfaces.root_surfaces`, kept only while nothing
it read has changed.

Reading a root's surfaces opens a handful of git files each call; a shell command is checked
twice (before the policy is asked and when it runs), so that cost is paid twice per call. The
cache keeps each answer with the signature of everything it read: ``st_ino``,
``st_mtime_ns``, ``st_size`` and ``st_ctime_ns`` of each file and folder (and of its target,
when it is a link), of each folder between it and the root (an entry added, removed, renamed
or turned into a link changes its folder), or of its folder when it lies outside the root.
Any difference reads again, so a change made between two checks of one command is always seen.
A file or folder changed so shortly before the read that a later change could keep the same
(coarse) times (git's "racy" case) is not trusted on its times alone: its content (a file's
first bytes as read, a folder's names) is kept too and compared at each look, until a look
comes long enough after its times that any later change must show in them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from invokit.builtin._surfaces import MAX_READ as _MAX_READ
from invokit.builtin._surfaces import FoundSurface, person_configs, root_surfaces

__all__ = ["SurfaceCache"]

_RACY_NS = 2_000_000_000  # as in shell._scan: file systems keep times in coarse ticks
_Stat = tuple[int, int, int, int] | None
_Key = tuple[str, tuple[str, ...], tuple[str, ...]]
_Signature = tuple[tuple[str, _Stat, _Stat], ...]
_Content = bytes | tuple[str, ...] | None
_Racy = tuple[tuple[str, int, _Content], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Entry:
    signature: _Signature
    paths: tuple[str, ...]
    racy: _Racy
    """Each path whose times are too recent to trust alone: its newest time and content."""
    found: tuple[FoundSurface, ...]


class SurfaceCache:
    """The last few answers of :func:`root_surfaces`, each with the signature of what it read."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def root_surfaces(self, real_root: str, below: Sequence[str] = ()) -> tuple[FoundSurface, ...]:
        """:func:`root_surfaces` of ``real_root``, read again when anything it read changed."""
        key = (real_root, tuple(below), tuple(person_configs()))
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None:
            looked = time.time_ns()
            if _signature(entry.paths) == entry.signature and _same(entry.racy):
                # Content seen the same this long after its times: from now on, any change
                # shows in the times.
                racy = tuple(item for item in entry.racy if item[1] >= looked - _RACY_NS)
                with self._lock:
                    if racy != entry.racy:
                        self._entries[key] = dataclasses.replace(entry, racy=racy)
                    self._entries.move_to_end(key)
                return entry.found
        seen: list[str] = []
        found = root_surfaces(real_root, below, seen)
        # The signature (and the content of what is too recent to go by its times) is taken
        # before the answer kept is read, so that a change made while reading shows in the
        # next comparison; a read that looks at other paths is not kept.
        paths = _watched(real_root, seen)
        started = time.time_ns()
        signature = _signature(paths)
        racy = _racy(signature, started)
        again: list[str] = []
        found = root_surfaces(real_root, below, again)
        kept = _watched(real_root, again) == paths and _same(racy)
        with self._lock:
            if not kept:
                self._entries.pop(key, None)
            else:
                self._entries[key] = _Entry(
                    signature=signature, paths=paths, racy=racy, found=found
                )
                self._entries.move_to_end(key)
                while len(self._entries) > self._size:
                    self._entries.popitem(last=False)
        return found


def _watched(real_root: str, seen: list[str]) -> tuple[str, ...]:
    """Each path read, and the folders whose entries decide where it leads: those up to the
    root when it is inside the root, else its own folder."""
    top = real_root.rstrip("/") or "/"
    watched: dict[str, None] = {}
    for path in seen:
        current = os.path.abspath(path)
        watched[current] = None
        if current == top:
            continue
        if not current.startswith(top + "/"):
            watched[os.path.dirname(current)] = None
            continue
        while current != top:
            current = os.path.dirname(current)
            watched[current] = None
    return tuple(watched)


def _signature(paths: tuple[str, ...]) -> _Signature:
    return tuple((path, *_stats(path)) for path in paths)


def _stats(path: str) -> tuple[_Stat, _Stat]:
    """The path's own times and, when it is a link, its target's (whose content is read)."""
    try:
        own = os.lstat(path)
    except (OSError, ValueError):
        return None, None
    target: _Stat = None
    if stat.S_ISLNK(own.st_mode):
        with contextlib.suppress(OSError, ValueError):
            target = _times(os.stat(path))
    return _times(own), target


def _times(found: os.stat_result) -> tuple[int, int, int, int]:
    return (found.st_ino, found.st_mtime_ns, found.st_size, found.st_ctime_ns)


def _racy(signature: _Signature, started: int) -> _Racy:
    """The paths changed so shortly before ``started`` that a change right after might keep
    the same times, with their newest time and content."""
    found: list[tuple[str, int, _Content]] = []
    for path, *both in signature:
        newest = max((max(t[1], t[3]) for t in both if t is not None), default=None)
        if newest is not None and newest >= started - _RACY_NS:
            found.append((path, newest, _content(path)))
    return tuple(found)


def _same(racy: _Racy) -> bool:
    return all(_content(path) == content for path, _, content in racy)


def _content(path: str) -> _Content:
    """What :func:`root_surfaces` can read of ``path``: a folder's names (sorted), or a file's
    first bytes (as many as it reads); ``None`` for anything else (never opened: a FIFO
    would block)."""
    try:
        found = os.stat(path)
        if stat.S_ISDIR(found.st_mode):
            return tuple(sorted(os.listdir(path)))
        if stat.S_ISREG(found.st_mode):
            with open(path, "rb") as file:
                return file.read(_MAX_READ)
    except (OSError, ValueError):
        pass
    return None
