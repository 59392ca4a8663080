"""Protected paths: the files and folders inside the root that decide what may run.

The CLI's ``invokit.toml``, a policy file in use, invokit's state: no filesystem tool may write,
create, edit, delete or move one, nor move or delete a folder that holds one, nor put anything
in their place, whether they exist yet or not. Reading them stays allowed.

The rule is lexical, on root-relative components: the jail never follows a link, so the
components a model names are the only way to reach an entry, and a change to ``P`` touches a
protected ``Q`` exactly when one of them lies inside the other.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from invokit.builtin.filesystem._paths import display, split_relative
from invokit.exceptions import AccessDenied

__all__ = ["ProtectedPaths"]


class ProtectedPaths:
    """The protected entries of one root, as root-relative components.

    Relative paths are taken relative to the root. Each path is protected as written and as
    resolved (a protected link protects its target too); paths outside the root are ignored,
    since no filesystem tool can reach them. Resolution happens on first use, not when the
    toolset is defined.

    Args:
        root: the toolset's root directory.
        paths: the protected files and folders (existing or not).
    """

    def __init__(self, root: str | os.PathLike[str], paths: Iterable[str | os.PathLike[str]]):
        self.root = os.path.abspath(os.fspath(root))
        self.paths = tuple(os.fspath(path) for path in paths)
        self._parts: tuple[tuple[str, ...], ...] | None = None

    def __bool__(self) -> bool:
        return bool(self.paths)

    @property
    def parts(self) -> tuple[tuple[str, ...], ...]:
        """Every protected entry inside the root, as components below it (resolved once)."""
        if self._parts is None:
            self._parts = _relative_parts(self.root, self.paths)
        return self._parts

    def check_change(self, path: str, action: str) -> None:
        """Refuse changing the entry at ``path`` when it is, holds or lies in a protected one.

        Args:
            path: the root-relative path a tool would write, create, delete or move.
            action: what the tool would do, for the message (``"write"``, ``"move away"``).

        Raises:
            AccessDenied: ``path`` is protected, inside a protected folder, or a folder (the root
                included) that holds a protected entry; or ``path`` is not a valid path.
        """
        if not self.paths:
            return
        parts = split_relative(path)
        for protected in self.parts:
            if parts[: len(protected)] == protected or protected[: len(parts)] == parts:
                raise _protected_error(parts, protected, action)


def _protected_error(parts: tuple[str, ...], protected: tuple[str, ...], action: str) -> Exception:
    shown, held = display(parts), display(protected)
    if parts == protected:
        where = f"{shown!r} is protected"
    elif len(parts) > len(protected):
        where = f"{shown!r} lies inside the protected {held!r}"
    elif not parts:
        where = f"the root directory holds the protected {held!r}"
    else:
        where = f"{shown!r} holds the protected {held!r}"
    return AccessDenied(
        f"Refused to {action} {shown!r}: {where}. Protected paths decide what tools may run "
        "(configuration, policy, invokit's state), so no tool may create, change, move or "
        "delete them; a person edits them outside the agent.",
        data={"path": shown, "reason": "protected", "protected": held},
    )


def _relative_parts(root: str, paths: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    roots = {root, os.path.realpath(root)}
    found: dict[tuple[str, ...], None] = {}
    for path in paths:
        absolute = path if os.path.isabs(path) else os.path.join(root, path)
        absolute = os.path.abspath(absolute)
        spellings = {
            absolute,
            os.path.realpath(absolute),
            os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute)),
        }
        for spelling in spellings:
            for base in roots:
                relative = os.path.relpath(spelling, base)
                if relative == os.curdir:
                    found[()] = None
                elif relative != os.pardir and not relative.startswith(os.pardir + os.sep):
                    found[tuple(relative.split(os.sep))] = None
    return tuple(found)
