"""Execution surfaces deeper in the root, found by a bounded walk cached on folder mtimes.

:func:`~invokit.builtin._surfaces.root_surfaces` reads the top of the root and what git's
files point at. A repository deeper in it (``sub/.git``, a nested clone, ``vendor/x/.vscode``)
or a virtual environment (a folder holding ``pyvenv.cfg``) is only found by looking, so
:func:`scan` walks the root's folders once, without following links and without entering a
surface, a virtual environment or a folder git takes for a repository (:func:`repository_marks`:
``HEAD`` beside ``objects/`` and ``refs/``, or beside a ``commondir``: a bare or split git
directory under any name), and remembers every folder's mtime: a folder's mtime changes
whenever an entry is added, removed or renamed in it, so the next call only ``stat``\\ s the
folders it saw and walks again only when one changed. A folder's change time is compared too
(a command can set an mtime back with ``utime``, never a ctime), and a folder changed so
shortly before the walk that a change right after it might keep the same coarse times (git's
"racy" case) is compared by its entries as well, until a look comes long after. Above
:data:`MAX_FOLDERS` folders the walk stops and every command is refused (a surface past the cap
could not be kept read-only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from dataclasses import dataclass

from invokit.exceptions import AccessDenied
from invokit.permissions.internal import surface_parts

__all__ = [
    "MAX_FOLDERS",
    "Scan",
    "cached_scan",
    "created_surfaces",
    "is_repository",
    "scan",
    "venv_files",
]

MAX_FOLDERS = 20_000
"""The most folders a root may hold for the shell sandbox to find every surface in it."""

_BARE_MARKS = ("HEAD", "objects", "refs")
_SPLIT_MARKS = ("HEAD", "commondir")
_RACY_NS = 2_000_000_000  # file systems keep mtimes in ticks of up to a few milliseconds
_VENV_MARK = "pyvenv.cfg"
_VENV_FOLDERS = ("bin", "Scripts", "lib", "lib64", "Lib", "include", "Include", "share", "etc")
# What a virtual environment runs without asking: every .pth file in site-packages at each
# start of its interpreter, and the activate scripts in the person's shell.
_ACTIVATE: tuple[str, ...] = ("activate", "activate.sh", "activate.bash", "activate.csh")
_ACTIVATE += ("activate.fish", "activate.nu", "activate.ps1", "Activate.ps1", "activate_this.py")


@dataclass(frozen=True, kw_only=True, slots=True)
class Scan:
    """What a walk of one root found."""

    surfaces: tuple[str, ...]
    """Root-relative paths of every entry below the top whose name is a surface."""
    folders: tuple[str, ...]
    """Root-relative folders below the top that hold such an entry."""
    venvs: tuple[str, ...]
    """Root-relative folders holding ``pyvenv.cfg`` (the root itself is ``""``)."""
    venv_files: tuple[str, ...] = ()
    """Root-relative files of those that run without asking (see :func:`venv_files`)."""
    repositories: tuple[str, ...] = ()
    """Root-relative folders below the top that git takes for a git directory (bare or split,
    see :func:`is_repository`): git obeys their config and runs their hooks, so they are
    mounted whole."""
    root_repository: bool = False
    """Whether the root itself is one (``HEAD`` beside ``objects/`` and ``refs/`` or a
    ``commondir`` at its top): the root stays writable, so one a command makes there is taken
    apart after it (its ``HEAD`` removed)."""
    commons: tuple[str, ...] = ()
    """Root-relative folders inside the root that a repository's ``commondir`` names (their
    config and hooks are the repository's): mounted whole too."""
    stamps: tuple[tuple[str, Stamp], ...]
    """Each folder walked (absolute), the root first, and its :data:`Stamp` when walked."""
    listings: tuple[tuple[str, Listing], ...] = ()
    """Each folder of ``stamps`` changed so shortly before the walk that a change right after
    it might keep the same (coarse) times, and its entries then."""
    pointers: tuple[tuple[str, str | None], ...] = ()
    """Each repository folder (absolute) and where its ``commondir`` led (see ``commons``):
    an edit in place changes no folder's times, so it is read again at each look."""


Stamp = tuple[int, int, int]
"""A folder's ``(st_mtime_ns, st_ctime_ns, st_ino)``."""
Listing = tuple[tuple[str, bool, bool], ...]
"""A folder's entries: name, whether a folder (not followed), whether a link; sorted."""

_CACHE: dict[str, Scan] = {}
_LOCK = threading.Lock()


def scan(real_root: str, *, fresh: bool = False, bounded: bool = True) -> Scan:
    """The surfaces and virtual environments of ``real_root`` (resolved), walked again only
    when a folder seen last time has changed (always when ``fresh``). Without ``bounded`` the
    walk goes on past :data:`MAX_FOLDERS` (after a command: what it created must be found).

    Raises:
        AccessDenied: the root holds more than :data:`MAX_FOLDERS` folders.
    """
    cached = None if fresh else cached_scan(real_root, bounded=bounded)
    if cached is not None:
        return cached
    walked = _walk(real_root, bounded=bounded)
    with _LOCK:
        _CACHE[real_root] = walked
    return walked


def cached_scan(real_root: str, *, bounded: bool = True) -> Scan | None:
    """The last walk of ``real_root`` when no folder it saw has changed, else ``None``.

    Raises:
        AccessDenied: ``bounded`` and the root holds more than :data:`MAX_FOLDERS` folders.
    """
    with _LOCK:
        cached = _CACHE.get(real_root)
    looked = time.time_ns()
    if cached is None or not _unchanged(real_root, cached):
        return None
    if bounded and len(cached.stamps) > MAX_FOLDERS:  # an unbounded walk after a command
        raise _too_many(real_root)
    # Entries seen the same this long after their times: any later change shows in them.
    stamps = dict(cached.stamps)
    listings = tuple(item for item in cached.listings if _recent(stamps[item[0]], looked))
    if listings == cached.listings:
        return cached
    cached = dataclasses.replace(cached, listings=listings)
    with _LOCK:
        _CACHE[real_root] = cached
    return cached


def is_repository(names: set[str]) -> bool:
    """Whether a folder holding ``names`` is one git takes for a git directory: ``HEAD``,
    ``objects`` and ``refs``, or ``HEAD`` and ``commondir`` (git's ``is_git_directory``; the
    filesystem tools refuse the write that completes either)."""
    return any(names.issuperset(marks) for marks in (_BARE_MARKS, _SPLIT_MARKS))


def venv_files(real_root: str, venv: str) -> list[str]:
    """The files of a virtual environment that run without asking (root-relative): its
    ``pyvenv.cfg``, activate scripts and the ``.pth`` files of its site-packages, those that
    exist and are not links."""
    base = os.path.join(real_root, venv) if venv else real_root
    found = [os.path.join(base, _VENV_MARK)]
    found += [os.path.join(base, "bin", name) for name in _ACTIVATE]
    found += [os.path.join(base, "Scripts", name) for name in _ACTIVATE]
    for lib in ("lib", "Lib"):
        for version in _names(os.path.join(base, lib)):
            site = os.path.join(base, lib, version, "site-packages")
            found += [os.path.join(site, n) for n in _names(site) if n.endswith(".pth")]
    site = os.path.join(base, "Lib", "site-packages")
    found += [os.path.join(site, name) for name in _names(site) if name.endswith(".pth")]
    kept = [path for path in found if os.path.isfile(path) and not os.path.islink(path)]
    return [os.path.relpath(path, real_root) for path in dict.fromkeys(kept)]


def created_surfaces(before: Scan, after: Scan) -> list[str]:
    """The surfaces (root-relative) ``after`` holds that ``before`` did not: named entries,
    and new ``.pth`` files in a virtual environment that existed before. A virtual environment
    created anew is not one of them: nothing on the host has run it yet (it is reported)."""
    old = {*before.surfaces, *before.venv_files, *before.repositories}
    kept = [path for path in after.venv_files if _venv_of(path, before.venvs)]
    new = [*after.surfaces, *(path for path in kept if path.endswith(".pth"))]
    walked = {folder for folder, _ in before.stamps}
    top = before.stamps[0][0] if before.stamps else ""  # the walk stamps its root first
    for repository in after.repositories:
        if repository not in old:
            # A folder that was there before holds the person's files: taking its HEAD away
            # is enough for git to see no repository in it.
            existed = os.path.join(top, repository) in walked
            new.append(f"{repository}/HEAD" if existed else repository)
    if after.root_repository and not before.root_repository:
        new.append("HEAD")  # the root holds the person's files: only its HEAD goes
    created = sorted(path for path in dict.fromkeys(new) if path not in old)
    # The outermost only: removing a created folder removes what it holds.
    return [p for p in created if not any(p.startswith(q + "/") for q in created if q != p)]


def _venv_of(path: str, venvs: tuple[str, ...]) -> bool:
    return any(not venv or path.startswith(venv + "/") for venv in venvs)


def _site_folders(base: str) -> list[str]:
    """The folders whose entries :func:`venv_files` reads (their mtimes say when to again)."""
    found = [os.path.join(base, "bin"), os.path.join(base, "Scripts")]
    for lib in ("lib", "Lib"):
        found += [os.path.join(base, lib, v, "site-packages") for v in _names(f"{base}/{lib}")]
        found.append(os.path.join(base, lib, "site-packages"))
    return [folder for folder in found if os.path.isdir(folder)]


def _walk(real_root: str, *, bounded: bool) -> Scan:
    surfaces: list[str] = []
    folders: dict[str, None] = {}
    venvs: list[str] = []
    files: list[str] = []
    repositories: list[str] = []
    root_repository = False
    commons: list[str] = []
    pointers: list[tuple[str, str | None]] = []
    stamps: list[tuple[str, Stamp]] = []
    listings: list[tuple[str, Listing]] = []
    started = time.time_ns()
    pending = [real_root]
    while pending:
        folder = pending.pop()
        try:
            stamp = _stamp(os.stat(folder))
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable: the command cannot write it either
        stamps.append((folder, stamp))
        if _recent(stamp, started):
            listings.append((folder, _listing(entries)))
        if bounded and len(stamps) > MAX_FOLDERS:
            raise _too_many(real_root)
        relative = os.path.relpath(folder, real_root) if folder != real_root else ""
        names = {entry.name for entry in entries}
        skipped: tuple[str, ...] = ()
        if _VENV_MARK in names and os.path.isfile(os.path.join(folder, _VENV_MARK)):
            venvs.append(relative)
            files += venv_files(real_root, relative)
            for place in _site_folders(folder):
                with contextlib.suppress(OSError):
                    site = _stamp(os.stat(place))
                    if _recent(site, started):
                        listings.append((place, _listing(list(os.scandir(place)))))
                    stamps.append((place, site))
            if relative:
                continue  # its site-packages is large and its own: venv_files reads what runs
            skipped = _VENV_FOLDERS  # the root is one: walk the rest of it
        if not relative and is_repository(names):
            root_repository = True
        if relative and is_repository(names):
            repositories.append(relative)
            common = _common_dir(real_root, folder)
            pointers.append((folder, common))
            if common is not None:
                commons.append(common)
            continue  # mounted whole, as a nested .git is
        for entry in entries:
            if entry.name in skipped:
                continue
            path = f"{relative}/{entry.name}" if relative else entry.name
            if surface_parts((entry.name,)) is not None:
                if relative:  # the top of the root is root_surfaces' own
                    surfaces.append(path)
                    folders[relative] = None
                continue  # mounted whole (or refused as a link): nothing below needs a look
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return Scan(
        surfaces=tuple(sorted(surfaces)),
        folders=tuple(folders),
        venvs=tuple(sorted(venvs)),
        venv_files=tuple(files),
        repositories=tuple(sorted(repositories)),
        root_repository=root_repository,
        commons=tuple(sorted(set(commons))),
        stamps=tuple(stamps),
        listings=tuple(listings),
        pointers=tuple(pointers),
    )


def _common_dir(real_root: str, folder: str) -> str | None:
    """The folder (root-relative) a git directory's ``commondir`` names, when inside the root."""
    try:
        with open(os.path.join(folder, "commondir"), "rb") as file:
            text = file.read(4096).decode("utf-8", "replace").strip()
    except (OSError, ValueError):
        return None
    target = os.path.realpath(os.path.join(folder, text)) if text else ""
    if not target.startswith(real_root.rstrip("/") + "/"):
        return None
    return os.path.relpath(target, real_root)


def _unchanged(real_root: str, cached: Scan) -> bool:
    """Whether every folder walked has the same times, every ``commondir`` leads to the same
    place, and the folders too recent to go by their times alone hold the same entries."""
    for folder, stamp in cached.stamps:
        try:
            if _stamp(os.stat(folder)) != stamp:
                return False
        except OSError:
            return False
    if any(_common_dir(real_root, folder) != common for folder, common in cached.pointers):
        return False
    for folder, listing in cached.listings:
        try:
            if _listing(list(os.scandir(folder))) != listing:
                return False
        except OSError:
            return False
    return True


def _stamp(found: os.stat_result) -> Stamp:
    return (found.st_mtime_ns, found.st_ctime_ns, found.st_ino)


def _recent(stamp: Stamp, moment: int) -> bool:
    """Whether a change right after ``moment`` might keep the folder's (coarse) times."""
    return max(stamp[0], stamp[1]) >= moment - _RACY_NS


def _listing(entries: list[os.DirEntry[str]]) -> Listing:
    return tuple(sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in entries))


def _names(folder: str) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _too_many(real_root: str) -> AccessDenied:
    return AccessDenied(
        f"No command runs: {real_root!r} holds more than {MAX_FOLDERS} folders, too many for the "
        "shell sandbox to find every repository, editor config and virtual environment in it and "
        "keep them read-only. Give the shell tool a smaller root folder.",
        data={"reason": "root_too_large", "max_folders": MAX_FOLDERS},
    )
