"""The user's state directory, where approvals and audit logs live.

``$INVOKIT_STATE_DIR`` if set, else ``$XDG_STATE_HOME/invokit``, else
``~/.local/state/invokit``. It is created private (0700) and its files private (0600): they
record who approved what, and must never sit inside a directory a tool may write.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
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
    """Create ``path`` (and parents) if missing, with mode 0700. An existing directory is used
    as it is only if this user owns it and no one else can replace what is in it.

    Raises:
        PermissionError: the directory is a symlink, belongs to another user, or others may
            write in it (without the sticky bit that stops them replacing our files).
    """
    if path.is_symlink():
        raise PermissionError(f"{path} is a symbolic link; the state directory must be a real one")
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.chmod(0o700)  # mkdir's mode is filtered by the umask: say it again
        return path
    info = os.stat(path)
    _check_owner(path, info.st_uid)
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise PermissionError(
            f"{path} can be written by other users; approvals and audit logs there could be "
            f"forged (chmod 700 {path})"
        )
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if it does not exist (never truncating it). An
    existing one must belong to this user and not be a symlink; it is made 0600 if looser."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        info = os.fstat(fd)
        _check_owner(path, info.st_uid)
        if info.st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def read_private(path: Path) -> str | None:
    """The text of the private file ``path``, or ``None`` when there is none.

    Raises:
        PermissionError: ``path`` is a symbolic link or belongs to another user.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            raise PermissionError(f"{path} is a symbolic link; it is not used") from None
        raise exc
    with os.fdopen(fd, "rb") as handle:
        _check_owner(path, os.fstat(handle.fileno()).st_uid)
        return handle.read().decode("utf-8")


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (mode 0600, in a private directory).

    Another process reads the old file or the new one, never half of one; a crash leaves the
    old one.
    """
    private_dir(path.parent)
    replace_file(path, text.encode("utf-8"))


def replace_file(path: Path, content: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` (or a link at ``path``, which is replaced, never written through) with
    ``content`` atomically: a new file beside it, synced, then moved over it."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _check_owner(path: Path, uid: int) -> None:
    if hasattr(os, "getuid") and uid != os.getuid():
        raise PermissionError(f"{path} belongs to another user (uid {uid}); it is not used")


def store_file(
    path: str | os.PathLike[str] | None,
    default_name: str,
    forbidden_roots: Iterable[str | os.PathLike[str]],
    what: str,
) -> Path:
    """The private file a store keeps ``what`` in: ``path``, or ``default_name`` in the state
    directory; created 0600 if missing.

    Raises:
        ValueError: the file would sit inside one of ``forbidden_roots`` (directories tools may
            write, where they could forge or erase it).
    """
    file = Path(path).expanduser() if path is not None else state_dir() / default_name
    blocked = inside_any(file, forbidden_roots)
    if blocked is not None:
        raise ValueError(
            f"refusing to keep {what} at {file}: it is inside {blocked}, which tools may write; "
            "choose a path outside every tool root (the default is the user's state directory)"
        )
    return private_file(file)


def inside_any(path: Path, roots: Iterable[str | os.PathLike[str]]) -> Path | None:
    """The first of ``roots`` that contains ``path`` (both resolved), or ``None``."""
    resolved = path.expanduser().resolve()
    for root in roots:
        base = Path(root).expanduser().resolve()
        if resolved == base or base in resolved.parents:
            return base
    return None
