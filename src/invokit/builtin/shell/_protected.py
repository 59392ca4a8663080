"""Protected paths in the sandbox: mounted read-only on top of the writable root.

A protected file or folder (the CLI's ``invokit.toml``, a policy file, invokit's state) is bound
read-only over itself inside the sandbox, so ``sed -i``, ``cp``, ``truncate`` and ``tee`` cannot
write it. A mount point cannot be renamed, replaced or removed either (``EBUSY``), so ``rm``,
``mv`` and ``ln -sf`` fail too; each folder between the root and a protected entry is bound over
itself as well, which keeps ``mv sub elsewhere`` or ``rm -r sub`` from carrying the protected
entry away and planting another in its place.

A protected path that does not exist yet cannot be mounted; a file a command creates there is
not trusted by the CLI, which pins the configurations a person accepted by their hash. A
protected path that is, or lies under, a symbolic link inside the root cannot be protected
this way (the link itself can be replaced), so every command is refused while one is.

The execution surfaces of the root (:func:`surface_paths`: the git directory whole, wherever a
``.git`` file, ``commondir``, ``core.hooksPath`` or a link puts it, and the editor and agent
configs) are mounted read-only the same way, by their real place: git and the editors still
read them, and a command that writes one fails with ``EROFS``. Those deeper in the root (a
nested repository, a submodule's checkout, a virtual environment's ``.pth`` files) come from
the cached walk of :mod:`._scan`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin._surfaces import FoundSurface, root_surfaces
from invokit.builtin.shell._scan import Scan
from invokit.exceptions import AccessDenied
from invokit.permissions.internal import opted_in

__all__ = [
    "Looks",
    "ProtectedMounts",
    "decide_surfaces",
    "found_surfaces",
    "protected_mounts",
    "surface_paths",
]

_GIT_RUNS = "git takes the folder for a repository and obeys its config and hooks run there"
_VENV_RUNS = (
    "the virtual environment's interpreter runs every .pth file at each start, and the "
    "person's shell runs bin/activate"
)


class Looks:
    """Every ``lstat`` taken while deciding the mounts, and what it showed: whether a path
    exists and is a link is all the decision reads, so the same answers mean the same mounts
    (see :mod:`._surface_mounts`)."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int, int] | None] = {}

    def lstat(self, path: str) -> tuple[int, int, int] | None:
        """``(st_mode, st_ino, st_dev)`` of ``path`` itself, ``None`` when it cannot be read."""
        if path not in self.seen:
            self.seen[path] = _lstat(path)
        return self.seen[path]

    def exists(self, path: str) -> bool:
        return self.lstat(path) is not None

    def is_link(self, path: str) -> bool:
        found = self.lstat(path)
        return found is not None and stat.S_ISLNK(found[0])

    def unchanged(self) -> bool:
        """Whether every path looked at shows the same as it did."""
        return all(_lstat(path) == found for path, found in self.seen.items())


@dataclass(frozen=True, kw_only=True, slots=True)
class ProtectedMounts:
    """The mounts that keep the protected entries of one root as they are."""

    folders: tuple[Path, ...]
    """Folders between the root and a protected entry, bound over themselves (writable) so
    that they cannot be renamed or removed; parents first."""
    entries: tuple[Path, ...]
    """Existing protected files and folders, bound read-only over themselves; parents first."""

    def joined(self, other: ProtectedMounts) -> ProtectedMounts:
        """These mounts and ``other``'s, once each, parents first."""
        folders = dict.fromkeys((*self.folders, *other.folders))
        entries = dict.fromkeys((*self.entries, *other.entries))
        return ProtectedMounts(
            folders=tuple(sorted(folders, key=_path_depth)),
            entries=tuple(sorted(entries, key=_path_depth)),
        )

    def bwrap_args(self) -> list[str]:
        """The bubblewrap options, to follow the root's own ``--bind``."""
        args: list[str] = []
        for folder in self.folders:
            args += ["--bind", str(folder), str(folder)]
        for entry in self.entries:
            args += ["--ro-bind", str(entry), str(entry)]
        return args


def protected_mounts(
    root: Path, protected: Sequence[Path], looks: Looks | None = None
) -> ProtectedMounts:
    """The mounts for the protected paths that exist inside ``root`` now.

    Args:
        root: the shell tool's (resolved) root.
        protected: absolute protected paths; those outside the root are not visible in the
            sandbox, or only read-only, and need no mount.
        looks: records each ``lstat`` taken (a fresh one when ``None``).

    Raises:
        AccessDenied: a protected path is, or lies under, a symbolic link inside the root.
    """
    looks = Looks() if looks is None else looks
    top = str(root)
    folders: dict[str, None] = {}
    entries: dict[str, None] = {}
    for path in protected:
        parts = _inside(root, path)
        if parts is None:
            continue
        current, chain = top, [top]
        for name in parts:
            current = f"{current}/{name}"
            if looks.is_link(current):
                raise _link_refusal(path, Path(current))
            if not looks.exists(current):
                break
            chain.append(current)
        else:
            for folder in chain[1:-1]:
                folders[folder] = None
            entries[chain[-1]] = None
    return ProtectedMounts(
        folders=tuple(Path(p) for p in sorted(folders, key=_depth)),
        entries=tuple(Path(p) for p in sorted(entries, key=_depth)),
    )


def surface_paths(
    root: Path,
    allowed: Sequence[str] = (),
    deep: Scan | None = None,
    *,
    cache: SurfaceCache | None = None,
    looks: Looks | None = None,
) -> tuple[tuple[Path, ...], tuple[FoundSurface, ...]]:
    """The execution surfaces of ``root`` (resolved) that exist now: those to mount read-only,
    by their real path (a surface inside a git directory goes with it), and those the project
    opted in (``allowed``), left writable. ``deep`` adds what a walk found below the top:
    nested repositories and editor configs, and the files of each virtual environment that
    run without asking (its ``pyvenv.cfg``, ``bin/activate*`` and ``.pth`` files; the rest
    stays writable, so that ``pip install`` keeps working). ``cache`` keeps the top's
    surfaces while nothing they were read from changed; ``looks`` records each ``lstat``.
    """
    below = deep.folders if deep else ()
    top = cache.root_surfaces(str(root), below) if cache else root_surfaces(str(root), below)
    return decide_surfaces(root, allowed, found_surfaces(top, deep), looks)


def found_surfaces(top: Sequence[FoundSurface], deep: Scan | None) -> tuple[FoundSurface, ...]:
    """The surfaces at the top of the root (``top``, from :func:`root_surfaces`) and those the
    walk found below it."""
    return (*top, *_venvs(deep), *_repositories(deep))


def decide_surfaces(
    root: Path, allowed: Sequence[str], found: Sequence[FoundSurface], looks: Looks | None = None
) -> tuple[tuple[Path, ...], tuple[FoundSurface, ...]]:
    """Of the surfaces ``found``, those to mount read-only and those opted in (see
    :func:`surface_paths`)."""
    looks = Looks() if looks is None else looks
    base = str(root)
    named = [(surface, "/".join(surface.parts)) for surface in found]
    opted = {relative: opted_in(relative, allowed) for _, relative in named}
    # Strings, not Paths: this runs twice for every command. (The root itself is a git
    # directory when a pointer names it: then it is "" and holds every other surface.)
    whole = [
        f"{base}/{relative}/" if relative else f"{base}/"
        for surface, relative in named
        if surface.git_dir and not opted[relative]
    ]
    kept: dict[str, None] = {}
    writable: list[FoundSurface] = []
    for surface, relative in named:
        if not relative:
            continue
        path = f"{base}/{relative}"
        if not opted[relative] and any(path.startswith(folder) for folder in whole):
            continue  # read-only with its git directory
        if not looks.exists(path):
            continue
        if opted[relative]:
            if not any(other.parts == surface.parts[: len(other.parts)] for other in writable):
                writable.append(surface)  # one request per opted-in folder, not per entry
            continue
        # A surface reached through a link stays in the list as written (its target is there
        # too): protected_mounts refuses every command while a link a command could replace
        # decides where git or the editor looks.
        kept[path] = None
    return tuple(Path(path) for path in kept), tuple(writable)


def _venvs(deep: Scan | None) -> list[FoundSurface]:
    return [
        FoundSurface(parts=tuple(path.split("/")), runs=_VENV_RUNS)
        for path in (deep.venv_files if deep else ())
    ]


def _repositories(deep: Scan | None) -> list[FoundSurface]:
    places = (*deep.repositories, *deep.commons) if deep else ()
    return [FoundSurface(parts=tuple(p.split("/")), runs=_GIT_RUNS, git_dir=True) for p in places]


def _path_depth(path: Path) -> int:
    return len(path.parts)


def _depth(path: str) -> int:
    return path.count("/")


def _lstat(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.lstat(path)
    except (OSError, ValueError):
        return None
    return (found.st_mode, found.st_ino, found.st_dev)


def _inside(root: Path, path: Path) -> tuple[str, ...] | None:
    """``path`` as components below ``root``, written as given or with its folder resolved."""
    absolute, top = os.path.abspath(path), str(root)
    for resolve in (False, True):  # the folder is resolved only when needed: it costs
        spelling = absolute
        if resolve:
            folder, name = os.path.split(absolute)
            spelling = os.path.join(os.path.realpath(folder), name)
        if spelling == top:
            return ()
        if spelling.startswith(top + "/"):
            return tuple(spelling[len(top) + 1 :].split("/"))
    return None


def _link_refusal(path: Path, link: Path) -> AccessDenied:
    return AccessDenied(
        f"The protected path {str(path)!r} goes through the symbolic link {str(link)!r}, which "
        "a command could replace; the shell tool runs nothing while it does. Replace the link "
        "with the real file or folder, or protect the path it points to.",
        data={"reason": "protected_link", "protected": str(path), "link": str(link)},
    )
