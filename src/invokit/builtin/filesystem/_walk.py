"""Walking a tree below the root without ever following a link.

``os.walk`` and ``glob`` resolve paths as strings and follow or race symlinks; this walker opens
each directory relative to its parent's handle with ``O_NOFOLLOW``, lists it with ``scandir`` on
that handle, and never descends into a link (a directory swapped for a link between the listing
and the descent fails to open and is skipped).

With ``ignores`` the walk applies the ignore files it meets (see :mod:`._ignore`): those of the
directories from the root down to the start first, then each directory's own as it is listed; an
ignored entry is neither yielded nor entered.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass

from invokit.builtin.filesystem._ignore import IGNORE_FILES, Ignores, read_ignore_files
from invokit.builtin.filesystem._jail import DIR_FLAGS, EntryKind, Jail
from invokit.exceptions import ToolError

__all__ = ["MAX_DEPTH", "VCS_DIRS", "WalkEntry", "ancestor_ignores", "walk"]

MAX_DEPTH = 256
"""Deepest level any walk descends to, whatever the caller asks."""
VCS_DIRS = (".git", ".hg", ".svn")
"""Version-control directories that searches and globs over the project skip."""


@dataclass(frozen=True, kw_only=True, slots=True)
class WalkEntry:
    """One entry met on a walk."""

    path: str
    """Path relative to the root."""
    kind: EntryKind
    """What the entry is, not following links."""
    depth: int
    """1 for entries directly in the starting directory."""
    entry: os.DirEntry[str]
    """The ``scandir`` entry; its ``stat`` works only while the walk is on this directory."""
    dir_fd: int
    """The open directory holding the entry; valid only until the walk moves on."""


def walk(
    jail: Jail,
    start: tuple[str, ...],
    *,
    max_depth: int | None = None,
    skip: Collection[str] = (),
    ignores: bool = False,
) -> Iterator[WalkEntry]:
    """Yield every entry below the directory ``start``, depth first, names sorted per directory.

    Args:
        jail: the root everything is relative to.
        start: the directory to walk (components below the root).
        max_depth: how many levels to descend (1 lists only ``start``); capped at
            :data:`MAX_DEPTH`.
        skip: entry names that are neither yielded nor entered (``.git``).
        ignores: apply the ignore files (``.gitignore``, ``.ignore``, ``.rgignore``).
    """
    limit = MAX_DEPTH if max_depth is None else min(max_depth, MAX_DEPTH)
    prefix = "/".join(start)
    rules = ancestor_ignores(jail, start) if ignores else None
    with jail.directory(start) as fd:
        yield from _walk_fd(fd, prefix, 1, limit, frozenset(skip), rules)


def ancestor_ignores(jail: Jail, start: tuple[str, ...]) -> Ignores:
    """The ignore files of the directories from the root down to ``start``'s parent."""
    rules = Ignores()
    for depth in range(len(start)):
        parts = start[:depth]
        try:
            with jail.directory(parts) as fd:
                rules = rules.below(read_ignore_files(fd, "/".join(parts), IGNORE_FILES))
        except (OSError, ToolError):
            break  # the walk itself reports a missing or unreadable start
    return rules


def _walk_fd(
    fd: int, prefix: str, depth: int, limit: int, skip: frozenset[str], rules: Ignores | None
) -> Iterator[WalkEntry]:
    with os.scandir(fd) as listing:
        entries = sorted(listing, key=lambda item: item.name)
    if rules is not None:
        rules = rules.below(read_ignore_files(fd, prefix, (entry.name for entry in entries)))
    for entry in entries:
        name = entry.name
        if name in skip:
            continue
        path = f"{prefix}/{name}" if prefix else name
        kind = _kind(entry)
        if rules is not None and rules.ignored(path, name, kind == "directory"):
            continue
        yield WalkEntry(path=path, kind=kind, depth=depth, entry=entry, dir_fd=fd)
        if kind != "directory" or depth >= limit:
            continue
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # gone, unreadable, or swapped for a link since it was listed
        try:
            yield from _walk_fd(child, path, depth + 1, limit, skip, rules)
        finally:
            os.close(child)


def _kind(entry: os.DirEntry[str]) -> EntryKind:
    try:
        if entry.is_symlink():
            return "symlink"
        if entry.is_dir(follow_symlinks=False):
            return "directory"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        pass
    return "other"
