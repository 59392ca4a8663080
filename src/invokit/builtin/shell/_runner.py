"""Running one process: closed stdin, capped streaming output, a deadline, a whole-tree kill.

Both output streams are read as they are produced, keeping at most ``max_output`` bytes of each
(its first half and its last half) and counting the rest, which is read and dropped so the child
never blocks on a full pipe and memory stays bounded however much it writes. When the deadline
passes, or the caller is cancelled, or (with ``reap_after_exit``) the program exits leaving
others behind, ``kill_tree`` is called in a worker thread, so that its scan of the process table
never blocks the event loop; it runs under a shielded scope so that cancellation cannot leave
processes running.
"""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream

__all__ = ["KillTree", "ProcessOutcome", "run_process"]

# After the program exits and its leftovers are killed, how long the pipes may take to drain.
_DRAIN_GRACE = 2.0

KillTree = Callable[[int, bool], object]
"""Kills the tree of the process ``pid``; the flag says whether ``pid`` is still unreaped."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessOutcome:
    """How a process run ended and what it wrote."""

    returncode: int | None
    """The exit status as :mod:`subprocess` reports it (negative: killed by that signal)."""
    stdout: bytes
    """Standard output: whole, or when longer than ``max_output`` its first and last bytes."""
    stderr: bytes
    """Standard error, likewise."""
    stdout_total: int
    """How many bytes the process wrote to standard output in all."""
    stderr_total: int
    """How many bytes the process wrote to standard error in all."""
    timed_out: bool
    """Whether the deadline passed and the process tree was killed."""
    duration: float
    """Seconds from start to the end of the run."""
    stdout_head: int = 0
    """How many bytes at the start of ``stdout`` are its head: when output was dropped, it was
    dropped right there (``stdout_total - len(stdout)`` bytes of it)."""
    stderr_head: int = 0
    """Likewise for ``stderr``."""


class _Capture:
    """One stream: its first ``limit - limit // 2`` bytes and its last ``limit // 2``."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit - limit // 2
        self.tail_limit = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    async def pump(self, stream: ByteReceiveStream) -> None:
        async for chunk in stream:
            self.total += len(chunk)
            room = self.head_limit - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk and self.tail_limit:
                self.tail += chunk[-self.tail_limit :]
                excess = len(self.tail) - self.tail_limit
                if excess > 0:
                    del self.tail[:excess]  # (a bytearray drops its front in O(1))


async def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    time_limit: float | None,
    max_output: int,
    kill_tree: KillTree,
    pass_fds: Sequence[int] = (),
    reap_after_exit: bool = True,
) -> ProcessOutcome:
    """Run ``argv`` to completion or deadline.

    Args:
        argv: the program and its arguments (no shell).
        env: the whole environment of the process.
        cwd: where it starts.
        time_limit: seconds before the tree is killed; ``None`` for no deadline.
        max_output: bytes kept per stream (half from its start, half from its end).
        kill_tree: kills the process and everything it started; called in a worker thread.
        pass_fds: descriptors the process inherits.
        reap_after_exit: whether to call ``kill_tree`` once the program has exited; ``False``
            when nothing it started can outlive it (a PID namespace that dies with it).

    Raises:
        OSError: the program could not be started.
    """
    started = time.monotonic()
    # Shielded: a cancellation while the process is being set up would leave it started but
    # unknown to us (asyncio then kills only its pid, and what it started lives on); once it
    # is open, the cancellation lands inside the ``try`` below, which kills the whole tree.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    out, err = _Capture(max_output), _Capture(max_output)
    try:
        with anyio.move_on_after(math.inf if time_limit is None else time_limit) as deadline:
            async with anyio.create_task_group() as group:
                assert process.stdout is not None
                assert process.stderr is not None
                group.start_soon(out.pump, process.stdout)
                group.start_soon(err.pump, process.stderr)
                await process.wait()
                if reap_after_exit:
                    # The program is done; nothing it started may outlive the call (or hold
                    # the pipes open and keep us reading).
                    await anyio.to_thread.run_sync(kill_tree, process.pid, False)
                # Whatever still holds the pipes and escaped the kill must not hang the call.
                group.cancel_scope.deadline = anyio.current_time() + _DRAIN_GRACE
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                await anyio.to_thread.run_sync(kill_tree, process.pid, True)
            await process.wait()
            await process.aclose()
    return ProcessOutcome(
        returncode=process.returncode,
        stdout=bytes(out.head + out.tail),
        stderr=bytes(err.head + err.tail),
        stdout_head=len(out.head),
        stderr_head=len(err.head),
        stdout_total=out.total,
        stderr_total=err.total,
        timed_out=deadline.cancelled_caught,
        duration=time.monotonic() - started,
    )
