"""The PostgreSQL store raced by real processes and connections: one consumer wins, quotas
hold, and a decision from another connection wakes a waiter within milliseconds."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio
import psycopg
import pytest

from invokit.approvals import ApprovalDecision
from invokit.postgres import PostgresApprovalStore

from ..approvals.helpers import Clock, make_request

pytestmark = pytest.mark.anyio

RACER = """
import os, sys, time
import anyio
from invokit.postgres import PostgresApprovalStore
from invokit.exceptions import ApprovalError

url, job, ready, go, *args = sys.argv[1:]

async def main() -> None:
    store = PostgresApprovalStore(url, max_size=2)
    await store.list_pending()  # the pool is open before the start
    open(ready, "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit("never started")
        await anyio.sleep(0.001)
    if job == "consume":
        for approval_id in args:
            try:
                await store.consume(approval_id)
            except ApprovalError as exc:
                print(approval_id, "lost", type(exc).__name__, flush=True)
            else:
                print(approval_id, "won", flush=True)
    else:
        key, limit, tries = args[0], int(args[1]), int(args[2])
        for _ in range(tries):
            left = await store.count_call(key, limit=limit, window=None, now=time.time())
            print("recorded" if left is None else "refused", flush=True)
    await store.close()

anyio.run(main)
"""


def _race(tmp_path: Path, url: str, job: str, args: list[str], processes: int) -> list[str]:
    """Start ``processes`` racers, release them together, and return every line they print."""
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    go = tmp_path / "go"
    racers, readies = [], []
    for n in range(processes):
        ready = tmp_path / f"ready{n}"
        readies.append(ready)
        racers.append(
            subprocess.Popen(
                [sys.executable, str(script), url, job, str(ready), str(go), *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + 60
    while not all(ready.exists() for ready in readies):
        assert time.monotonic() < deadline, "the racers did not start"
        assert all(racer.poll() is None for racer in racers), racers[0].communicate()
        time.sleep(0.01)
    go.touch()
    lines: list[str] = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        lines.extend(out.splitlines())
    return lines


async def _approved(url: str, count: int) -> list[str]:
    store = PostgresApprovalStore(url)
    ids = []
    for n in range(count):
        request = make_request(Clock(time.time()), path=f"f{n}")
        await store.put(request)
        await store.resolve(request.id, ApprovalDecision.approve())
        ids.append(request.id)
    await store.close()
    return ids


@pytest.mark.slow
async def test_processes_racing_consume_one_wins_each(tmp_path: Path, postgres_url: str) -> None:
    """Four processes consume the same twenty approvals at once: each approval is used by
    exactly one of them, and the others are told it was used already."""
    ids = await _approved(postgres_url, 20)
    lines = _race(tmp_path, postgres_url, "consume", ids, processes=4)
    assert len(lines) == 80
    for approval_id in ids:
        outcomes = sorted(line.split(" ", 1)[1] for line in lines if line.startswith(approval_id))
        assert outcomes == ["lost ApprovalAlreadyUsed"] * 3 + ["won"]


@pytest.mark.slow
async def test_processes_racing_count_call_never_exceed_the_limit(
    tmp_path: Path, postgres_url: str
) -> None:
    """Four processes record 15 calls each under one key limited to 25: exactly 25 are
    recorded and the rest refused."""
    lines = _race(tmp_path, postgres_url, "count", ["quota:k", "25", "15"], processes=4)
    assert sorted(set(lines)) == ["recorded", "refused"]
    assert lines.count("recorded") == 25
    assert lines.count("refused") == 35


async def test_tasks_racing_count_call_with_a_window(postgres_url: str) -> None:
    """Forty tasks on one store, a limit of 7 within 60 seconds: 7 are recorded, and every
    refusal names the time the oldest recorded call leaves the window."""
    store = PostgresApprovalStore(postgres_url, max_size=8)
    now = time.time()
    answers: list[float | None] = []

    async def call() -> None:
        answers.append(await store.count_call("k", limit=7, window=60.0, now=now))

    async with anyio.create_task_group() as group:
        for _ in range(40):
            group.start_soon(call)
    await store.close()
    assert answers.count(None) == 7
    assert {answer for answer in answers if answer is not None} == {now + 60.0}


async def test_a_decision_from_another_connection_wakes_the_waiter(postgres_url: str) -> None:
    """A waiter in one store is woken by a resolve through another store (its own pool and
    connections), each of five times: its own timeout is an hour, the test's deadline a
    minute, so only the notification can end the wait. (How soon: bench_approvals.py.)"""
    waiting = PostgresApprovalStore(postgres_url)
    deciding = PostgresApprovalStore(postgres_url)
    for n in range(5):
        request = make_request(Clock(time.time()), path=f"w{n}")
        await deciding.put(request)
        woken: list[str] = []

        async def wait(approval_id: str = request.id, into: list[str] = woken) -> None:
            record = await waiting.wait_decided(approval_id, 3600.0)
            into.append(record.status)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.sleep(0.2)  # the waiter listens and has read the pending record
                await deciding.resolve(request.id, ApprovalDecision.approve())
        assert woken == ["approved"]
    await waiting.close()
    await deciding.close()


async def test_a_lost_listening_connection_does_not_hang_the_waiter(
    postgres_url: str,
) -> None:
    """The server ends the store's listening connection while a call waits: the waiter reads
    again, listens again, and the decision made afterwards still wakes it."""
    store = PostgresApprovalStore(postgres_url)
    deciding = PostgresApprovalStore(postgres_url)
    request = make_request(Clock(time.time()))
    await deciding.put(request)
    result: list[str] = []

    async def wait() -> None:
        result.append((await store.wait_decided(request.id, 3600.0)).status)

    with anyio.fail_after(60):  # only the decision can end an hour's wait within a minute
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                # Once the waiter listens (an event, not a sleep: a loaded machine may take a
                # while), end its listening connection.
                ended: list[tuple[bool]] = []
                with anyio.fail_after(30):
                    while not ended:
                        ended = admin.execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE query LIKE 'LISTEN %%' AND pid <> pg_backend_pid()"
                        ).fetchall()
                        await anyio.sleep(0.05)
            assert ended == [(True,)]
            await anyio.sleep(0.3)  # a decision before it listens again is read on reconnect
            await deciding.resolve(request.id, ApprovalDecision.deny("no"))
    assert result == ["denied"]
    await store.close()
    await deciding.close()
