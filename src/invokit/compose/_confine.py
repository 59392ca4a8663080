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
lifts them. Without ``pyseccomp`` or ``libseccomp`` both are ``None``: the sandbox still holds
through its namespaces, the unprivileged uid and ``RLIMIT_NPROC``, and :func:`seccomp_missing`
says why.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
from typing import Any

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
