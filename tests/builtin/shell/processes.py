"""Finding test processes on the host through /proc, to prove they are gone."""

from __future__ import annotations

import os
import secrets

import anyio


def unique_duration() -> str:
    """A ``sleep`` duration no other process on the host is using (its cmdline is a marker)."""
    return f"{100 + secrets.randbelow(900)}.{secrets.randbelow(10**6):06d}"


def sleepers(duration: str) -> dict[int, int]:
    """Live ``sleep <duration>`` processes on the host: pid → session id."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                argv = file.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[0] == b"Z":
            continue
        if len(argv) >= 2 and argv[0].endswith(b"sleep") and argv[1] == duration.encode():
            found[int(name)] = int(fields[3])
    return found


def is_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


async def wait_for_sleepers(duration: str, count: int, *, within: float = 10.0) -> dict[int, int]:
    """Poll until ``count`` sleepers with ``duration`` run; fail the test if they never do."""
    with anyio.fail_after(within):
        while len(found := sleepers(duration)) < count:  # noqa: ASYNC110 - /proc cannot notify
            await anyio.sleep(0.02)
    return found


async def wait_until_gone(pids: set[int], *, within: float = 5.0) -> set[int]:
    """Poll until none of ``pids`` is alive; the ones still alive after ``within`` seconds."""
    with anyio.move_on_after(within):
        while any(is_alive(pid) for pid in pids):  # noqa: ASYNC110 - /proc cannot notify
            await anyio.sleep(0.02)
    return {pid for pid in pids if is_alive(pid)}
