"""The user's state directory, where approvals and audit logs live.

``$INVOKIT_STATE_DIR`` if set, else ``$XDG_STATE_HOME/invokit``, else
``~/.local/state/invokit``. It is created private (0700) and its files private (0600): they
record who approved what, and must never sit inside a directory a tool may write.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

ENV_VAR = "INVOKIT_STATE_DIR"


def state_dir(*, create: bool = True) -> Path:
    """The state directory, created with mode 0700 when ``create`` and missing."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        path = Path(configured).expanduser()
    else:
        xdg = os.environ.get("XDG_STATE_HOME")
        # The XDG spec says a relative value is invalid and must be ignored.
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "state"
        path = base / "invokit"
    if create:
        private_dir(path)
    return path


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if missing; a directory created here gets mode 0700."""
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is filtered by the umask; say it again so the result is exact.
        path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if it does not exist; never truncate it."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.close(fd)
    return path


def inside_any(path: Path, roots: Iterable[str | os.PathLike[str]]) -> Path | None:
    """The first of ``roots`` that contains ``path`` (both resolved), or ``None``."""
    resolved = path.expanduser().resolve()
    for root in roots:
        base = Path(root).expanduser().resolve()
        if resolved == base or base in resolved.parents:
            return base
    return None
