"""What the filesystem tools refuse before a policy is asked, and the requests they declare.

A person should only ever be asked about a call that would run. So each tool's
``permissions()`` refuses here what can be told without running it: a path that is absolute,
climbs with ``..`` or goes through a link (the jail never follows one), content that is not a
regular file, a file too large to edit, and any change to a protected path or to an execution
surface not opted in (a surface opted in is marked on its request, for the policy to ask about
each time). The same guards run
again when the tool runs: this is the early answer, the jail stays the second line of defence.
"""

from __future__ import annotations

import os
import posixpath
import stat
from collections.abc import Callable, Mapping
from typing import Any, Literal

from invokit.builtin.filesystem._jail import Jail, symlink_denied
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.builtin.filesystem._protected import ProtectedPaths
from invokit.builtin.filesystem._surfaces import SurfaceGuard
from invokit.builtin.filesystem._writing import MAX_EDIT_BYTES
from invokit.exceptions import ToolFailed
from invokit.permissions import FileDelete, FileRead, FileWrite, PermissionRequest

__all__ = ["Final", "Preflight"]

Final = Literal["content", "directory", "entry"]
"""How a tool uses the last component: its content (a regular file, never a link), as a
directory (never a link), or as an entry (a link is the link itself)."""

Declare = Callable[[Mapping[str, Any]], list[PermissionRequest]]


class Preflight:
    """The static checks of one toolset, over its jail, its protected paths and its execution
    surfaces."""

    def __init__(
        self,
        jail: Jail,
        protected: ProtectedPaths,
        *,
        surfaces: SurfaceGuard,
        absolute: bool = False,
    ) -> None:
        self.jail = jail
        self.protected = protected
        self.surfaces = surfaces
        self.absolute = absolute
        """Permission requests name paths absolute (``/srv/docs/a.md``), not root-relative."""

    def named(self, path: str) -> str:
        """``path`` (canonical, root-relative) as permission requests name it."""
        if not self.absolute:
            return path
        return self.jail.root if path == "." else posixpath.join(self.jail.root, path)

    # -- request builders, one per kind of tool --------------------------------------------

    def reads(self, final: Final, *, default: str | None = None) -> Declare:
        """``FileRead(path)`` after checking ``path`` (``default`` when it is left out)."""

        def declare(args: Mapping[str, Any]) -> list[PermissionRequest]:
            path = args["path"] if default is None else args.get("path", default)
            return [FileRead(path=self.named(self.check(path, final)))]

        return declare

    def writes(self, final: Final, action: str, *, read_too: bool = False) -> Declare:
        """``FileWrite(path)`` (after ``FileRead`` when ``read_too``), refused for a protected
        path."""
        max_size = MAX_EDIT_BYTES if read_too else None

        def declare(args: Mapping[str, Any]) -> list[PermissionRequest]:
            checked = self.check(args["path"], final, change=action, max_size=max_size)
            path, surface = self.named(checked), self.surfaces.check_change(checked, action)
            if read_too:
                return [FileRead(path=path), FileWrite(path=path, surface=surface)]
            return [FileWrite(path=path, surface=surface)]

        return declare

    def deletes(self) -> Declare:
        """``FileDelete(path)``, refused for a protected path or a folder holding one."""

        def declare(args: Mapping[str, Any]) -> list[PermissionRequest]:
            path = self.check(args["path"], "entry", change="delete")
            surface = self.surfaces.check_change(path, "delete")
            return [FileDelete(path=self.named(path), surface=surface)]

        return declare

    def moves(self) -> Declare:
        """``FileDelete(path)`` and ``FileWrite(destination)``, neither of them protected."""

        def declare(args: Mapping[str, Any]) -> list[PermissionRequest]:
            source = self.check(args["path"], "entry", change="move away")
            target = self.check(args["destination"], "entry", change="move onto")
            away = self.surfaces.check_change(source, "move away")
            onto = self.surfaces.check_change(target, "move onto")
            return [
                FileDelete(path=self.named(source), surface=away),
                FileWrite(path=self.named(target), surface=onto),
            ]

        return declare

    # -- the checks ------------------------------------------------------------------------

    def check(
        self, path: Any, final: Final, *, change: str | None = None, max_size: int | None = None
    ) -> str:
        """The canonical spelling of ``path``, once nothing known now refuses it.

        Args:
            path: the root-relative path a model gave.
            final: how the tool uses the last component.
            change: what the tool does to the entry, when it changes it (protected paths).
            max_size: the most bytes the file may hold (``edit``).

        Raises:
            AccessDenied: an invalid path, a link on the way, a protected path changed.
            ToolFailed: what the tool would fail with anyway (a directory where a file is
                needed, a file too large, a root that cannot be opened).
        """
        if not isinstance(path, str):  # validated input is a string; be safe all the same
            return str(path)
        parts = split_relative(path)
        if change is not None:
            self.protected.check_change(path, change)
            self.surfaces.check_change(path, change)
        self._walk(parts, final, max_size)
        return display(parts)

    def check_change(self, path: str, action: str) -> None:
        """The protected-path and execution-surface rules alone: the run-time second line of
        defence."""
        self.protected.check_change(path, action)
        self.surfaces.check_change(path, action)

    def _walk(self, parts: tuple[str, ...], final: Final, max_size: int | None) -> None:
        self.jail.root_fd()  # a root that cannot be opened is the answer now
        if not parts:
            return
        status = self._final_status(parts)
        if status is None or final == "entry":
            return
        mode = status.st_mode
        if stat.S_ISLNK(mode):
            raise symlink_denied(display(parts))
        if final == "content":
            shown = display(parts)
            self.jail.require_content_file(status, shown)
            if max_size is not None and status.st_size > max_size:
                raise ToolFailed(
                    f"{shown!r} is larger than {max_size} bytes; edit refuses it",
                    kind="too_large",
                    data={"path": shown},
                )

    def _final_status(self, parts: tuple[str, ...]) -> os.stat_result | None:
        """The last component's ``lstat``, reached through the jail one component at a time
        (linear in the depth; a path resolved from the root per level would be quadratic).

        ``None`` when something on the way is missing, not a directory or unreadable: the tool
        says which when it runs. A link on the way is refused (``AccessDenied``).
        """
        try:
            parent = self.jail.open_dir(parts[:-1])
        except ToolFailed:  # not AccessDenied, which a link on the way raises
            return None
        try:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(parent)
