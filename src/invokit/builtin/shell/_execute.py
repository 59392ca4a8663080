"""One shell call from start to end: check the command, pick the containment, run, report.

:func:`execute` takes a command and a working directory through every guard of
:func:`~._checks.check` (syntax, working directory, allow rules, refused flags, sandbox
availability, protected paths) again before anything runs, then runs it and builds
:class:`ShellOutput`.
A non-zero exit, a timeout and a sandbox that failed to start are errors that keep the output.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import anyio

from invokit.builtin.shell._checks import check, resolve_cwd
from invokit.builtin.shell._reaper import MARKER_VARIABLE, kill_process_tree
from invokit.builtin.shell._runner import KillTree, ProcessOutcome, run_process
from invokit.builtin.shell._sandbox import bwrap_argv, find_bwrap, read_bwrap_status
from invokit.builtin.shell._settings import BASE_ENV, SandboxMode, ShellSettings
from invokit.exceptions import ToolFailed

__all__ = ["BASE_ENV", "SandboxMode", "ShellOutput", "ShellSettings", "execute", "resolve_cwd"]

_SANDBOX_HOME = "/tmp"
_NO_SANDBOX_NOTE = (
    "bubblewrap is not available here, so the command ran without a sandbox: it could read "
    "and write anything the host user can, and reach the network"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellOutput:
    """What a command did."""

    command: list[str]
    """The argv that ran."""
    exit_code: int | None
    """The exit status (128 + N when killed by signal N); ``None`` when it timed out."""
    stdout: str
    """Standard output (UTF-8, undecodable bytes replaced), at most ``max_output`` bytes."""
    stderr: str
    """Standard error, likewise."""
    stdout_truncated: bool
    """Whether standard output was cut."""
    stderr_truncated: bool
    """Whether standard error was cut."""
    stdout_bytes: int
    """How many bytes the command wrote to standard output in all."""
    stderr_bytes: int
    """How many bytes it wrote to standard error in all."""
    timed_out: bool
    """Whether the timeout killed it."""
    duration: float
    """Seconds it ran."""
    sandbox: Literal["bubblewrap", "none"]
    """What isolated it."""
    containment: Literal["pid-namespace", "session-and-process-scan"]
    """How its process tree was held together for the final kill."""
    note: str | None = None
    """Anything the reader should know about how it ran (no sandbox available)."""


async def execute(settings: ShellSettings, command: str | Sequence[str], cwd: str) -> ShellOutput:
    """Check ``command`` against every guard, run it, and describe what it did.

    Raises:
        RetryWithFeedback: shell syntax in a string, or a missing working directory.
        AccessDenied: the allow rules or the refused flags say no, cwd leaves the root, or
            protected paths exist and there is no sandbox.
        ToolFailed: a sandbox is required and unavailable (``sandbox_unavailable``), the
            sandbox failed to start (``sandbox_failed``), the program exited non-zero
            (``nonzero_exit``) or timed out (``timeout``); the last two carry the output.
    """
    bwrap = None if settings.sandbox == "off" else await anyio.to_thread.run_sync(find_bwrap)
    checked = check(settings, command, cwd, bwrap=bwrap)
    argv, workdir, env = checked.argv, checked.workdir, checked.env
    resolved = checked.resolved
    run_argv = [resolved.executable, *argv[1:]]
    marker = secrets.token_hex(16)
    env[MARKER_VARIABLE] = marker

    def kill_tree(pid: int, alive: bool) -> None:
        kill_process_tree(pid, marker=marker, leader_alive=alive)

    if bwrap is not None:
        read_end, write_end = os.pipe()
        try:
            full_argv = bwrap_argv(
                bwrap,
                run_argv,
                root=settings.root,
                cwd=workdir,
                writable=settings.writable,
                network=settings.network,
                expose=settings.expose,
                protect=checked.mounts.bwrap_args(),
                status_fd=write_end,
            )
            env.update(HOME=_SANDBOX_HOME, TMPDIR=_SANDBOX_HOME)
            outcome = await _run(settings, full_argv, env, workdir, kill_tree, (write_end,))
        finally:
            os.close(write_end)
            status = read_bwrap_status(_read_all(read_end))
        if status.exit_code is None and not outcome.timed_out:
            detail = outcome.stderr.decode("utf-8", "replace").strip()
            raise ToolFailed(f"The sandbox failed to start: {detail}", kind="sandbox_failed")
        exit_code = status.exit_code
        return _report(argv, outcome, exit_code, sandbox="bubblewrap", note=None)
    with tempfile.TemporaryDirectory(prefix="invokit-shell-") as home:
        env.update(HOME=home, TMPDIR=home)
        outcome = await _run(settings, run_argv, env, workdir, kill_tree, ())
    exit_code = outcome.returncode
    if exit_code is not None and exit_code < 0:
        exit_code = 128 - exit_code
    note = _NO_SANDBOX_NOTE if settings.sandbox == "auto" else None
    return _report(argv, outcome, exit_code, sandbox="none", note=note)


async def _run(
    settings: ShellSettings,
    argv: list[str],
    env: dict[str, str],
    workdir: Path,
    kill_tree: KillTree,
    pass_fds: tuple[int, ...],
) -> ProcessOutcome:
    try:
        return await run_process(
            argv,
            env=env,
            cwd=str(workdir),
            time_limit=settings.timeout,
            max_output=settings.max_output,
            kill_tree=kill_tree,
            pass_fds=pass_fds,
        )
    except OSError as error:
        raise ToolFailed(f"Could not start {argv[0]!r}: {error.strerror or error}") from error


def _read_all(fd: int) -> str:
    # Every writer is gone by now (bubblewrap exited), so this read ends at EOF.
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _report(
    argv: Sequence[str],
    outcome: ProcessOutcome,
    exit_code: int | None,
    *,
    sandbox: Literal["bubblewrap", "none"],
    note: str | None,
) -> ShellOutput:
    output = ShellOutput(
        command=list(argv),
        exit_code=None if outcome.timed_out else exit_code,
        stdout=outcome.stdout.decode("utf-8", "replace"),
        stderr=outcome.stderr.decode("utf-8", "replace"),
        stdout_truncated=outcome.stdout_total > len(outcome.stdout),
        stderr_truncated=outcome.stderr_total > len(outcome.stderr),
        stdout_bytes=outcome.stdout_total,
        stderr_bytes=outcome.stderr_total,
        timed_out=outcome.timed_out,
        duration=round(outcome.duration, 3),
        sandbox=sandbox,
        containment="pid-namespace" if sandbox == "bubblewrap" else "session-and-process-scan",
        note=note,
    )
    shown = shlex.join(argv)
    if outcome.timed_out:
        raise ToolFailed(
            f"{shown!r} timed out after {outcome.duration:.1f}s; it and every process it started "
            f"were killed.{_streams(output)}",
            kind="timeout",
            data=asdict(output),
        )
    if exit_code != 0:
        raise ToolFailed(
            f"{shown!r} exited with code {exit_code}.{_streams(output)}",
            kind="nonzero_exit",
            data=asdict(output),
        )
    return output


def _streams(output: ShellOutput) -> str:
    """The output, in the error message too: the model may only read the message."""
    text = ""
    for name, value, cut, total in (
        ("stdout", output.stdout, output.stdout_truncated, output.stdout_bytes),
        ("stderr", output.stderr, output.stderr_truncated, output.stderr_bytes),
    ):
        if value:
            note = f" (cut: first {len(value.encode())} of {total} bytes)" if cut else ""
            text += f"\n--- {name}{note} ---\n{value.rstrip()}"
    return text
