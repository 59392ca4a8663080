"""A question lives only as long as its caller: real SDK clients killed with SIGKILL over
HTTP and stdio, and a replica killed while its question waits, on SQLite and on PostgreSQL
with three ``invokit serve`` replicas. Nothing here waits on a timer: each step waits, with a
deadline of tens of seconds, for what the CLI reports."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env, trust_config
from tests.cli.serving import CONFIG, approval_id_of, http_server, ready_url
from tests.cli.test_client_identity import named_session
from tests.cli.test_replicas import replica

pytestmark = pytest.mark.anyio

LEASED = CONFIG + "\n[serve]\napproval_lease = 2\napproval_wait = 300\n"
"""Calls that nobody here can ask about wait (for ``invokit approvals``) far longer than any
test runs, holding a short lease on their question. The replicas here take their wait from
this file: with the replicas' usual short ``--approval-wait`` a loaded machine's first look at
``approvals list`` came after the wait had ended, the call had answered "approval required"
and released its lease, and the client killed then had no question left to withdraw."""


def leased_root(base: Path) -> tuple[Path, Path]:
    """A served root whose invokit.toml sets a short lease and a long wait."""
    root = base / "root"
    root.mkdir()
    (root / "invokit.toml").write_text(LEASED)
    trust_config(root / "invokit.toml", base / "state")
    return root, base / "state"


@contextmanager
def client(
    root: Path, state: Path, kind: str, url: str, path: str, mode: str = ""
) -> Iterator[Any]:
    """A real SDK client process asking to write ``path`` (``tests/cli/lease_client.py``)."""
    log = root.parent / f"client-{kind}{mode}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.cli.lease_client", kind, url, path, mode],
            cwd=root,
            env=subprocess_env(state),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


async def cli(state: Path, *args: str) -> tuple[int, str]:
    """The real ``invokit`` command; its exit status and output."""
    done = await anyio.run_process([invokit_bin(), *args], env=subprocess_env(state), check=False)
    return done.returncode, done.stdout.decode() + done.stderr.decode()


async def pending(state: Path, path: str, *store: str) -> str:
    """The id of the question asked for writing ``path``, once ``approvals list`` shows it."""
    with anyio.fail_after(60):
        while True:
            status, out = await cli(state, "approvals", "list", "--json", *store)
            assert status == 0, out
            for row in json.loads(out)["pending"]:
                if row["arguments"]["path"] == path:
                    return str(row["id"])
            await anyio.sleep(0.2)


async def asked(state: Path, path: str) -> str:
    """The id of the question asked for writing ``path``, once the audit log records it, in
    whatever state it is now: a question that may be withdrawn within seconds (its client gives
    up) can be gone from ``approvals list`` before a loaded machine's first look."""
    with anyio.fail_after(60):
        while True:
            status, out = await cli(state, "audit", "--json", "--last", "0")
            assert status == 0, out
            for line in out.splitlines():
                record = json.loads(line) if line.startswith("{") else {}
                data = record.get("data", {})
                if record.get("type") == "approval_requested" and (
                    data.get("arguments", {}).get("path") == path
                ):
                    return str(data["id"])
            await anyio.sleep(0.2)


async def withdrawn(state: Path, approval_id: str, *store: str) -> dict[str, Any]:
    """The record of ``approval_id`` once ``approvals show`` says it was withdrawn."""
    with anyio.fail_after(60):
        while True:
            status, out = await cli(state, "approvals", "show", approval_id, "--json", *store)
            assert status == 0, out
            row: dict[str, Any] = json.loads(out)
            if row["status"] != "pending":
                assert row["status"] == "denied", row
                assert row["decision"]["by"] == "executor", row
                return row
            await anyio.sleep(0.2)


async def refused(state: Path, approval_id: str, *store: str) -> None:
    """``invokit approvals approve`` of a withdrawn question fails and says why."""
    status, out = await cli(state, "approvals", "approve", approval_id, *store)
    assert status != 0, out
    assert "withdrawn" in out and "went away" in out, out


SIGNALS = [
    pytest.param(signal.SIGKILL, id="SIGKILL"),
    pytest.param(signal.SIGTERM, id="SIGTERM"),
]
"""How a client process is ended: killed outright, or told to stop (it dies of the signal's
default action, as a client without a handler for it does)."""


def end(proc: subprocess.Popen[bytes], how: signal.Signals) -> None:
    """End the client process ``proc`` with the signal ``how``, and reap it."""
    proc.send_signal(how)
    assert proc.wait() == -how  # it died of that signal, not by finishing


@pytest.mark.parametrize("how", SIGNALS)
async def test_a_killed_http_client_withdraws_its_question(
    tmp_path: Path, how: signal.Signals
) -> None:
    """An SDK client killed with SIGKILL or SIGTERM while its write waits for a person: the
    question is withdrawn, `invokit approvals approve` of it is refused, and nothing is
    written."""
    root, state = leased_root(tmp_path)
    with http_server(root, state) as (url, _), client(root, state, "http", url, "a.txt") as proc:
        approval = await pending(state, "a.txt")
        end(proc, how)
        record = await withdrawn(state, approval)
        assert "went away" in record["decision"]["reason"]
        await refused(state, approval)
        status, shown = await cli(state, "approvals", "show", approval)
        assert status == 0 and "withdrawn: its caller went away at" in shown, shown
        status, audit = await cli(state, "audit", "--json")
        assert any(
            json.loads(line)["data"].get("verdict") == "withdrawn"
            for line in audit.splitlines()
            if approval in line
        ), audit
    assert not (root / "a.txt").exists()


async def test_a_client_request_timeout_withdraws_its_question(tmp_path: Path) -> None:
    """A client whose own request timeout gives up on the call (and stays connected): the
    question is withdrawn and cannot be approved."""
    root, state = leased_root(tmp_path)
    with (
        http_server(root, state) as (url, _),
        client(root, state, "http", url, "t.txt", "timeout"),
    ):
        approval = await asked(state, "t.txt")
        await withdrawn(state, approval)
        await refused(state, approval)
    assert not (root / "t.txt").exists()


async def leased_now(state: Path, approval_id: str) -> None:
    """Once the server waiting for ``approval_id`` holds its lease in the SQLite store."""
    import sqlite3

    with anyio.fail_after(60):
        while True:
            with sqlite3.connect(state / "approvals.sqlite3") as conn:
                (until,) = conn.execute(
                    "SELECT lease_until FROM approvals WHERE id = ?", (approval_id,)
                ).fetchone()
            if until is not None:
                return
            await anyio.sleep(0.2)


async def test_a_killed_stateless_client_withdraws_the_question_its_retry_waits_on(
    tmp_path: Path,
) -> None:
    """Over the stateless protocol a client's person dismisses the question, and the
    client's retry waits for `invokit approvals`; the client is killed with SIGKILL while it
    waits: the question is withdrawn and cannot be approved."""
    root, state = leased_root(tmp_path)
    with (
        http_server(root, state) as (url, _),
        client(root, state, "http", url, "s.txt", "dismiss") as proc,
    ):
        approval = await pending(state, "s.txt")
        await leased_now(state, approval)  # the retry waits, holding the question's lease
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        await withdrawn(state, approval)
        await refused(state, approval)
    assert "dismissed" in (tmp_path / "client-httpdismiss.log").read_text()
    assert not (root / "s.txt").exists()


@contextmanager
def killable_server(root: Path, state: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``invokit serve --http`` on ``root`` (no one to ask here); its URL and its process."""
    log = root.parent / "serve-killable.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [invokit_bin(), "serve", "--http", "--port", "0", "--json", "--no-ask"],
            cwd=root,
            env=subprocess_env(state),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield ready_url(process, log), process
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()


async def test_a_server_killed_while_a_stateless_retry_waits_leaves_a_lease_that_runs_out(
    tmp_path: Path,
) -> None:
    """The server holding a stateless retry that waits for `invokit approvals` is killed with
    SIGKILL: nobody renews the question's lease, so it counts as withdrawn once the lease runs
    out, and `invokit approvals approve` refuses it."""
    root, state = leased_root(tmp_path)
    with (
        killable_server(root, state) as (url, server),
        client(root, state, "http", url, "k.txt", "dismiss"),
    ):
        approval = await pending(state, "k.txt")
        await leased_now(state, approval)  # the retry waits, holding the question's lease
        server.send_signal(signal.SIGKILL)
        server.wait()
        record = await withdrawn(state, approval)
        assert "stopped renewing its lease" in record["decision"]["reason"], record
        await refused(state, approval)
    assert not (root / "k.txt").exists()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_process_killed_right_after_storing_its_question_leaves_it_leased(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """A process whose waiting call stored its question and was killed with SIGKILL before
    anything else happened (no renewal): the question was born leased, so the lease runs out
    and the question is withdrawn, and `invokit approvals approve` refuses it."""
    state = tmp_path / "state"
    state.mkdir()
    if kind == "postgres":
        where = str(request.getfixturevalue("postgres_url"))
        store: tuple[str, ...] = ("--state", where)
    else:
        where, store = str(state / "approvals.sqlite3"), ()
    proc = await anyio.open_process(
        [sys.executable, "-m", "tests.cli.stalled_asker", where],
        cwd=tmp_path,
        env=subprocess_env(state),
        stderr=subprocess.STDOUT,
    )
    said = b""
    try:
        assert proc.stdout is not None
        with anyio.fail_after(60):
            while b"\n" not in said.partition(b"stored ")[2]:
                said += await proc.stdout.receive()  # ends the test if it exits instead
    finally:
        proc.kill()
        await proc.wait()
    approval = said.decode().split("stored ", 1)[1].split()[0]
    record = await withdrawn(state, approval, *store)
    assert "lease" in record["decision"]["reason"], record
    await refused(state, approval, *store)


async def test_a_question_nobody_waits_for_keeps_no_lease(tmp_path: Path) -> None:
    """A call told "approval required" at once leaves its question without a lease: it waits
    for `invokit approvals approve` until it expires, and the model's next call finds it."""
    import sqlite3

    root, state = leased_root(tmp_path)
    with http_server(root, state, "--approval-wait", "0") as (url, _):
        async with named_session(url, "erin") as session:
            asked = await session.call_tool("fs.write", {"path": "e.txt", "content": "e"})
        approval = approval_id_of(asked)
        with sqlite3.connect(state / "approvals.sqlite3") as conn:
            row = conn.execute(
                "SELECT status, lease_until FROM approvals WHERE id = ?", (approval,)
            ).fetchone()
        assert row == ("pending", None)
        status, out = await cli(state, "approvals", "approve", approval)
        assert status == 0, out
        async with named_session(url, "erin") as session:
            done = await session.call_tool("fs.write", {"path": "e.txt", "content": "e"})
        assert not done.is_error, done
    assert (root / "e.txt").read_text() == "e"


@pytest.mark.parametrize("how", SIGNALS)
async def test_a_killed_stdio_client_withdraws_its_question(
    tmp_path: Path, how: signal.Signals
) -> None:
    """A desktop-style client that launched `invokit serve --stdio`, killed with SIGKILL or
    SIGTERM while its write waits: the server sees its input end and withdraws the
    question."""
    root, state = leased_root(tmp_path)
    with client(root, state, "stdio", "-", "b.txt") as proc:
        approval = await pending(state, "b.txt")
        end(proc, how)
        await withdrawn(state, approval)
        await refused(state, approval)
    assert not (root / "b.txt").exists()


async def test_a_client_ended_with_sigterm_withdraws_its_question_on_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    """A replica on PostgreSQL: its SDK client ended with SIGTERM while its write waits; the
    CLI on the database sees the question withdrawn and cannot approve it, saying why."""
    root, state = leased_root(tmp_path)
    store = ("--state", postgres_url)
    with (
        replica(root, state, postgres_url, 0, wait=None) as (url, _),
        client(root, state, "http", url, "p.txt") as proc,
    ):
        approval = await pending(state, "p.txt", *store)
        end(proc, signal.SIGTERM)
        record = await withdrawn(state, approval, *store)
        assert "went away" in record["decision"]["reason"], record
        await refused(state, approval, *store)
    assert not (root / "p.txt").exists()


async def test_questions_die_with_their_callers_across_replicas(
    tmp_path: Path, postgres_url: str
) -> None:
    """Three replicas on PostgreSQL: a client killed with SIGKILL withdraws its question on
    the replica it called, and a replica killed while its question waits leaves a lease that
    runs out; either way every other process sees the question withdrawn and cannot approve
    it, and the audit log records the withdrawal."""
    root, state = leased_root(tmp_path)
    store = ("--state", postgres_url)
    with ExitStack() as stack:
        replicas = [
            stack.enter_context(replica(root, state, postgres_url, n, wait=None)) for n in range(3)
        ]
        urls = [url for url, _ in replicas]

        proc = stack.enter_context(client(root, state, "http", urls[1], "c.txt"))
        killed_client = await pending(state, "c.txt", *store)
        end(proc, signal.SIGKILL)  # killed while its call waits, not after it was answered
        await withdrawn(state, killed_client, *store)
        await refused(state, killed_client, *store)

        answers: list[Any] = []

        async def ask_on_replica_0() -> None:
            try:
                async with named_session(urls[0], "dora") as session:
                    answers.append(
                        await session.call_tool("fs.write", {"path": "d.txt", "content": "d"})
                    )
            except Exception as exc:  # the replica died under the call
                answers.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(ask_on_replica_0)
            orphan = await pending(state, "d.txt", *store)
            assert not answers  # the call still waits when its replica dies
            replicas[0][1].send_signal(signal.SIGKILL)
            replicas[0][1].wait()
            record = await withdrawn(state, orphan, *store)
            assert "lease" in record["decision"]["reason"], record
            await refused(state, orphan, *store)
        assert isinstance(answers[0], Exception)

        status, out = await cli(state, "audit", "--json", *store)
        assert status == 0, out
    assert not (root / "c.txt").exists() and not (root / "d.txt").exists()
    withdrawals = [
        json.loads(line)
        for line in out.splitlines()
        if line.startswith("{") and orphan in line and "withdrawn" in line
    ]
    assert len(withdrawals) == 1, out  # recorded once, by one of the live replicas
