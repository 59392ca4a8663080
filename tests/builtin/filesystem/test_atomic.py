"""Atomic writes: a cancelled or killed write leaves the old file and nothing else."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from invokit.builtin.filesystem import filesystem
from invokit.builtin.filesystem._atomic import TEMP_PREFIX, write_atomic
from invokit.builtin.filesystem._cancel import StopSignal
from tests.builtin.filesystem._trees import call

BIG = 64 << 20
OLD = b"old content\n"


def _open_temp_files(pid: int | str, directory: Path) -> list[str]:
    """Files a process has open in ``directory`` that have no name (O_TMPFILE) or a temp name."""
    found = []
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        if target.startswith(f"{directory}/") and (
            target.endswith("(deleted)") or TEMP_PREFIX in target
        ):
            found.append(target)
    return found


def _wait_for_temp(pid: int | str, directory: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not _open_temp_files(pid, directory):
        assert time.monotonic() < deadline, "the write never started"
        time.sleep(0.0005)


def _assert_untouched(target: Path) -> None:
    assert target.read_bytes() == OLD
    assert os.listdir(target.parent) == ["file.txt"]


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "root" / "file.txt"
    path.parent.mkdir()
    path.write_bytes(OLD)
    path.chmod(0o640)
    return path


def test_write_replaces_content_and_keeps_mode(target: Path) -> None:
    """The new content replaces the old; the permission bits of the old file are kept."""
    fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert write_atomic(fd, "file.txt", b"new\n", mode=0o640)
    finally:
        os.close(fd)
    assert target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(target.parent)) == ["file.txt"]


@pytest.mark.parametrize("nameless", [True, False], ids=["nameless", "named-temp"])
def test_stop_mid_write_keeps_old_file_and_leaves_nothing(target: Path, nameless: bool) -> None:
    """Stopping a write between chunks keeps the old content and removes the temporary file,
    with O_TMPFILE and with the named fallback."""
    stop = StopSignal()
    fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)

    def stop_when_started() -> None:
        _wait_for_temp("self", target.parent)
        stop.set()

    watcher = threading.Thread(target=stop_when_started)
    watcher.start()
    try:
        done = write_atomic(
            fd, "file.txt", b"n" * BIG, stop=stop, chunk_size=1 << 16, nameless=nameless
        )
    finally:
        watcher.join()
        os.close(fd)
    assert done is False
    _assert_untouched(target)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_cancelled_fs_write_keeps_old_file(target: Path, anyio_backend: str) -> None:
    """Cancelling the task running fs.write mid-write keeps the old file and leaves no
    temporary file behind."""
    fs = filesystem(target.parent)
    async with anyio.create_task_group() as group:
        group.start_soon(
            functools.partial(call, fs, "fs.write", path="file.txt", content="n" * BIG)
        )
        await anyio.to_thread.run_sync(_wait_for_temp, "self", target.parent)
        group.cancel_scope.cancel()
    _assert_untouched(target)
    assert _open_temp_files("self", target.parent) == []


_WRITER = """
import os, sys
from invokit.builtin.filesystem._atomic import write_atomic
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
write_atomic(fd, "file.txt", b"n" * (64 << 20), chunk_size=4096)
"""


def test_killed_writer_leaves_old_file_and_no_temp(target: Path) -> None:
    """A writer process killed mid-write (SIGKILL: no cleanup runs) leaves the old content and
    no temporary file: the new data was in a file that never had a name."""
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(target.parent)])
    try:
        _wait_for_temp(writer.pid, target.parent)
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    _assert_untouched(target)
