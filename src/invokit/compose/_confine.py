"""What the kernel refuses a CPython compose script, whatever the script does to its interpreter.

Two seccomp filters, built once per process with libseccomp (through ``pyseccomp``):

- :func:`no_new_processes` goes to bubblewrap (``--seccomp FD``), which installs it just before
  it starts the interpreter: no ``fork``/``vfork``/``clone`` of a process (threads stay
  possible), no ``clone3`` (so the C library falls back to ``clone``, whose flags are checked),
  no new namespaces, no ``ptrace``, no sockets, no ``io_uring`` (its operations bypass seccomp),
  no ``bpf``, ``keyctl``, ``mount`` or ``perf_event_open``.
- :func:`no_exec` is installed by the shim itself before it reads the script (bubblewrap must
  still ``execve`` the interpreter, so ``execve`` cannot be refused from the first filter).

Filters stack and can never be removed, so nothing a script changes in its own interpreter
lifts them. And :func:`host_user`: the unprivileged host uid bubblewrap starts as when invokit
runs as root, so that ``RLIMIT_NPROC`` binds. Without ``pyseccomp`` or ``libseccomp`` both are ``None``: the sandbox still holds
through its namespaces, the unprivileged uid and ``RLIMIT_NPROC``, and :func:`seccomp_missing`
says why.
"""

from __future__ import annotations

import errno
import functools
import importlib
import logging
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

logger = logging.getLogger("invokit.compose")

NOBODY = 65534
"""The uid and gid a script runs as, inside its user namespace (and on the host, when invokit
runs as root and that uid can reach the interpreter: the kernel exempts host uid 0 from
``RLIMIT_NPROC``)."""

_CLONE_THREAD = 0x00010000

_PROCESS_CALLS = ("fork", "vfork", "unshare", "setns", "ptrace", "process_vm_readv")
_MORE_REFUSED = (
    "process_vm_writev",
    "socket",
    "socketpair",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "perf_event_open",
    "userfaultfd",
    "personality",
)


@functools.cache
def _library() -> Any:
    try:
        library = importlib.import_module("pyseccomp")
        library.SyscallFilter(defaction=library.ALLOW)  # loads libseccomp itself
    except (ImportError, OSError, RuntimeError, AttributeError):
        return None
    return library


def seccomp_missing() -> str | None:
    """Why no seccomp filter is used here (``None``: filters are used)."""
    if _library() is None:
        return 'seccomp filters need pyseccomp and libseccomp (pip install "invokit[compose]")'
    return None


def _export(build: Any) -> bytes | None:
    library = _library()
    if library is None:
        return None
    refused = library.SyscallFilter(defaction=library.ALLOW)
    build(library, refused)
    # libseccomp writes to a file descriptor.
    with open(os.memfd_create("invokit-bpf"), "w+b") as out:
        refused.export_bpf(out)
        out.seek(0)
        return out.read()


def _processes(library: Any, refused: Any) -> None:
    deny = library.ERRNO(errno.EPERM)
    for name in (*_PROCESS_CALLS, *_MORE_REFUSED):
        refused.add_rule(deny, name)
    # clone of a thread (CLONE_THREAD set) stays allowed; every other clone is a new process.
    refused.add_rule(deny, "clone", library.Arg(0, library.MASKED_EQ, _CLONE_THREAD, 0))
    # clone3's flags are in memory seccomp cannot read: "not implemented" makes the C library
    # use clone, whose flags the rule above checks.
    refused.add_rule(library.ERRNO(errno.ENOSYS), "clone3")


def _exec(library: Any, refused: Any) -> None:
    deny = library.ERRNO(errno.EPERM)
    refused.add_rule(deny, "execve")
    refused.add_rule(deny, "execveat")


@functools.cache
def no_new_processes() -> bytes | None:
    """The BPF program bubblewrap loads before it starts the interpreter, or ``None``."""
    return _export(_processes)


@functools.cache
def no_exec() -> bytes | None:
    """The BPF program the shim loads before the script runs, or ``None``."""
    return _export(_exec)


@functools.cache
def say_unfiltered() -> None:
    """Say once, plainly, that scripts run without the seccomp filters."""
    logger.warning(
        "compose scripts run in CPython without seccomp filters: %s; namespaces, uid 65534 "
        "and RLIMIT_NPROC still apply",
        seccomp_missing(),
    )


def memfd(data: bytes) -> int:
    """A descriptor (inheritable, at offset 0) holding ``data``."""
    fd = os.memfd_create("invokit-seccomp", 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


async def host_user(python: str) -> int | None:
    """The host uid to start bubblewrap as: :data:`NOBODY` when invokit runs as root, that
    uid can run ``python``, and bubblewrap works for it (user namespaces for unprivileged
    users); ``None`` (this process's uid) otherwise."""
    if os.geteuid() != 0 or not _reachable(python):
        return None
    return NOBODY if await anyio.to_thread.run_sync(_nobody_probe) else None


@functools.cache
def _nobody_probe() -> bool:
    from invokit.builtin.shell import find_bwrap

    bwrap = find_bwrap()
    if bwrap is None:
        return False
    probe = [bwrap, "--ro-bind", "/", "/", "--unshare-user", "--uid", str(NOBODY)]
    probe += ["--gid", str(NOBODY), "--unshare-pid", "--die-with-parent", "--", "/bin/true"]
    try:
        done = subprocess.run(
            probe, env={}, cwd="/", user=NOBODY, group=NOBODY, extra_groups=(),
            capture_output=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _reachable(python: str) -> bool:
    """Whether any uid may reach and run ``python`` and read its installation (every folder
    above it searchable by others, the file executable by others)."""
    path = Path(python).resolve()
    try:
        if not path.stat().st_mode & stat.S_IXOTH:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)
    except OSError:
        return False
