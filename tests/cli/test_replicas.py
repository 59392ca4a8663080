"""Three ``invokit serve --http`` replicas on one PostgreSQL database, behind a round-robin
client with several client identities: approvals decided from the real ``invokit approvals``
CLI, one replica killed with SIGKILL mid-run."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import approval_id_of, error_kind, make_root, ready_url
from tests.cli.test_client_identity import named_session

pytestmark = pytest.mark.anyio

WAIT = "3"
"""Each replica's --approval-wait: long enough for the CLI to wake a call, short enough that
calls which nobody approves come back as "approval required" and are retried."""


@contextmanager
def replica(
    root: Path, state: Path, url: str, n: int, wait: str | None = WAIT
) -> Iterator[tuple[str, Any]]:
    """One ``invokit serve --http`` on the shared database; its URL and process. ``wait`` is
    its ``--approval-wait`` (``None``: the served root's ``invokit.toml`` decides)."""
    log = root.parent / f"replica-{n}.log"
    waiting = [] if wait is None else ["--approval-wait", wait]
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                invokit_bin(),
                "serve",
                "--http",
                "--port",
                "0",
                "--json",
                "--no-ask",
                "--state",
                url,
                *waiting,
            ],
            cwd=root,
            env=subprocess_env(state),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield ready_url(process, log), process
        finally:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def running(url: str, tool: str) -> bool:
    """Whether a replica has recorded that it runs ``tool`` now (its journal)."""
    import psycopg

    with psycopg.connect(url) as connection:
        row = connection.execute(
            "SELECT count(*) FROM invokit_executions WHERE tool = %s AND ended_at IS NULL",
            (tool,),
        ).fetchone()
    return row is not None and int(row[0]) > 0


async def cli(state: Path, url: str, *args: str) -> Any:
    """The real ``invokit`` command on the shared database; its JSON output."""
    done = await anyio.run_process(
        [invokit_bin(), *args, "--state", url, "--json"], env=subprocess_env(state), check=False
    )
    assert done.returncode == 0, done.stderr.decode() + done.stdout.decode()
    return json.loads(done.stdout)


async def approve_unless_withdrawn(state: Path, url: str, approval_id: str) -> None:
    """``invokit approvals approve``, which may find the question withdrawn: one asked on a
    replica that died loses its lease and dies with it (its client's retry asks anew)."""
    done = await anyio.run_process(
        [invokit_bin(), "approvals", "approve", approval_id, "--state", url, "--json"],
        env=subprocess_env(state),
        check=False,
    )
    said = done.stderr.decode() + done.stdout.decode()
    assert done.returncode == 0 or "withdrawn: its caller went away" in said, said


class RoundRobin:
    """Sends each attempt to the next replica; a replica that refuses connections is skipped
    (the attempt goes to the next one), as a load balancer would."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self._next = itertools.count()
        self.attempts: list[tuple[str, str, int]] = []

    async def call(self, client: str, tool: str, arguments: dict[str, Any]) -> Any:
        """One logical call by ``client``: retried (same identity) until it has a final answer."""
        with anyio.fail_after(150):
            while True:
                index = next(self._next) % len(self.urls)
                try:
                    async with named_session(self.urls[index], client) as session:
                        result = await session.call_tool(tool, arguments)
                except Exception:  # the replica is gone: the next one takes the retry
                    self.attempts.append((client, "unreachable", index))
                    await anyio.sleep(0.05)
                    continue
                kind = error_kind(result) if result.is_error else "ok"
                self.attempts.append((client, kind, index))
                if kind != "approval_required":
                    return result
                await anyio.sleep(0.1)


async def test_replicas_share_approvals_and_report_a_dead_replica(
    tmp_path: Path, postgres_url: str
) -> None:
    """Every call ends exactly once, every decision and record is in the database, nothing ran
    twice, no identity finds another's approval, and the call that was running on the killed
    replica is reported as interrupted by its death (the questions it waited on die with it:
    their lease lapses, and the clients' retries ask anew)."""
    root, state = make_root(tmp_path)
    with ExitStack() as stack:
        started = [stack.enter_context(replica(root, state, postgres_url, n)) for n in range(3)]
        urls = [url for url, _ in started]
        tokens = {parse_qs(urlsplit(url).query)["token"][0] for url in urls}
        assert len(tokens) == 1, "every replica accepts the token kept in the database"

        # An approval survives a replica change for its own client, never for another.
        probe = {"path": "probe.txt", "content": "probe"}
        async with named_session(urls[1], "alice") as session:
            asked = await session.call_tool("fs.write", probe)
        approval = approval_id_of(asked)
        await cli(state, postgres_url, "approvals", "approve", approval)
        async with named_session(urls[2], "bob") as session:
            other = await session.call_tool("fs.write", probe)
        assert approval_id_of(other) != approval
        async with named_session(urls[0], "alice") as session:
            done = await session.call_tool("fs.write", probe)
        assert not done.is_error, done
        record = await cli(state, postgres_url, "approvals", "show", approval)
        assert record["status"] == "consumed"

        # A call running on replica 0 when it dies.
        doomed: list[Any] = []

        async def run_doomed() -> None:
            try:
                async with named_session(urls[0], "carol") as session:
                    doomed.append(await session.call_tool("demo.sleep", {"seconds": 60}))
            except Exception as exc:
                doomed.append(exc)

        balancer = RoundRobin(urls)
        clients = ["c0", "c1", "c2"]
        calls = [(c, i) for c in clients for i in range(3)]
        results: dict[tuple[str, int], Any] = {}
        approved: set[str] = set()

        async def logical(client: str, i: int) -> None:
            arguments = {"path": f"{client}-{i}.txt", "content": f"{client} wrote {i}"}
            results[(client, i)] = await balancer.call(client, "fs.write", arguments)

        async with anyio.create_task_group() as group:
            group.start_soon(run_doomed)
            for client, i in calls:
                group.start_soon(logical, client, i)
            # Kill replica 0 while calls wait for a person on it and demo.sleep runs there.
            deadline = anyio.current_time() + 60
            while True:
                pending = (await cli(state, postgres_url, "approvals", "list"))["pending"]
                asked_for = {p["arguments"]["path"] for p in pending}
                sleeping = running(postgres_url, "demo.sleep")
                if (
                    asked_for >= {f"{c}-{i}.txt" for c, i in calls}
                    and any(index == 0 for _, kind, index in balancer.attempts)
                    and sleeping
                ):
                    break
                assert anyio.current_time() < deadline, (asked_for, balancer.attempts, sleeping)
                await anyio.sleep(0.2)
            started[0][1].send_signal(signal.SIGKILL)
            started[0][1].wait(timeout=10)
            # Now a person approves, from the CLI, whatever waits, until every call is done.
            with anyio.fail_after(120):
                while len(results) < len(calls) or not doomed:
                    pending = (await cli(state, postgres_url, "approvals", "list"))["pending"]
                    for request in pending:
                        if request["id"] not in approved:
                            await approve_unless_withdrawn(state, postgres_url, request["id"])
                            approved.add(request["id"])
                    await anyio.sleep(0.2)

        assert isinstance(doomed[0], Exception), "the call on the killed replica never answered"
        for client, i in calls:
            result = results[(client, i)]
            assert not result.is_error, result
            assert (root / f"{client}-{i}.txt").read_text() == f"{client} wrote {i}"

        audit = [
            json.loads(line)
            for line in (
                await anyio.run_process(
                    [invokit_bin(), "audit", "--state", postgres_url, "--json", "--last", "0"],
                    env=subprocess_env(state),
                )
            )
            .stdout.decode()
            .splitlines()
        ]
        completed = [r for r in audit if r["type"] == "completed" and r["tool"] == "fs.write"]
        by_path: dict[str, list[dict[str, Any]]] = {}
        for r in completed:
            by_path.setdefault(r["data"]["arguments"]["path"], []).append(r)
        for client, i in calls:
            ran = by_path[f"{client}-{i}.txt"]
            assert len(ran) == 1, f"{client}-{i} ran {len(ran)} times"
            assert not ran[0]["data"]["is_error"]
        # Each client's calls ran under its own identity, and the identities differ.
        sessions = {
            client: {
                r["session_id"]
                for r in completed
                if r["data"]["arguments"]["path"].startswith(client)
            }
            for client in clients
        }
        assert all(len(s) == 1 for s in sessions.values()), sessions
        assert len(set.union(*sessions.values())) == len(clients)
        # Every decision made from the CLI is in the audit log, once.
        decided = [r["data"]["id"] for r in audit if r["type"] == "approval_resolved"]
        for approval_id in approved | {approval}:
            assert approval_id in decided, approval_id
        # The call that was running when its replica died is reported as such, not re-run.
        died = [
            r
            for r in audit
            if r["type"] == "interrupted" and r["data"].get("reason") == "replica died"
        ]
        assert [r["tool"] for r in died] == ["demo.sleep"]
        assert not [r for r in audit if r["type"] == "completed" and r["tool"] == "demo.sleep"]
        shown = await anyio.run_process(
            [invokit_bin(), "audit", "--state", postgres_url, "--last", "0"],
            env={**subprocess_env(state), "COLUMNS": "300"},
        )
        assert "interrupted: replica died" in shown.stdout.decode()
