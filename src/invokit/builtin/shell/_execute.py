"""One shell call from start to end: check the command, pick the containment, run, report.

:func:`execute` takes a command and a working directory through every guard of
:func:`~._checks.check` (syntax, working directory, allow rules, refused flags, sandbox
availability, protected paths) again before anything runs, then runs it and builds
:class:`ShellOutput`.
A non-zero exit, a timeout and a sandbox that failed to start are errors that keep the output.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import anyio

from invokit.builtin._surface_cache import SurfaceCache
from invokit.builtin.shell._checks import check, resolve_cwd
from invokit.builtin.shell._reaper import MARKER_VARIABLE, kill_process_tree
from invokit.builtin.shell._runner import KillTree, ProcessOutcome, run_process
from invokit.builtin.shell._sandbox import bwrap_argv, find_bwrap, probe_done, read_bwrap_status
from invokit.builtin.shell._scan import Scan, cached_scan, created_surfaces, scan
from invokit.builtin.shell._settings import BASE_ENV, SandboxMode, ShellSettings
from invokit.exceptions import RetryWithFeedback, ToolFailed
from invokit.permissions.internal import opted_in, surface_parts

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
    """Standard output (UTF-8, undecodable bytes replaced). When longer than ``max_output``
    bytes, its first and last ``max_output / 2`` bytes with a line between them that says how
    many bytes were dropped there."""
    stderr: str
    """Standard error, likewise."""
    stdout_truncated: bool
    """Whether standard output was cut (bytes dropped from its middle)."""
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
    stdout_dropped: int = 0
    """Bytes of standard output dropped from the middle (``stdout_bytes`` minus those kept)."""
    stderr_dropped: int = 0
    """Likewise for standard error."""
    note: str | None = None
    """Anything the reader should know about how it ran (no sandbox available)."""
    refused_surfaces: list[str] = field(default_factory=list)
    """Execution surfaces (root-relative) the command created where none existed, removed
    after it ran: the sandbox could not mount them read-only in advance."""


async def execute(
    settings: ShellSettings,
    command: str | Sequence[str],
    cwd: str,
    *,
    cache: SurfaceCache | None = None,
) -> ShellOutput:
    """Check ``command`` against every guard, run it, and describe what it did (``cache``:
    see :func:`~._checks.check`).

    Raises:
        RetryWithFeedback: shell syntax in a string, or a missing working directory.
        AccessDenied: the allow rules or the refused flags say no, cwd leaves the root, or
            protected paths exist and there is no sandbox.
        ToolFailed: a sandbox is required and unavailable (``sandbox_unavailable``), the
            sandbox failed to start (``sandbox_failed``), the program exited non-zero
            (``nonzero_exit``) or timed out (``timeout``); the last two carry the output.
    """
    if settings.sandbox == "off":
        bwrap = None
    else:  # the probe starts a sandbox: never on the event loop
        bwrap = find_bwrap() if probe_done() else await anyio.to_thread.run_sync(find_bwrap)
    checked = check(settings, command, cwd, bwrap=bwrap, cache=cache)
    argv, workdir, env = checked.argv, checked.workdir, checked.env
    resolved = checked.resolved
    run_argv = [resolved.executable, *argv[1:]]
    marker = secrets.token_hex(16)
    env[MARKER_VARIABLE] = marker

    def kill_tree(pid: int, alive: bool) -> None:
        kill_process_tree(pid, marker=marker, leader_alive=alive)

    if bwrap is not None:
        before = _surface_names(settings.root) if settings.writable else set()
        read_end, write_end = os.pipe()
        outcome: ProcessOutcome | None = None
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
            # bwrap_argv always asks for --unshare-pid and --die-with-parent: once bubblewrap
            # has exited, the namespace's init is gone and the kernel has killed everything in
            # it, so no scan of the process table is needed after a normal exit.
            outcome = await _run(
                settings, full_argv, env, workdir, kill_tree, (write_end,), reap_after_exit=False
            )
        finally:
            os.close(write_end)
            status = read_bwrap_status(_read_all(read_end))
            if outcome is None:
                # Cancelled (or not started): the sandbox is gone, and what the command made
                # before it was killed must go too before the cancellation goes on.
                with anyio.CancelScope(shield=True):
                    await _refuse_created(settings, checked.scanned, before)
        if status.exit_code is None and not outcome.timed_out:
            detail = outcome.stderr.decode("utf-8", "replace").strip()
            raise ToolFailed(f"The sandbox failed to start: {detail}", kind="sandbox_failed")
        exit_code = status.exit_code
        refused, venvs = await _refuse_created(settings, checked.scanned, before)
        note = _surface_note(settings, checked.surfaces, refused, venvs, outcome, exit_code)
        return _report(argv, outcome, exit_code, sandbox="bubblewrap", note=note, refused=refused)
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
    *,
    reap_after_exit: bool = True,
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
            reap_after_exit=reap_after_exit,
        )
    except OSError as error:
        if isinstance(error, FileNotFoundError) and not os.path.isdir(workdir):  # noqa: ASYNC240
            # The folder was checked, then another call removed or moved it before the command
            # started: the model's cwd is wrong now, not the tool broken.
            raise RetryWithFeedback(
                "cwd is not a directory under the root any more (it was removed or moved "
                "before the command started)"
            ) from error
        raise ToolFailed(f"Could not start {argv[0]!r}: {error.strerror or error}") from error


def _surface_names(root: Path) -> set[str]:
    """The names at the top of ``root`` that are execution surfaces."""
    try:
        names = os.listdir(root)
    except OSError:
        return set()
    return {name for name in names if surface_parts((name,)) is not None}


async def _refuse_created(
    settings: ShellSettings, scanned: Scan | None, before: set[str]
) -> tuple[list[str], list[str]]:
    """Remove the execution surfaces the command created (none existed there before it ran, so
    nothing of the person's is lost; not mounted, they were writable) unless opted in; return
    them, and the virtual environments it created (kept: nothing on the host has run them)."""
    if not settings.writable or scanned is None:
        return [], []
    root = str(settings.root)
    # Anything the command added, removed or renamed changed a folder's times (or, in a
    # folder changed too recently to go by them, its entries): the walk is done again
    # exactly when it must be, and skipped when no folder changed.
    after = cached_scan(root, bounded=False)
    if after is scanned:
        return [], []  # no folder changed since the walk before the command: nothing is new
    after = after or await _walk_again(root)
    top = sorted(_surface_names(settings.root) - before)
    refused: list[str] = []
    for path in [*top, *created_surfaces(scanned, after)]:
        if opted_in(path, settings.allow_surfaces):
            continue
        _remove(os.path.join(root, path))
        refused.append(path)
    return refused, [venv for venv in after.venvs if venv not in scanned.venvs]


async def _walk_again(root: str) -> Scan:
    """Walk the root again, off the event loop (a command may have made thousands of
    folders), and to the end even when the call is cancelled meanwhile (what the command
    created must go)."""
    with anyio.CancelScope(shield=True):
        walked = await anyio.to_thread.run_sync(lambda: scan(root, fresh=True, bounded=False))
    return walked  # noqa: RET504 - a return inside the scope reads as maybe skipped to mypy


def _remove(path: str) -> None:
    # rmtree never follows a link: a created link is removed, not what it points at.
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _surface_note(
    settings: ShellSettings,
    surfaces: Sequence[Path],
    refused: Sequence[str],
    venvs: Sequence[str],
    outcome: ProcessOutcome,
    exit_code: int | None,
) -> str | None:
    """What the reader should know about execution surfaces after a sandboxed run: one the
    command created (not there before, so not mounted read-only: removed), a virtual
    environment it created, or a failure that is the read-only mount refusing a write."""
    notes: list[str] = []
    if refused:
        notes.append(
            f"refused: the command created {', '.join(refused)}, an execution surface that git, "
            "an editor or an interpreter on the host would run or obey without asking; it was "
            "removed (it did not exist before the command). A person can opt a path in with "
            "allow_surfaces"
        )
    if venvs:
        shown = ", ".join(venv or "." for venv in venvs)
        notes.append(
            f"the command created the virtual environment {shown}: a person should review it "
            "before running its interpreter or activating it on the host"
        )
    failed = b"Read-only file system" in outcome.stderr or b"resource busy" in outcome.stderr
    if surfaces and exit_code not in (0, None) and failed:
        shown = ", ".join(os.path.relpath(path, settings.root) for path in surfaces)
        notes.append(
            f"the execution surfaces {shown} are read-only in the sandbox (git and editors "
            "run or obey them), so a command that writes them fails; a person can opt one in "
            "with allow_surfaces, and then each command asks"
        )
    return "; ".join(notes) or None


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
    refused: Sequence[str] = (),
) -> ShellOutput:
    output = ShellOutput(
        command=list(argv),
        exit_code=None if outcome.timed_out else exit_code,
        stdout=_text(outcome.stdout, outcome.stdout_head, outcome.stdout_total),
        stderr=_text(outcome.stderr, outcome.stderr_head, outcome.stderr_total),
        stdout_truncated=outcome.stdout_total > len(outcome.stdout),
        stderr_truncated=outcome.stderr_total > len(outcome.stderr),
        stdout_dropped=outcome.stdout_total - len(outcome.stdout),
        stderr_dropped=outcome.stderr_total - len(outcome.stderr),
        stdout_bytes=outcome.stdout_total,
        stderr_bytes=outcome.stderr_total,
        timed_out=outcome.timed_out,
        duration=round(outcome.duration, 3),
        sandbox=sandbox,
        containment="pid-namespace" if sandbox == "bubblewrap" else "session-and-process-scan",
        note=note,
        refused_surfaces=list(refused),
    )
    shown = shlex.join(argv)
    told = f"\nNote: {note}." if note and sandbox == "bubblewrap" else ""
    if outcome.timed_out:
        raise ToolFailed(
            f"{shown!r} timed out after {outcome.duration:.1f}s; it and every process it started "
            f"were killed.{_streams(output)}{told}",
            kind="timeout",
            data=asdict(output),
        )
    if exit_code != 0:
        raise ToolFailed(
            f"{shown!r} exited with code {exit_code}.{_streams(output)}{told}",
            kind="nonzero_exit",
            data=asdict(output),
        )
    return output


def _text(kept: bytes, head: int, total: int) -> str:
    """A stream as text: whole, or its head and tail around a line saying what was dropped."""
    dropped = total - len(kept)
    if dropped <= 0:
        return kept.decode("utf-8", "replace")
    start, end = _whole_characters(kept[:head]), _whole_characters(kept[head:], at_start=True)
    # The partial characters at the cut are counted as dropped too.
    dropped += len(kept) - len(start) - len(end)
    gap = f"\n[… {dropped} bytes dropped here; {total} bytes in all …]\n"
    return start.decode("utf-8", "replace") + gap + end.decode("utf-8", "replace")


def _whole_characters(data: bytes, *, at_start: bool = False) -> bytes:
    """``data`` without the partial UTF-8 character the cut left at its end (or start)."""
    if at_start:
        skip = 0
        while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
            skip += 1
        return data[skip:]
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data  # ASCII: nothing is cut
        if byte >= 0xC0:  # the lead byte of the last character: is it complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def _streams(output: ShellOutput) -> str:
    """The output, in the error message too: the model may only read the message."""
    text = ""
    for name, value, cut, total, dropped in (
        ("stdout", output.stdout, output.stdout_truncated, output.stdout_bytes,
         output.stdout_dropped),
        ("stderr", output.stderr, output.stderr_truncated, output.stderr_bytes,
         output.stderr_dropped),
    ):  # fmt: skip
        if value:
            note = f" (cut: {dropped} of {total} bytes dropped from the middle)" if cut else ""
            text += f"\n--- {name}{note} ---\n{value.rstrip()}"
    return text
