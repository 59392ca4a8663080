"""The execution surfaces of a root and their read-only mounts, decided again only when
something they were decided from has changed.

Deciding them (:func:`~._protected.decide_surfaces`, :func:`~._protected.protected_mounts`)
takes an ``lstat`` of each surface and of each folder on its way (a link there refuses every
command), and each command is checked twice. The answer depends on nothing but the surfaces
at the top of the root (the :class:`~invokit.builtin._surface_cache.SurfaceCache` answer: the
same object while nothing it read has changed), the walk below the top (the same
:class:`~._scan.Scan` while no folder has changed), the opted-in paths, and what each ``lstat``
showed (:class:`~._protected.Looks`). The last answer is kept with all four and given again only
when the first two are the very same objects and every ``lstat`` shows the same as before, so
it is always the answer deciding anew would give.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin._surfaces import FoundSurface, root_surfaces
from invokit.builtin.shell._protected import (
    Looks,
    ProtectedMounts,
    decide_surfaces,
    found_surfaces,
    protected_mounts,
)
from invokit.builtin.shell._scan import Scan

__all__ = ["SurfaceMounts", "surface_mounts"]

_KEPT = 16  # roots (with their opted-in lists) whose last answer is kept


@dataclass(frozen=True, kw_only=True, slots=True)
class SurfaceMounts:
    """The execution surfaces of one root, decided."""

    surfaces: tuple[Path, ...]
    """Those to mount read-only (see :func:`~._protected.surface_paths`)."""
    opted_in: tuple[FoundSurface, ...]
    """Those the project opted in, left writable."""
    mounts: ProtectedMounts
    """The mounts that keep ``surfaces`` read-only (none unless asked for)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class _Kept:
    top: tuple[FoundSurface, ...]
    deep: Scan | None
    looks: Looks
    answer: SurfaceMounts


_LAST: OrderedDict[tuple[str, tuple[str, ...], bool], _Kept] = OrderedDict()
_LOCK = threading.Lock()


def surface_mounts(
    root: Path,
    allowed: Sequence[str],
    deep: Scan | None,
    *,
    cache: SurfaceCache | None,
    mounted: bool,
) -> SurfaceMounts:
    """The surfaces of ``root`` (resolved) and, when ``mounted``, the mounts that keep them
    read-only; the last answer when nothing it was decided from has changed (``cache``:
    the tool's cache of the top's surfaces; without one, decided anew).

    Raises:
        AccessDenied: a surface lies under, or is, a link inside the root (see
            :func:`~._protected.protected_mounts`).
    """
    below = deep.folders if deep else ()
    if cache is None:
        return _decide(root, allowed, root_surfaces(str(root), below), deep, mounted, Looks())
    top = cache.root_surfaces(str(root), below)
    key = (str(root), tuple(allowed), mounted)
    with _LOCK:
        kept = _LAST.get(key)
    if kept is not None and kept.top is top and kept.deep is deep and kept.looks.unchanged():
        return kept.answer
    looks = Looks()
    answer = _decide(root, allowed, top, deep, mounted, looks)
    with _LOCK:
        _LAST[key] = _Kept(top=top, deep=deep, looks=looks, answer=answer)
        _LAST.move_to_end(key)
        while len(_LAST) > _KEPT:
            _LAST.popitem(last=False)
    return answer


def _decide(
    root: Path,
    allowed: Sequence[str],
    top: tuple[FoundSurface, ...],
    deep: Scan | None,
    mounted: bool,
    looks: Looks,
) -> SurfaceMounts:
    surfaces, opted = decide_surfaces(root, allowed, found_surfaces(top, deep), looks)
    mounts = (
        protected_mounts(root, surfaces, looks)
        if mounted
        else ProtectedMounts(folders=(), entries=())
    )
    return SurfaceMounts(surfaces=surfaces, opted_in=opted, mounts=mounts)
