"""Approvals across worker processes: PostgreSQL against SQLite on one machine.

Run: ``.venv/bin/python benchmarks/bench_approvals.py`` (``--quick``: shorter rounds;
``--url postgresql://...`` uses that database instead of a temporary cluster). Needs the
``postgres`` extra and Debian's ``postgresql`` server binaries (as the tests do).

Two figures, for 1, 4 and 16 worker processes sharing one store (each process its own store
object, as replicas have):

- **decided and consumed per second**: each worker loops ``put`` → ``resolve`` (approve) →
  ``consume`` on fresh requests; the sum over workers of full cycles per second.
- **wake-up latency**: each worker puts a request, waits on it with ``wait_decided`` through
  one store object, and approves it through another (another connection); the time from the
  start of ``resolve`` to the waiter waking, p50 and p99. PostgreSQL wakes by LISTEN/NOTIFY;
  SQLite cannot tell another connection, so its ``wait_decided`` reads the record every 50 ms.

The two backends run interleaved, per worker count, so machine noise hits them alike.
Figures are in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _store(backend: str, where: str) -> Any:
    if backend == "postgresql":
        from invokit.postgres import PostgresApprovalStore

        return PostgresApprovalStore(where, max_size=2)
    from invokit.approvals import SqliteApprovalStore

    return SqliteApprovalStore(Path(where) / "approvals.sqlite3")


def _request(n: int, worker: int) -> Any:
    from invokit._calls import ToolCall
    from invokit.approvals import ApprovalRequest

    now = time.time()
    args = {"path": f"w{worker}-{n}.txt"}
    return ApprovalRequest(
        id=f"apr_bench_{worker}_{n}_{time.monotonic_ns()}",
        call=ToolCall(id=f"c{n}", name="fs.write", arguments=args),
        tool="fs.write",
        spec_fingerprint="bench",
        arguments=args,
        arguments_hash=f"h{worker}-{n}",
        session_id=f"s{worker}",
        project="/bench",
        created_at=now,
        expires_at=now + 3600,
    )


async def _cycles(backend: str, where: str, worker: int, seconds: float) -> int:
    from invokit.approvals import ApprovalDecision

    store = _store(backend, where)
    approve = ApprovalDecision.approve("once", by="bench", channel="api")
    done = 0
    try:
        await store.list_pending()  # connect and migrate outside the timed part
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            request = _request(done, worker)
            await store.put(request)
            await store.resolve(request.id, approve)
            await store.consume(request.id)
            done += 1
    finally:
        await store.close()
    return done


async def _wakeups(backend: str, where: str, worker: int, seconds: float) -> list[float]:
    from invokit.approvals import ApprovalDecision

    waiting, deciding = _store(backend, where), _store(backend, where)
    approve = ApprovalDecision.approve("once", by="bench", channel="api")
    latencies: list[float] = []
    try:
        await waiting.list_pending()
        await deciding.list_pending()
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            request = _request(n, worker)
            n += 1
            await waiting.put(request)
            woke: list[float] = []

            async def wait(approval_id: str = request.id, into: list[float] = woke) -> None:
                await waiting.wait_decided(approval_id, 10.0)
                into.append(time.perf_counter())

            async with anyio.create_task_group() as group:
                group.start_soon(wait)
                await anyio.sleep(0.02)  # the waiter is listening (or polling) by now
                started = time.perf_counter()
                await deciding.resolve(request.id, approve)
            latencies.append(woke[0] - started)
    finally:
        await waiting.close()
        await deciding.close()
    return latencies


def _run(job: tuple[str, str, str, int, float]) -> Any:
    measure, backend, where, worker, seconds = job
    target = _cycles if measure == "cycles" else _wakeups
    return anyio.run(target, backend, where, worker, seconds)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short rounds (a smoke run)")
    parser.add_argument("--url", help="a PostgreSQL database to use (default: a temporary one)")
    options = parser.parse_args()
    seconds = 1.0 if options.quick else 4.0
    stop = None
    url = options.url
    if url is None:
        from tests._postgres import _start

        started = _start()
        if isinstance(started, str):
            raise SystemExit(f"needs PostgreSQL: {started}")
        server, bindir, user = started
        url = server.url(server.create_database())

        def stop() -> None:
            from tests._postgres import _run as run_as

            data = server.socket_dir / "data"
            run_as([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], user)

    folder = tempfile.mkdtemp(prefix="bench-approvals-")
    where = {"postgresql": url, "sqlite": folder}
    rows = []
    try:
        for workers in (1, 4, 16):
            with ProcessPoolExecutor(workers) as pool:
                for backend in ("postgresql", "sqlite"):
                    jobs = [("cycles", backend, where[backend], w, seconds) for w in range(workers)]
                    cycles = sum(pool.map(_run, jobs))
                    jobs = [
                        ("wakeups", backend, where[backend], w, seconds) for w in range(workers)
                    ]
                    latencies = [x for part in pool.map(_run, jobs) for x in part]
                    rows.append(
                        (
                            backend,
                            workers,
                            cycles / seconds,
                            statistics.median(latencies) * 1000,
                            _percentile(latencies, 0.99) * 1000,
                            len(latencies),
                        )
                    )
                    print(
                        f"{backend:<10} workers={workers:<2} decided+consumed/s="
                        f"{cycles / seconds:8.0f}  wake p50={rows[-1][3]:6.1f} ms "
                        f"p99={rows[-1][4]:6.1f} ms  (n={len(latencies)})",
                        flush=True,
                    )
    finally:
        if stop is not None:
            stop()
    print()
    print("| store | workers | decided + consumed / s | wake-up p50 | wake-up p99 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for backend, workers, rate, p50, p99, _ in rows:
        print(f"| {backend} | {workers} | {rate:.0f} | {p50:.1f} ms | {p99:.1f} ms |")


if __name__ == "__main__":
    main()
