"""The real bubblewrap sandbox: what a sandboxed command can write, reach and outlive."""

from __future__ import annotations

import secrets
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from invokit.builtin.shell import shell
from invokit.builtin.shell._execute import BASE_ENV
from invokit.builtin.shell._sandbox import bwrap_argv, find_bwrap, read_bwrap_status
from invokit.exceptions import ToolFailed
from invokit.tools import Tool, ToolContext

from .processes import sleepers, unique_duration, wait_for_sleepers, wait_until_gone

needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")
PYTHON = shutil.which("python3", path=BASE_ENV["PATH"])


def _tool(root: Path, **options: Any) -> Tool:
    options.setdefault("allow", ["sh *", "python3 *", "cat *"])
    options.setdefault("sandbox", "required")
    found = shell(root=root, **options).get("shell")
    assert found is not None
    return found


async def _run(tool: Tool, command: list[str], cwd: str = ".") -> Any:
    return await tool.invoke({"command": command, "cwd": cwd}, ToolContext(call_id="t"))


async def _fail(tool: Tool, command: list[str]) -> ToolFailed:
    with pytest.raises(ToolFailed) as caught:
        await _run(tool, command)
    return caught.value


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections (the backlog completes them)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


# -- argv building ------------------------------------------------------------------------


def test_argv_isolates_by_default(tmp_path: Path) -> None:
    """The default sandbox unshares the network and PID namespace and binds the root writable."""
    argv = bwrap_argv("bwrap", ["/usr/bin/ls"], root=tmp_path, cwd=tmp_path, writable=True,
                      network=False)  # fmt: skip
    assert argv[0] == "bwrap"
    assert argv[-2:] == ["--", "/usr/bin/ls"]
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in argv
    bind = argv.index("--bind")
    assert argv[bind + 1 : bind + 3] == [str(tmp_path), str(tmp_path)]
    assert argv[argv.index("--tmpfs") : argv.index("--tmpfs") + 2] == ["--tmpfs", "/tmp"]


def test_argv_read_only_root_and_network(tmp_path: Path) -> None:
    """A read-only tool binds the root read-only; network=True keeps the host network."""
    argv = bwrap_argv("bwrap", ["x"], root=tmp_path, cwd=tmp_path, writable=False, network=True,
                      status_fd=7)  # fmt: skip
    assert "--bind" not in argv
    assert "--unshare-net" not in argv
    assert argv[argv.index("--json-status-fd") + 1] == "7"
    assert [str(tmp_path), str(tmp_path)] == argv[argv.index(str(tmp_path)) : argv.index(
        str(tmp_path)) + 2]  # fmt: skip


def test_status_parsing() -> None:
    """Bubblewrap's status lines give the sandbox pid and the command's exit code."""
    status = read_bwrap_status('{ "child-pid": 12, "pid-namespace": 4 }\n{ "exit-code": 3 }\n')
    assert (status.child_pid, status.exit_code) == (12, 3)
    failed = read_bwrap_status('{ "child-pid": 12 }\nbwrap: oops\n[1]\n')
    assert (failed.child_pid, failed.exit_code) == (12, None)


# -- the real sandbox ---------------------------------------------------------------------

pytestmark = [pytest.mark.anyio]


@needs_bwrap
async def test_cannot_write_outside_the_root(tmp_path: Path, root: Path) -> None:
    """Writes to a sibling folder, a prefix-sharing sibling and the system all fail."""
    outside = tmp_path / "outside"
    outside.mkdir()
    sibling = tmp_path / "root-sibling"
    sibling.mkdir()
    token = secrets.token_hex(6)
    targets = [outside / "f", sibling / "f", Path(f"/usr/local/invokit-{token}"),
               Path(f"/etc/invokit-{token}"), root / ".." / "outside" / "g"]  # fmt: skip
    script = 'for p in "$@"; do (echo x > "$p") 2>/dev/null && echo "wrote $p"; done; exit 0'
    result = await _run(_tool(root), ["sh", "-c", script, "sh", *map(str, targets)])
    assert result.sandbox == "bubblewrap"
    assert result.containment == "pid-namespace"
    assert "wrote" not in result.stdout
    assert not any(target.exists() for target in targets)


@needs_bwrap
async def test_no_capabilities_even_for_a_root_caller(root: Path) -> None:
    """The sandboxed command holds no capability, so it cannot remount the read-only system
    folders and write through them (an escape when bubblewrap keeps root's capabilities)."""
    token = secrets.token_hex(6)
    target = Path(f"/etc/invokit-remount-{token}")
    script = (
        "import ctypes, sys\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "remounted = libc.mount(b'none', b'/etc', None, 32 | 4096, None) == 0\n"
        "caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1]\n"
        "try:\n"
        f"    open('{target}', 'w').write('x')\n"
        "    wrote = True\n"
        "except OSError:\n"
        "    wrote = False\n"
        "print(remounted, caps, wrote)\n"
    )
    result = await _run(_tool(root), ["python3", "-c", script])
    remounted, caps, wrote = result.stdout.split()
    assert remounted == "False"
    assert int(caps, 16) == 0
    assert wrote == "False"
    assert not await anyio.Path(target).exists()


@needs_bwrap
async def test_writable_root_accepts_writes(root: Path) -> None:
    """Inside a writable root a command creates files that the host then sees."""
    (root / "sub").mkdir()
    result = await _run(_tool(root), ["sh", "-c", "echo hello > made.txt; pwd"], cwd="sub")
    assert (root / "sub" / "made.txt").read_text() == "hello\n"
    assert result.stdout.strip() == str(root / "sub")


@needs_bwrap
async def test_read_only_root_refuses_writes(root: Path) -> None:
    """With writable=False the root is mounted read-only: writes fail, reads work."""
    (root / "existing.txt").write_text("kept\n")
    tool = _tool(root, writable=False)
    assert tool.spec.annotations.destructive is False
    error = await _fail(tool, ["sh", "-c", "echo x > new.txt"])
    assert error.kind == "nonzero_exit"
    assert "Read-only file system" in error.data["stderr"]
    assert not (root / "new.txt").exists()
    assert (await _run(tool, ["cat", "existing.txt"])).stdout == "kept\n"


@needs_bwrap
async def test_tmp_is_private(root: Path) -> None:
    """The sandbox's /tmp is its own: host files there are invisible, its files never land."""
    token = secrets.token_hex(6)
    host_file = anyio.Path(f"/tmp/invokit-host-{token}")
    await host_file.write_text("secret")
    try:
        script = f"test -e {host_file} && echo visible; echo x > /tmp/invokit-sbx-{token}; ls /tmp"
        result = await _run(_tool(root), ["sh", "-c", script])
    finally:
        await host_file.unlink()
    assert "visible" not in result.stdout
    assert f"invokit-sbx-{token}" in result.stdout
    assert not await anyio.Path(f"/tmp/invokit-sbx-{token}").exists()


@needs_bwrap
@pytest.mark.skipif(PYTHON is None, reason="no system python3 to open a socket with")
async def test_network_is_unreachable(root: Path, listener: int) -> None:
    """Connecting to a server on the host's 127.0.0.1 fails in the sandbox, works with network."""
    code = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {listener}), timeout=3)\n"
        "except OSError as error:\n"
        "    print('failed', error)\n"
        "else:\n"
        "    print('connected')\n"
    )
    isolated = await _run(_tool(root), ["python3", "-c", code])
    assert isolated.stdout.startswith("failed")
    shared = await _run(_tool(root, network=True), ["python3", "-c", code])
    assert shared.stdout.strip() == "connected"


@needs_bwrap
async def test_timeout_kills_the_whole_tree(root: Path) -> None:
    """On timeout the command, a child, a setsid grandchild and a double-forked daemon all die."""
    duration = unique_duration()
    script = f"setsid sleep {duration} & (setsid sleep {duration} &); sleep {duration}"
    tool = _tool(root, timeout=1.5)
    errors: list[ToolFailed] = []

    async def call() -> None:
        errors.append(await _fail(tool, ["sh", "-c", script]))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        running = await wait_for_sleepers(duration, 3)
    # At least one sleeper left the command's session: the case a process-group kill misses.
    assert len(set(running.values())) >= 2
    assert errors[0].kind == "timeout"
    assert errors[0].data["timed_out"] is True
    assert errors[0].data["exit_code"] is None
    assert await wait_until_gone(set(running)) == set()


@needs_bwrap
async def test_cancellation_kills_the_whole_tree(root: Path) -> None:
    """Cancelling the call kills every process of the command, setsid or not, at once."""
    duration = unique_duration()
    script = f"setsid sleep {duration} & sleep {duration}"
    tool = _tool(root, timeout=60)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(_run, tool, ["sh", "-c", script])
            running = await wait_for_sleepers(duration, 2)
            group.cancel_scope.cancel()
    assert await wait_until_gone(set(running)) == set()


@needs_bwrap
async def test_background_process_does_not_outlive_the_command(root: Path) -> None:
    """A process left running in the background when the command exits is killed with it."""
    duration = unique_duration()
    tool = _tool(root)
    with anyio.fail_after(10):
        result = await _run(tool, ["sh", "-c", f"setsid sleep {duration} & echo started"])
    assert result.stdout == "started\n"
    assert sleepers(duration) == {}
