"""Killing everything a command started, when no sandbox does it for us.

Without a PID namespace there is no single handle on a process tree: a child can leave the
process group, call ``setsid``, and be reparented to init once its parent exits. So the command
is started in its own session with a unique marker in its environment, and the reaper kills, in
rounds until none are left, every process that is in that session or process group (even after
the command itself exited), descends from the command, or carries the marker. Only a process
that both left the session and wiped its environment escapes; the tool says in its result that
this weaker containment was used.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["MARKER_VARIABLE", "kill_process_tree"]

MARKER_VARIABLE = "INVOKIT_SHELL_RUN"
"""The environment variable that tags every process of one command run."""

_ROUNDS = 20


@dataclass(frozen=True, kw_only=True, slots=True)
class _Proc:
    pid: int
    ppid: int
    pgrp: int
    session: int


def kill_process_tree(leader: int, *, marker: str, leader_alive: bool) -> set[int]:
    """SIGKILL the command ``leader`` and everything it started; the pids signalled.

    Args:
        leader: the pid of the command, started in a new session (so also its pgid and sid).
        marker: the value of :data:`MARKER_VARIABLE` in the command's environment.
        leader_alive: whether ``leader`` is still our unreaped child; once reaped its pid may
            belong to someone else, so it is only signalled while alive.
    """
    killed: set[int] = set()
    if leader_alive:
        _kill(leader)
        _kill(leader, group=True)
        killed.add(leader)
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    own = os.getpid()
    for _ in range(_ROUNDS):
        found = _find(leader, leader_alive, needle, own) - killed
        if not found:
            break
        for pid in found:
            _kill(pid)
        killed |= found
    return killed


def _find(leader: int, leader_alive: bool, needle: bytes, own: int) -> set[int]:
    """Processes of the run: those carrying the marker, those in the leader's session or
    process group, and their descendants (the leader's own only while it is alive)."""
    processes = {proc.pid: proc for proc in _processes() if proc.pid != own}
    chosen = {pid for pid in processes if _has_marker(pid, needle)}
    # Linux never hands out a pid while it still names a session or a process group, so these
    # match the run's processes even after the leader was reaped (a background job that wiped
    # its environment but stayed in the session).
    chosen |= {pid for pid, proc in processes.items() if leader in (proc.pgrp, proc.session)}
    # Descendants of anything chosen (a child that left the session but kept its parent).
    children: dict[int, list[int]] = {}
    for proc in processes.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    stack = [leader, *chosen] if leader_alive else [*chosen]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in chosen:
                chosen.add(child)
                stack.append(child)
    return chosen


def _processes() -> Iterator[_Proc]:
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return  # no procfs (not Linux): the process group kill is all there is
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        # The command name is in parentheses and may itself hold spaces and ")".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 4 or fields[0] == b"Z":
            continue
        yield _Proc(
            pid=int(entry.name), ppid=int(fields[1]), pgrp=int(fields[2]), session=int(fields[3])
        )


def _has_marker(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return needle in file.read().split(b"\0")
    except OSError:
        return False


def _kill(pid: int, *, group: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
