"""Bubblewrap: finding it, and the argv that wraps a command in it.

The sandbox shows the command a read-only view of the system directories, the root folder
(writable or read-only), a private ``/tmp``, fresh ``/dev`` and ``/proc``, and nothing else of
the host's files. It gets new PID, IPC and UTS namespaces, no network unless allowed, a new
session (no terminal injection) and dies with its parent. Killing bwrap's first process ends the
PID namespace, and the kernel then kills everything inside it, ``setsid`` or not. The command
holds no capability (a new user namespace, every capability dropped), so a caller running as
root cannot remount the read-only folders from inside.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from invokit._processes import which_outside

__all__ = [
    "BwrapStatus",
    "bwrap_argv",
    "find_bwrap",
    "privilege_drops",
    "probe_done",
    "read_bwrap_status",
    "start_probe",
]

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
"""Host directories shown read-only inside the sandbox (symlinks, as on merged-/usr, stay links)."""

_PROBE_TIMEOUT = 10.0


_PRIVILEGE_DROPS = (
    # A new user namespace with every capability dropped: even when invokit runs as root, the
    # command cannot remount the read-only system folders, mount, or load anything.
    ("--unshare-user", "--cap-drop", "ALL"),
    # Where user namespaces are off (some containers), dropping every capability still keeps
    # a root caller from remounting; without it, root inside bubblewrap keeps CAP_SYS_ADMIN.
    ("--cap-drop", "ALL"),
)
_NO_CAPABILITIES = r"grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status"


@functools.cache
def _probe() -> tuple[str, tuple[str, ...]] | None:
    found = which_outside("bwrap")  # never a relative PATH entry's (the current folder)
    if found is None:
        return None
    for drops in _PRIVILEGE_DROPS:
        probe = [found, "--ro-bind", "/", "/", "--proc", "/proc", *drops]
        probe += ["--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session"]
        probe += ["--", "/bin/sh", "-c", _NO_CAPABILITIES]
        try:
            done = subprocess.run(probe, capture_output=True, timeout=_PROBE_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode == 0:
            return found, drops
    return None


_PROBING = threading.Lock()


def _probed() -> tuple[str, tuple[str, ...]] | None:
    # One probe however many threads ask at once (functools.cache alone would run several).
    with _PROBING:
        return _probe()


def probe_done() -> bool:
    """Whether the probe's answer is known (so :func:`find_bwrap` returns at once)."""
    return _probe.cache_info().currsize > 0


def start_probe() -> None:
    """Start the probe in a background thread, so that the first call's preflight (on the
    event loop) finds the answer ready instead of starting a sandbox itself."""
    threading.Thread(target=_probed, name="invokit-bwrap-probe", daemon=True).start()


def find_bwrap() -> str | None:
    """The path of a bubblewrap that can actually create a sandbox here, or ``None``.

    Being installed is not enough (user namespaces may be disabled, a container may forbid
    mounts), so a trivial sandbox is started once per process and the answer is cached. The
    probe also proves that the sandboxed process holds no capability at all.
    """
    probed = _probed()
    return None if probed is None else probed[0]


def privilege_drops() -> tuple[str, ...]:
    """The bubblewrap flags that leave the command without privileges (see the probe)."""
    probed = _probed()
    return () if probed is None else probed[1]


def bwrap_argv(
    bwrap: str,
    command: Sequence[str],
    *,
    root: Path,
    cwd: Path,
    writable: bool,
    network: bool,
    expose: Sequence[Path] = (),
    protect: Sequence[str] = (),
    status_fd: int | None = None,
) -> list[str]:
    """The argv that runs ``command`` inside a sandbox.

    Args:
        bwrap: the bubblewrap executable.
        command: the program (an absolute path visible inside) and its arguments.
        root: the folder the command may work in; shown at the same path inside.
        cwd: where the command starts (inside ``root``).
        writable: whether ``root`` is writable inside.
        network: whether the host's network is shared.
        expose: more host paths to show read-only (a toolchain outside the system dirs).
        protect: mount options that follow the root's (protected paths kept read-only).
        status_fd: a file descriptor for bubblewrap's JSON status (child pid, exit code).
    """
    argv = [bwrap, *_system_mounts()]
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for extra in expose:
        argv += ["--ro-bind", str(extra), str(extra)]
    argv += ["--bind" if writable else "--ro-bind", str(root), str(root)]
    argv += protect
    argv += [*privilege_drops(), "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try"]
    if network:
        # resolv.conf is often a link into /run, which is otherwise not shown.
        argv += ["--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
    else:
        argv += ["--unshare-net"]
    argv += ["--die-with-parent", "--new-session", "--chdir", str(cwd)]
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
    return [*argv, "--", *command]


@functools.cache
def _system_mounts() -> tuple[str, ...]:
    """The mounts of :data:`SYSTEM_PATHS` (read once per process: the host's layout)."""
    mounts: list[str] = []
    for system_path in SYSTEM_PATHS:
        path = Path(system_path)
        if path.is_symlink():
            mounts += ["--symlink", os.readlink(path), system_path]
        elif path.is_dir():
            mounts += ["--ro-bind", system_path, system_path]
    return tuple(mounts)


@dataclass(frozen=True, kw_only=True, slots=True)
class BwrapStatus:
    """What bubblewrap reported about the command it ran."""

    child_pid: int | None
    """The host pid of the sandbox's first process, once bubblewrap created it."""
    exit_code: int | None
    """The command's exit code (128 + N when killed by signal N); ``None`` when the command
    never ran or bubblewrap was killed first, so a sandbox that failed to set up shows here."""


def read_bwrap_status(text: str) -> BwrapStatus:
    """Parse the JSON objects bubblewrap wrote to its status descriptor.

    Bubblewrap writes one object per line: ``{"child-pid": N, ...}`` as soon as it has created
    the sandbox's first process (before setting the sandbox up), and ``{"exit-code": N}`` when
    the command ends.
    """
    child_pid: int | None = None
    exit_code: int | None = None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("child-pid"), int):
            child_pid = record["child-pid"]
        if isinstance(record.get("exit-code"), int):
            exit_code = record["exit-code"]
    return BwrapStatus(child_pid=child_pid, exit_code=exit_code)
