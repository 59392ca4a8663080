"""A small cache of :func:`~invokit.builtin._surfaces.root_surfaces`, kept only while nothing
it read has changed.

Reading a root's surfaces opens a handful of git files each call; a shell command is checked
twice (before the policy is asked and when it runs), so that cost is paid twice per call. The
cache keeps each answer with the signature of everything it read: ``st_ino``,
``st_mtime_ns``, ``st_size`` and ``st_ctime_ns`` of each file and folder (and of its target,
when it is a link), of each folder between it and the root (an entry added, removed, renamed
or turned into a link changes its folder), or of its folder when it lies outside the root.
Any difference reads again, so a change made between two checks of one command is always seen.
A file changed so shortly before the read that a later change could keep the same (coarse)
times is never trusted (git's "racy" case): the answer is then not kept.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

from invokit.builtin._surfaces import FoundSurface, person_configs, root_surfaces

__all__ = ["SurfaceCache"]

_RACY_NS = 2_000_000_000  # as in shell._scan: file systems keep times in coarse ticks
_Stat = tuple[int, int, int, int] | None
_Key = tuple[str, tuple[str, ...], tuple[str, ...]]
_Signature = tuple[tuple[str, _Stat, _Stat], ...]


class SurfaceCache:
    """The last few answers of :func:`root_surfaces`, each with the signature of what it read."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._entries: OrderedDict[
            _Key, tuple[_Signature, tuple[str, ...], tuple[FoundSurface, ...]]
        ] = OrderedDict()
        self._lock = threading.Lock()

    def root_surfaces(self, real_root: str, below: Sequence[str] = ()) -> tuple[FoundSurface, ...]:
        """:func:`root_surfaces` of ``real_root``, read again when anything it read changed."""
        key = (real_root, tuple(below), tuple(person_configs()))
        with self._lock:
            entry = self._entries.get(key)
        if entry is not None:
            signature, paths, found = entry
            if _signature(paths) == signature:
                with self._lock:
                    self._entries.move_to_end(key)
                return found
        seen: list[str] = []
        found = root_surfaces(real_root, below, seen)
        # The signature is taken before the answer kept is read, so that a change made while
        # reading shows in the next comparison; a read that looks at other paths is not kept.
        paths = _watched(real_root, seen)
        started = time.time_ns()
        signature = _signature(paths)
        if _racy(signature, started):
            with self._lock:
                self._entries.pop(key, None)
            return found
        again: list[str] = []
        found = root_surfaces(real_root, below, again)
        with self._lock:
            if _watched(real_root, again) != paths:
                self._entries.pop(key, None)
            else:
                self._entries[key] = (signature, paths, found)
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


def _racy(signature: _Signature, started: int) -> bool:
    return any(
        times is not None and max(times[1], times[3]) >= started - _RACY_NS
        for _, *both in signature
        for times in both
    )
