"""A second script runtime: real CPython, in a bubblewrap sandbox, for code Monty cannot run.

The sandbox shows only the system's ``/usr`` and the Python installation (read-only), a
private ``/tmp`` and ``/dev/shm`` (in memory, each at most the script's memory limit), a
read-only ``/dev`` and ``/proc``: no project files, no ``/etc``, no network, with memory and CPU
time limited. What it may not do is refused by the kernel, never by code the script can reach:
bubblewrap itself starts with an empty environment (so no ``/proc/*/environ`` shows the
host's), the script runs as uid 65534 in its own user namespace with no capabilities, seccomp
filters refuse new processes, ``exec`` and sockets (see :mod:`invokit.compose._confine`), and
``RLIMIT_NPROC`` is 0 (it binds only a non-root host uid: bubblewrap is started as uid 65534
when invokit runs as root and that uid can reach the interpreter). An audit hook in the shim
only turns the refusals into clearer messages. Tool calls
travel as JSON lines over the process's pipes to the host, which runs each through the
executor. This runtime cannot keep a paused script: a call that needs an approval is answered
inline when the executor has an approver, and otherwise ends the script with
``approval_unavailable``.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from invokit.compose._confine import (
    NOBODY,
    host_user,
    memfd,
    no_exec,
    no_new_processes,
    say_unfiltered,
)
from invokit.compose._python_shim import SHIM
from invokit.compose._sandbox import (
    Crashed,
    Finished,
    PendingCall,
    Raise,
    ScriptLimits,
    Step,
    cut_print,
)


def _mounts(python: str) -> list[str]:
    """Read-only system folders (links kept as links) and the installation of ``python``."""
    argv: list[str] = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "lib", "lib64", "sbin"):
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    prefix = Path(python).resolve().parent.parent  # <prefix>/bin/python3.x
    if prefix != Path("/usr") and not str(prefix).startswith("/usr/"):
        argv += ["--ro-bind", str(prefix), str(prefix)]
    return argv


class PythonSandbox:
    """Runs compose scripts in CPython under bubblewrap (Linux).

    Args:
        python: the interpreter; default: this process's base interpreter.
    """

    name = "python"

    def __init__(self, *, python: str | None = None) -> None:
        self.python = python or os.path.realpath(getattr(sys, "_base_executable", sys.executable))

    def argv(self, tmp_bytes: int = 64 << 20, seccomp_fd: int | None = None) -> list[str]:
        """The sandbox's command line; ``tmp_bytes``: the size of each in-memory folder the
        script may write (``/tmp``, ``/dev/shm``), which count against the host's memory;
        ``seccomp_fd``: a descriptor holding the BPF program bubblewrap loads."""
        from invokit.builtin.shell import find_bwrap
        from invokit.builtin.shell.internal import privilege_drops

        bwrap = find_bwrap()
        if bwrap is None:
            raise RuntimeError("the python compose runtime needs a working bubblewrap (bwrap)")
        drops = privilege_drops()
        if "--unshare-user" in drops:
            drops = (*drops, "--uid", str(NOBODY), "--gid", str(NOBODY))
        if seccomp_fd is not None:
            drops = (*drops, "--seccomp", str(seccomp_fd))
        return [
            bwrap,
            *_mounts(self.python),
            "--dev", "/dev", "--proc", "/proc",
            "--size", str(tmp_bytes), "--tmpfs", "/tmp",
            "--size", str(tmp_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            # bubblewrap's own root is an unbounded tmpfs in host memory: read-only, so that
            # only the bounded /tmp and /dev/shm take writes.
            "--remount-ro", "/",
            "--chdir", "/tmp",
            *drops,
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session",
            "--clearenv", "--setenv", "PYTHONIOENCODING", "utf-8",
            "--", self.python, "-I", "-S", "-c", SHIM,
        ]  # fmt: skip

    def run(self, code: str, functions: Mapping[str, Any], limits: ScriptLimits) -> PythonRun:
        return PythonRun(self, code, functions, limits)

    async def restore(
        self,
        state: bytes,
        code: str,
        functions: Mapping[str, Any],
        limits: ScriptLimits,
        printed: str,
    ) -> tuple[PythonRun, Step]:
        raise RuntimeError("the python compose runtime cannot continue a paused script")

    async def aclose(self) -> None:
        return None


class PythonRun:
    """One script in one sandboxed CPython process."""

    def __init__(
        self,
        sandbox: PythonSandbox,
        code: str,
        functions: Mapping[str, Any],
        limits: ScriptLimits,
    ) -> None:
        self._sandbox = sandbox
        self._code = code
        self._functions = functions
        self._limits = limits
        self._process: Process | None = None
        self._lines: Any = None
        self._printed: list[str] = []
        self._size = 0
        self._used = 0.0  # the script's own running time so far

    async def start(self) -> Step:
        program = no_new_processes()
        if program is None:
            say_unfiltered()
        seccomp_fd = memfd(program) if program is not None else None
        user = await host_user(self._sandbox.python)
        try:
            self._process = await anyio.open_process(
                self._sandbox.argv(self._limits.max_memory, seccomp_fd),
                # The script's stderr is its print() (the shim's); what it writes to the file
                # itself is dropped, never mixed into the host's stderr (an MCP client's log).
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                # bubblewrap's own init (pid 1 inside) keeps the environment it was started
                # with, readable at /proc/1/environ: it gets none.
                env={},
                cwd="/",
                pass_fds=() if seccomp_fd is None else (seccomp_fd,),
                # A non-root host uid, so RLIMIT_NPROC binds (the kernel exempts uid 0).
                user=user,
                group=user,
                extra_groups=() if user is not None else None,
            )
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        assert self._process.stdout is not None
        from anyio.streams.text import TextReceiveStream

        # A message is at most the script's memory: a longer line (bytes written to the pipe
        # past the protocol, without a newline) is not gathered without end.
        self._lines = _lines(
            TextReceiveStream(self._process.stdout), max(self._limits.max_memory, 1 << 20)
        )
        await self._send(
            {
                "code": self._code,
                "functions": {
                    name: list(getattr(f, "params", ())) for name, f in self._functions.items()
                },
                "memory": self._limits.max_memory,
                "seccomp": base64.b64encode(no_exec() or b"").decode("ascii"),
                "seconds": max(1, int(self._limits.max_seconds + 0.999)),
            }
        )
        return await self._next()

    async def answer(self, reply: Any) -> Step:
        if isinstance(reply, Raise):
            await self._send({"raise": reply.error_type, "message": reply.message})
        else:
            await self._send({"value": reply})
        return await self._next()

    def dump(self) -> bytes | None:
        return None

    def printed(self) -> str:
        return "".join(self._printed)

    async def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.returncode is None:
                process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
                await process.aclose()

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        await self._process.stdin.send((json.dumps(message) + "\n").encode())

    async def _next(self) -> Step:
        left = max(self._limits.max_seconds - self._used, 0.0)
        start = anyio.current_time()
        step: Step
        with anyio.move_on_after(left + 0.5) as waited:
            while True:
                try:
                    line = await anext(self._lines, None)
                except _TooLong as exc:
                    step = Crashed(
                        kind="script_error",
                        error_type="RuntimeError",
                        message=f"the script wrote more than {exc.args[0]} characters as one "
                        "message to the host; it was stopped",
                    )
                    break
                if line is None:
                    if await self._out_of_cpu():
                        step = Crashed(
                            kind="script_timeout",
                            error_type="TimeoutError",
                            message="the script used more than its "
                            f"{self._limits.max_seconds:g} s of CPU time",
                        )
                        break
                    step = Crashed(
                        kind="script_error",
                        error_type="RuntimeError",
                        message="the script's process ended without an answer (a limit was "
                        "reached: memory, CPU time or processes)",
                    )
                    break
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    # Written past the shim (nested past the parser's depth, or not JSON).
                    step = Crashed(
                        kind="script_error",
                        error_type="RuntimeError",
                        message="the script wrote a message the host cannot read; it was stopped",
                    )
                    break
                if "print" in message:
                    self._print(message["print"])
                    continue
                step = self._step(message)
                break
        self._used += anyio.current_time() - start
        if waited.cancelled_caught:
            return Crashed(
                kind="script_timeout",
                error_type="TimeoutError",
                message=f"the script ran longer than {self._limits.max_seconds:g} s",
            )
        return step

    async def _out_of_cpu(self) -> bool:
        """Whether the script's process was killed at its CPU time limit (SIGXCPU, then
        SIGKILL; bubblewrap exits with 128 + the signal)."""
        if self._process is None:
            return False
        with anyio.move_on_after(1):
            await self._process.wait()
        code = self._process.returncode
        killed = (signal.SIGXCPU, signal.SIGKILL)
        return code is not None and (-code in killed or code - 128 in killed)

    def _step(self, message: dict[str, Any]) -> Step:
        if "call" in message:
            return PendingCall(
                function=message["call"],
                args=tuple(message.get("args") or ()),
                kwargs=dict(message.get("kwargs") or {}),
            )
        if "done" in message:
            return Finished(value=message["done"])
        error_type = str(message.get("error", "RuntimeError"))
        kind: Any = {
            "SyntaxError": "script_syntax_error",
            "MemoryError": "script_memory_exceeded",
        }.get(error_type, "script_error")
        return Crashed(
            kind=kind,
            error_type=error_type,
            message=str(message.get("message", "")),
            line=message.get("line"),
        )

    def _print(self, text: str) -> None:
        kept = cut_print(text, self._limits.max_print_chars - self._size)
        if kept:
            self._printed.append(kept)
        self._size += len(text)


class _TooLong(Exception):
    """A line longer than the limit (its only argument)."""


async def _lines(stream: Any, limit: int) -> Any:
    """Whole lines from a text stream, each at most ``limit`` characters (else
    :class:`_TooLong`); a chunk is searched for the newline once."""
    parts: list[str] = []
    size = 0
    async for chunk in stream:
        while (end := chunk.find("\n")) >= 0:
            if size + end > limit:
                raise _TooLong(limit)
            parts.append(chunk[:end])
            yield "".join(parts)
            parts, size, chunk = [], 0, chunk[end + 1 :]
        if chunk:
            size += len(chunk)
            if size > limit:
                raise _TooLong(limit)
            parts.append(chunk)
    if parts:
        yield "".join(parts)
