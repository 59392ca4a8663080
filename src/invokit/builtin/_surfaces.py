"""The execution surfaces of one root, as git and the editors will really find them.

:mod:`invokit.permissions._surfaces` knows surfaces by name. Some only the files reveal: a
``.git`` *file* points git at a folder elsewhere (``gitdir: other``), ``commondir`` points it at
another repository's config and hooks, ``core.hooksPath`` and ``include.path`` name more, and a
surface may be a symbolic link whose target is where git reads. :func:`root_surfaces` reads them
(a few small files, no subprocess) each time it is asked, so what a tool did a moment ago counts;
the shell tool asks through :class:`~invokit.builtin._surface_cache.SurfaceCache`, which reads
again whenever one of the files and folders read has changed.

Only places inside the root matter: the filesystem and shell tools reach nothing else.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from invokit.permissions.internal import fold, surface_parts

__all__ = ["MAX_READ", "FoundSurface", "person_configs", "root_surfaces"]

_GIT_RUNS = "git runs its hooks and obeys its config on every git command in this repository"
_HOOKS_RUNS = "git runs the hooks in it (core.hooksPath) on commit, checkout, merge and push"
MAX_READ = 64 * 1024
"""The most bytes of one git file that are read."""
_GITDIR_ENTRIES = (
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "info",
    "modules",
    "worktrees",
)
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$')
_ENTRY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")


@dataclass(frozen=True, kw_only=True, slots=True)
class FoundSurface:
    """A surface inside the root, found by reading the files git reads."""

    parts: tuple[str, ...]
    """Its components below the (resolved) root; ``()`` is the root itself."""
    runs: str
    """What runs or obeys it, said for the person."""
    git_dir: bool = False
    """A repository's git directory (or its common directory): kept whole."""


def root_surfaces(
    real_root: str, below: Sequence[str] = (), seen: list[str] | None = None
) -> tuple[FoundSurface, ...]:
    """Every execution surface of ``real_root`` (resolved: no link in it) that exists now, by
    its real place in the root.

    That is each entry at the top of the root (and of each folder ``below``, root-relative)
    whose name is a surface (any spelling), the git directory a ``.git`` file points to, its
    ``commondir``, the ``core.hooksPath`` and ``include.path`` of their configs, and the target
    of each of these that is a link, when inside the root. Unreadable files count as absent.
    Every path looked at is appended to ``seen`` (see :class:`SurfaceCache`).
    """
    seen = [] if seen is None else seen
    found: dict[tuple[str, ...], FoundSurface] = {}

    def add(path: str, runs: str, *, git_dir: bool = False) -> None:
        seen.append(path)
        for spelling in _spellings(path):
            parts = _below(real_root, spelling)
            if parts is not None and parts not in found:
                found[parts] = FoundSurface(parts=parts, runs=runs, git_dir=git_dir)

    for base in ("", *below):
        folder = os.path.join(real_root, base) if base else real_root
        for name in _names(folder, seen):
            surface = surface_parts((name,))
            if surface is None:
                continue
            path = os.path.join(folder, name)
            add(path, surface.runs, git_dir=fold(name) == ".git" and os.path.isdir(path))
            if fold(name) != ".git":
                continue
            git_dir = path if os.path.isdir(path) else _pointer(path, seen)
            if git_dir is not None:
                # A nested repository's relative core.hooksPath is taken from its own top.
                for place, runs, whole in _git_places(git_dir, folder, seen):
                    add(place, runs, git_dir=whole)
    return tuple(found.values())


def _git_places(git_dir: str, worktree: str, seen: list[str]) -> Iterator[tuple[str, str, bool]]:
    """The git directory, its common directory, their control entries, and what their
    configs point at (``core.hooksPath``, ``include.path``)."""
    dirs = [git_dir]
    common = _read(os.path.join(git_dir, "commondir"), seen)
    if common is not None and common.strip():
        dirs.append(os.path.join(git_dir, common.strip()))
    for folder in dirs:
        yield folder, _GIT_RUNS, True
        for entry in _GITDIR_ENTRIES:
            yield os.path.join(folder, entry), _GIT_RUNS, False
        for config in ("config", "config.worktree"):
            yield from _config_places(os.path.join(folder, config), worktree, seen, depth=0)
        yield from _linked_worktrees(folder, seen)
    # The person's own git reads their global and system config too: a relative
    # core.hooksPath there (".githooks") names a folder of this worktree.
    for config in person_configs():
        yield from _config_places(config, worktree, seen, depth=0)


def person_configs() -> list[str]:
    """The global and system config files the person's git reads (git's own order of
    variables and places)."""
    get = os.environ.get
    names = (
        get("HOME"),
        get("XDG_CONFIG_HOME"),
        get("GIT_CONFIG_SYSTEM"),
        get("GIT_CONFIG_GLOBAL"),
    )
    return list(_person_configs(*names))


@functools.lru_cache(maxsize=8)  # asked at every shell check: only the variables can change it
def _person_configs(
    home_variable: str | None, xdg: str | None, system: str | None, personal: str | None
) -> tuple[str, ...]:
    home = os.path.expanduser("~")  # HOME, or the password database when it is unset
    xdg = xdg or os.path.join(home, ".config")
    found = [system or "/etc/gitconfig"]
    found += [personal or os.path.join(xdg, "git", "config")]
    found += [] if personal else [os.path.join(home, ".gitconfig")]
    return tuple(found)


def _linked_worktrees(
    git_dir: str, seen: list[str], depth: int = 0
) -> Iterator[tuple[str, str, bool]]:
    """The ``.git`` files of the repository's other checkouts: linked worktrees (named by
    ``worktrees/*/gitdir``) and submodules (``modules/*/config`` ``core.worktree``), whose
    pointer a command could otherwise turn to a planted repository."""
    for name in _names(os.path.join(git_dir, "worktrees"), seen):
        pointer = _read(os.path.join(git_dir, "worktrees", name, "gitdir"), seen)
        if pointer is not None and pointer.strip():
            target = os.path.join(git_dir, "worktrees", name, pointer.strip())
            yield target, _GIT_RUNS, False
    if depth > 3:
        return
    for name in _names(os.path.join(git_dir, "modules"), seen):
        module = os.path.join(git_dir, "modules", name)
        config = _read(os.path.join(module, "config"), seen)
        for section, key, value in _config_entries(config or ""):
            if section == "core" and key == "worktree" and value:
                yield os.path.join(module, value, ".git"), _GIT_RUNS, False
        yield from _linked_worktrees(module, seen, depth + 1)


def _config_places(
    path: str, worktree: str, seen: list[str], *, depth: int
) -> Iterator[tuple[str, str, bool]]:
    text = _read(path, seen)
    if text is None or depth > 4:
        return
    for section, key, value in _config_entries(text):
        if section == "core" and key == "hookspath" and value:
            # git takes a relative core.hooksPath from the top of the worktree.
            yield os.path.join(worktree, os.path.expanduser(value)), _HOOKS_RUNS, False
        elif (section == "include" or section == "includeif") and key == "path" and value:
            included = os.path.join(os.path.dirname(path), os.path.expanduser(value))
            yield included, _GIT_RUNS, False
            yield from _config_places(included, worktree, seen, depth=depth + 1)


def _config_entries(text: str) -> Iterator[tuple[str, str, str]]:
    """``(section, key, value)`` of a git config, lower-cased names, quotes removed; enough
    to find paths (a value continued over lines is read up to its first line)."""
    section = ""
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header is not None:
            section = header.group(1).lower()
            line = header.group(2)  # git allows "[core] hooksPath = x" on one line
            if not line.strip():
                continue
        entry = _ENTRY.match(line)
        if entry is None:
            continue
        value = (entry.group(2) or "").split("#")[0].split(";")[0].strip()
        yield section, entry.group(1).lower(), value.strip('"')


def _pointer(path: str, seen: list[str]) -> str | None:
    """The git directory a ``.git`` file names (``gitdir: PATH``, relative to its folder)."""
    text = _read(path, seen)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    return os.path.join(os.path.dirname(path), target) if target else None


def _read(path: str, seen: list[str]) -> str | None:
    seen.append(path)
    try:
        with open(path, "rb") as file:
            return file.read(MAX_READ).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _names(folder: str, seen: list[str]) -> list[str]:
    seen.append(folder)
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _spellings(path: str) -> set[str]:
    """``path`` as written and as git reaches it (links resolved)."""
    absolute = os.path.abspath(path)
    return {absolute, os.path.realpath(absolute)}


def _below(root: str, path: str) -> tuple[str, ...] | None:
    if path == root:
        return ()
    if path.startswith(root.rstrip("/") + "/"):
        return tuple(path[len(root.rstrip("/")) + 1 :].split("/"))
    return None
