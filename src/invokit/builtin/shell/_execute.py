"""One shell call from start to end: check the command, pick the containment, run, report.

:class:`ShellSettings` is the configuration of one shell tool; :func:`execute` takes a command
and a working directory through every guard (syntax, working directory, allow rules, refused
flags, sandbox availability) before anything runs, then runs it and builds :class:`ShellOutput`.
A non-zero exit, a timeout and a sandbox that failed to start are errors that keep the output.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

import anyio

from invokit.builtin.shell._command import parse_command
from invokit.builtin.shell._flags import find_refusal
from invokit.builtin.shell._reaper import MARKER_VARIABLE, kill_process_tree
from invokit.builtin.shell._rules import AllowList, Resolved
from invokit.builtin.shell._runner import KillTree, ProcessOutcome, run_process
from invokit.builtin.shell._sandbox import SYSTEM_PATHS, bwrap_argv, find_bwrap, read_bwrap_status
from invokit.exceptions import AccessDenied, RetryWithFeedback, ToolFailed

__all__ = ["BASE_ENV", "SandboxMode", "ShellOutput", "ShellSettings", "execute", "resolve_cwd"]

SandboxMode: TypeAlias = Literal["auto", "required", "off"]

BASE_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}
"""The environment every command starts from; nothing else of the host's is passed unless asked.

``HOME`` and ``TMPDIR`` are set per run to a private, empty directory.
"""

_SANDBOX_HOME = "/tmp"
_NO_SANDBOX_NOTE = (
    "bubblewrap is not available here, so the command ran without a sandbox: it could read "
    "and write anything the host user can, and reach the network"
)


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellSettings:
    """The configuration of one shell tool."""

    allow: AllowList
    """The allow rules."""
    root: Path
    """The folder commands run in (resolved)."""
    sandbox: SandboxMode = "auto"
    """``auto``: bubblewrap when it works here; ``required``: refuse without it; ``off``."""
    timeout: float = 30.0
    """Seconds before the command's whole process tree is killed."""
    max_output: int = 100_000
    """Bytes kept of each of stdout and stderr."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for every command (over :data:`BASE_ENV`)."""
    pass_env: tuple[str, ...] = ()
    """Names of host variables copied into the command's environment when set."""
    network: bool = False
    """Whether sandboxed commands may use the network."""
    writable: bool = True
    """Whether sandboxed commands may write inside the root."""
    expose: tuple[Path, ...] = ()
    """More host paths shown read-only inside the sandbox."""

    def environment(self) -> dict[str, str]:
        """The variables a command gets (before the per-run ``HOME`` and ``TMPDIR``)."""
        passed = {name: os.environ[name] for name in self.pass_env if name in os.environ}
        return {**BASE_ENV, **passed, **self.env}


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


def resolve_cwd(root: Path, cwd: str) -> Path:
    """The directory ``cwd`` (relative to ``root``) names, refused if it leads outside.

    Symlinks are resolved and the result must still be inside ``root``, so a link pointing out
    of the root cannot be used as a working directory.

    Raises:
        AccessDenied: ``cwd`` is absolute, holds a NUL byte, or resolves outside the root.
        RetryWithFeedback: ``cwd`` is not an existing directory.
    """
    if "\0" in cwd or os.path.isabs(cwd) or cwd.startswith("~"):
        raise AccessDenied(f"cwd {cwd!r} must be a path relative to the root", data={"cwd": cwd})
    resolved = Path(os.path.realpath(root / cwd))
    if resolved != root and root not in resolved.parents:
        raise AccessDenied(f"cwd {cwd!r} leads outside the root", data={"cwd": cwd})
    if not resolved.is_dir():
        raise RetryWithFeedback(f"cwd {cwd!r} is not a directory under the root")
    return resolved


async def execute(settings: ShellSettings, command: str | Sequence[str], cwd: str) -> ShellOutput:
    """Check ``command`` against every guard, run it, and describe what it did.

    Raises:
        RetryWithFeedback: shell syntax in a string, or a missing working directory.
        AccessDenied: the allow rules or the refused flags say no, or cwd leaves the root.
        ToolFailed: a sandbox is required and unavailable (``sandbox_unavailable``), the
            sandbox failed to start (``sandbox_failed``), the program exited non-zero
            (``nonzero_exit``) or timed out (``timeout``); the last two carry the output.
    """
    argv = parse_command(command)
    workdir = resolve_cwd(settings.root, cwd)
    env = settings.environment()
    resolved = settings.allow.check(argv, search_path=env["PATH"], root=settings.root, cwd=workdir)
    refusal = find_refusal(argv)
    if refusal is not None:
        raise AccessDenied(
            f"{refusal.program}: {refusal.argument!r} is refused: it {refusal.reason}.",
            data={"argv": list(argv), "argument": refusal.argument, "reason": refusal.reason},
        )
    bwrap = None if settings.sandbox == "off" else await anyio.to_thread.run_sync(find_bwrap)
    if bwrap is None and settings.sandbox == "required":
        raise ToolFailed(
            "This shell tool requires a sandbox and bubblewrap (bwrap) is not available; "
            "install the 'bubblewrap' package.",
            kind="sandbox_unavailable",
        )
    run_argv = [resolved.executable, *argv[1:]]
    marker = secrets.token_hex(16)
    env[MARKER_VARIABLE] = marker

    def kill_tree(pid: int, alive: bool) -> None:
        kill_process_tree(pid, marker=marker, leader_alive=alive)

    if bwrap is not None:
        _check_visible(settings, resolved)
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


def _check_visible(settings: ShellSettings, resolved: Resolved) -> None:
    """Refuse early a program the sandbox would not show, with the option that fixes it."""
    places = [Path(path) for path in SYSTEM_PATHS] + [settings.root, *settings.expose]
    real = Path(resolved.real_path)
    if not any(real == place or place in real.parents for place in places):
        raise ToolFailed(
            f"{resolved.executable} lives outside the folders the sandbox shows; add its folder "
            "to the shell tool's expose=[...] option.",
            kind="sandbox_failed",
        )


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
