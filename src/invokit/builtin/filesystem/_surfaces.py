"""Execution surfaces in the filesystem tools: refused before anyone is asked, unless opted in.

A change to a path that is, lies in or holds an execution surface (see
:mod:`invokit.permissions._surfaces`: ``.git`` and what git finds through it, editor and agent
configs) is refused with ``AccessDenied`` (``data["reason"] == "execution_surface"``). A path
the toolset's ``allow_surfaces`` names is let through, marked, so that its permission request
tells the policy what runs it: the policy then asks about each such change, and no grant covers
it. The match is on every spelling git and a case-insensitive file system accept, and on the
places only the files reveal (:func:`invokit.builtin._surfaces.root_surfaces`), read anew on
each check.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from invokit.builtin._surfaces import root_surfaces
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.exceptions import AccessDenied
from invokit.permissions.internal import Surface, fold, opted_in, surface_parts

__all__ = ["SurfaceGuard"]

_BARE_MARKS = ("HEAD", "objects", "refs")
"""What makes a folder a (bare) repository to git, which then obeys its config and runs its
hooks when a command runs there (git's ``is_git_directory``)."""
_SHARED_MARKS = ("HEAD", "commondir")
"""The other way git accepts a folder as a repository: ``HEAD`` beside a ``commondir`` that
points at the folder holding ``objects/`` and ``refs/`` (and the config and hooks git obeys)."""
_BARE_NAMES = frozenset(
    {"config", "config.worktree", "hooks", "commondir", "info", "head", "objects", "refs"}
)
_BARE_RUNS = (
    "git treats the folder as a bare repository and obeys its config and hooks when run there"
)
_VENV_MARK = "pyvenv.cfg"
"""What makes a folder a Python virtual environment (the interpreter looks for it)."""
_VENV_ENTRIES = frozenset(
    {"bin", "lib", "lib64", "include", "share", "etc", "Scripts", "Lib", "Include", _VENV_MARK}
)
"""What a virtual environment holds that an interpreter, ``activate`` or a tool reads."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_PATH", 0) | os.O_CLOEXEC
_VENV_RUNS = (
    "it is a Python virtual environment: its interpreter runs every .pth file in site-packages "
    "at each start, and the person's shell runs bin/activate"
)


class SurfaceGuard:
    """The execution surfaces of one root, and the ones a project opted back in.

    Args:
        root: the toolset's root directory.
        allowed: root-relative surfaces (each with all below it) that may be changed after
            all, each change asked about (``allow_surfaces``).
    """

    def __init__(self, root: str | os.PathLike[str], allowed: Iterable[str] = ()) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.allowed = tuple(allowed)
        self._real_root: str | None = None

    def check_change(self, path: str, action: str) -> str | None:
        """What runs the surface that changing ``path`` touches, when it is opted in; ``None``
        when it touches none.

        Raises:
            AccessDenied: ``path`` is, lies in or holds a surface not opted in (or is invalid).
        """
        parts = split_relative(path)
        surface = self.touched(parts)
        if surface is None:
            return None
        if parts and opted_in(display(parts), self.allowed):
            return surface.runs
        raise _refusal(parts, surface, action)

    def touched(self, parts: tuple[str, ...]) -> Surface | None:
        """The surface the entry at ``parts`` is, lies in or (a folder) holds."""
        found = surface_parts(parts)
        if found is not None:
            return found
        folded = tuple(fold(part) for part in parts)
        bare = self._bare_repository(parts, folded) or self._environment(parts)
        if bare is not None:
            return bare
        if self._real_root is None:  # resolved once, on first use, as the jail does
            self._real_root = os.path.realpath(self.root)
        for surface in root_surfaces(self._real_root):
            known = tuple(fold(part) for part in surface.parts)
            if folded[: len(known)] == known or known[: len(folded)] == folded:
                return Surface(path=display(surface.parts), runs=surface.runs)
        return None

    def _bare_repository(self, parts: tuple[str, ...], folded: tuple[str, ...]) -> Surface | None:
        """The bare repository (``HEAD``, ``objects/`` and ``refs/`` side by side, or ``HEAD``
        beside a ``commondir``, this change included) whose control entry or mark the entry at
        ``parts`` is."""
        for index, key in enumerate(folded):
            if key not in _BARE_NAMES:
                continue
            folder = parts[:index]
            for needed in (_BARE_MARKS, _SHARED_MARKS):
                marks = {mark for mark in needed if fold(mark) == key}
                marks |= {
                    mark
                    for mark in needed
                    if os.path.lexists(os.path.join(self.root, *folder, mark))
                }
                if len(marks) == len(needed):
                    return Surface(path=display((*folder, parts[index])), runs=_BARE_RUNS)
        return None

    def _environment(self, parts: tuple[str, ...]) -> Surface | None:
        """The virtual environment (a folder of the root holding ``pyvenv.cfg``) the entry at
        ``parts`` lies in, where the interpreter or the person's shell reads: a ``.pth`` file
        or a script planted there runs at the person's next ``python`` or ``activate``.

        Only a folder followed by what a virtual environment holds is looked at, each name
        resolved from its parent's handle (no link followed), so the cost stays linear."""
        looked = [index for index in range(1, len(parts)) if parts[index] in _VENV_ENTRIES]
        if not looked:
            return None
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError:
            return None
        try:
            for index in range(1, looked[-1] + 1):
                try:
                    inner = os.open(parts[index - 1], _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    return None
                os.close(fd)
                fd = inner
                if index in looked and _holds(fd, _VENV_MARK):
                    return Surface(path=display(parts[:index]), runs=_VENV_RUNS)
        finally:
            os.close(fd)
        return None


def _holds(fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return True


def _refusal(parts: tuple[str, ...], surface: Surface, action: str) -> AccessDenied:
    shown = display(parts)
    if fold(shown) == fold(surface.path):
        where = f"{shown!r} is an execution surface"
    elif len(parts) > len(surface.path.split("/")):
        where = f"{shown!r} lies in the execution surface {surface.path!r}"
    else:
        where = f"{shown!r} holds the execution surface {surface.path!r}"
    return AccessDenied(
        f"Refused to {action} {shown!r}: {where} ({surface.runs}); no tool changes one unless "
        "the project opts it in (allow_surfaces).",
        data={"path": shown, "reason": "execution_surface", "surface": surface.path},
    )
