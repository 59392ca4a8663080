"""Root-relative path strings: parsed into components, never expanded, never resolved.

A path a model gives is data, not a shell word: ``~`` and ``$HOME`` are ordinary names, and the
only separator is ``/``. Parsing refuses what can never name something inside the root (``..``,
absolute paths, NUL bytes, names the kernel would reject as too long) with an
:class:`~invokit.exceptions.AccessDenied` that says why; everything else is left to the
component-by-component resolution in :mod:`._jail`, which is what actually keeps paths inside.

``..`` is resolved by name, as the policy resolves it (``src/../README.md`` is ``README.md``),
before anything touches the file system: a link is never followed to find a parent, and a path
whose ``..`` would climb above the root is refused.
"""

from __future__ import annotations

import os

from invokit.exceptions import AccessDenied

__all__ = ["MAX_NAME_BYTES", "MAX_PATH_BYTES", "denied", "display", "split_relative"]

MAX_NAME_BYTES = 255
"""Longest file name Linux file systems accept (``NAME_MAX``)."""
MAX_PATH_BYTES = 4095
"""Longest path the kernel resolves in one call (``PATH_MAX`` less the NUL)."""


def denied(path: str, reason: str, message: str) -> AccessDenied:
    """An :class:`AccessDenied` for ``path`` whose ``data`` names the reason as a short code."""
    return AccessDenied(message, data={"path": path, "reason": reason})


def split_relative(path: str) -> tuple[str, ...]:
    """Split a root-relative path into its components.

    Empty components and ``.`` are dropped, so ``""``, ``"."`` and ``"./"`` all name the root;
    ``..`` removes the component before it (``src/../README.md`` is ``README.md``).

    Raises:
        AccessDenied: the path is absolute, climbs above the root with ``..``, holds a NUL byte, cannot be
            encoded for the file system, or is longer than the kernel allows.
    """
    if "\x00" in path:
        raise denied(path, "nul_byte", "Path contains a NUL byte; paths are plain names")
    if path.startswith("/"):
        raise denied(
            path,
            "absolute",
            f"Absolute path {path!r} refused: give a path relative to the root directory",
        )
    try:
        encoded = os.fsencode(path)
    except UnicodeEncodeError:
        raise denied(path, "unencodable", "Path cannot be encoded as a file name") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise denied(
            path, "too_long", f"Path is {len(encoded)} bytes; the limit is {MAX_PATH_BYTES}"
        )
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise denied(
                    path,
                    "parent_reference",
                    f"Path {path!r} climbs above the root directory with '..'; give a path "
                    "inside the root (relative to it, without leading '..')",
                )
            parts.pop()
            continue
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise denied(
                path,
                "too_long",
                f"A component of {path!r} is longer than {MAX_NAME_BYTES} bytes",
            )
        parts.append(part)
    return tuple(parts)


def display(parts: tuple[str, ...]) -> str:
    """The canonical root-relative spelling of ``parts`` (``"."`` for the root)."""
    return "/".join(parts) if parts else "."
