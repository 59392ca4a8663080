"""Every guard a shell command passes before it runs, decided without running anything.

:func:`check` is called twice for each command: by the tool's ``permissions()``, so that a
command that would be refused is refused before a policy or a person is asked about it, and again
when the tool runs, as the second line of defence. It takes the program's syntax, working
directory, allow rules, refused flags, sandbox availability and protected paths in that order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin._surfaces import FoundSurface
from invokit.builtin.shell._command import excerpt, parse_command, shown_argv
from invokit.builtin.shell._flags import find_refusal
from invokit.builtin.shell._protected import ProtectedMounts, protected_mounts
from invokit.builtin.shell._rules import Resolved
from invokit.builtin.shell._sandbox import SYSTEM_PATHS
from invokit.builtin.shell._scan import Scan, scan
from invokit.builtin.shell._settings import ShellSettings
from invokit.builtin.shell._surface_mounts import surface_mounts
from invokit.exceptions import AccessDenied, RetryWithFeedback, ToolFailed

__all__ = ["Checked", "check", "resolve_cwd"]

_MAX_CWD = 4096  # PATH_MAX


@dataclass(frozen=True, kw_only=True, slots=True)
class Checked:
    """A command that passed every guard, and how it will run."""

    argv: tuple[str, ...]
    """The command as the model gave it, split."""
    workdir: Path
    """Where it starts (resolved, inside the root)."""
    resolved: Resolved
    """The allow rule that admits it and the executable to run."""
    env: dict[str, str]
    """Its environment (before the per-run ``HOME`` and ``TMPDIR``)."""
    bwrap: str | None
    """The bubblewrap to run it in, or ``None`` for no sandbox."""
    mounts: ProtectedMounts
    """The read-only mounts that keep the protected paths and execution surfaces as they are."""
    surfaces: tuple[Path, ...] = ()
    """The execution surfaces mounted read-only."""
    opted_in: tuple[FoundSurface, ...] = ()
    """The execution surfaces the project opted in, left writable."""
    scanned: Scan | None = None
    """The walk of the root before the command (``None`` without mounts), to tell what the
    command created."""


def check(
    settings: ShellSettings,
    command: str | Sequence[str],
    cwd: str,
    *,
    bwrap: str | None,
    cache: SurfaceCache | None = None,
) -> Checked:
    """Check ``command`` against every guard that can be decided before it runs.

    Args:
        settings: the shell tool's configuration.
        command: the command the model gave.
        cwd: the working directory it gave, relative to the root.
        bwrap: the working bubblewrap, or ``None`` (``sandbox="off"``, or none works here).
        cache: the tool's cache of the root's surfaces (read anew when anything they were
            read from changed), or ``None`` to read them anew.

    Raises:
        RetryWithFeedback: shell syntax in a string, too many arguments, or a missing working
            directory.
        AccessDenied: the allow rules or the refused flags say no, cwd leaves the root, or
            protected paths exist and there is no sandbox to keep them read-only, or the root
            is too large to find every execution surface in it.
        ToolFailed: a sandbox is required and unavailable (``sandbox_unavailable``), or the
            program lives where the sandbox does not show it (``sandbox_failed``).
    """
    argv = parse_command(command)
    workdir = resolve_cwd(settings.root, cwd)
    env = settings.environment()
    resolved = settings.allow.check(argv, search_path=env["PATH"], root=settings.root, cwd=workdir)
    refusal = find_refusal(argv)
    if refusal is not None:
        argument = excerpt(refusal.argument)
        raise AccessDenied(
            f"{refusal.program}: {argument!r} is refused: it {refusal.reason}.",
            data={"argv": shown_argv(argv), "argument": argument, "reason": refusal.reason},
        )
    if bwrap is None and settings.sandbox == "required":
        raise ToolFailed(
            "This shell tool requires a sandbox and bubblewrap (bwrap) is not available; "
            "install the 'bubblewrap' package.",
            kind="sandbox_unavailable",
        )
    if bwrap is None and settings.protected:
        raise _unprotected(settings)
    if bwrap is not None:
        _check_visible(settings, resolved)
    # A read-only root needs no mounts on top; a writable one gets the protected paths and
    # the execution surfaces read-only over it.
    # Below the top, only a walk finds repositories and virtual environments; it is cached on
    # the folders' mtimes, and needed only where mounts will keep them read-only.
    deep = scan(str(settings.root)) if settings.writable and bwrap is not None else None
    # Decided again only when something it was decided from changed (see _surface_mounts).
    found = surface_mounts(
        settings.root, settings.allow_surfaces, deep, cache=cache, mounted=settings.writable
    )
    mounts = (
        protected_mounts(settings.root, settings.protected).joined(found.mounts)
        if settings.writable
        else ProtectedMounts(folders=(), entries=())
    )
    return Checked(
        argv=argv,
        workdir=workdir,
        resolved=resolved,
        env=env,
        bwrap=bwrap,
        mounts=mounts,
        surfaces=found.surfaces if settings.writable and bwrap is not None else (),
        opted_in=found.opted_in,
        scanned=deep,
    )


def resolve_cwd(root: Path, cwd: str) -> Path:
    """The directory ``cwd`` (relative to ``root``) names, refused if it leads outside.

    Symlinks are resolved and the result must still be inside ``root``, so a link pointing out
    of the root cannot be used as a working directory.

    Raises:
        AccessDenied: ``cwd`` is absolute, holds a NUL byte, or resolves outside the root.
        RetryWithFeedback: ``cwd`` is not an existing directory.
    """
    shown = excerpt(cwd)
    if "\0" in cwd or os.path.isabs(cwd) or cwd.startswith("~"):
        raise AccessDenied(
            f"cwd {shown!r} must be a path relative to the root", data={"cwd": shown}
        )
    if len(cwd) > _MAX_CWD:
        raise RetryWithFeedback(f"cwd has {len(cwd)} characters; at most {_MAX_CWD} are accepted")
    real, top = os.path.realpath(os.path.join(root, cwd)), str(root)
    resolved = Path(real)
    if real != top and not real.startswith(top + "/"):
        raise AccessDenied(f"cwd {shown!r} leads outside the root", data={"cwd": shown})
    if not resolved.is_dir():
        raise RetryWithFeedback(f"cwd {shown!r} is not a directory under the root")
    return resolved


def _check_visible(settings: ShellSettings, resolved: Resolved) -> None:
    """Refuse early a program the sandbox would not show, with the option that fixes it."""
    real = resolved.real_path
    places = (*SYSTEM_PATHS, str(settings.root), *map(str, settings.expose))
    if not any(real == place or real.startswith(place + "/") for place in places):
        raise ToolFailed(
            f"{resolved.executable} lives outside the folders the sandbox shows; add its folder "
            "to the shell tool's expose=[...] option.",
            kind="sandbox_failed",
        )


def _unprotected(settings: ShellSettings) -> AccessDenied:
    shown = ", ".join(str(path) for path in settings.protected)
    why = (
        "this shell tool is configured with sandbox='off'"
        if settings.sandbox == "off"
        else "bubblewrap (bwrap) is not installed or cannot create a sandbox here"
    )
    return AccessDenied(
        f"No command runs: {why}, and without a sandbox a command could rewrite or delete "
        f"the protected files that decide what may run ({shown}). Install bubblewrap (the "
        "'bubblewrap' package; unprivileged user namespaces must be allowed) so that they are "
        "mounted read-only, or use the filesystem tools, which refuse to change them.",
        data={"reason": "no_sandbox", "protected": [str(path) for path in settings.protected]},
    )
